package dev.baton.bench;

import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** Everything one run measured; rendered by {@link Report}. */
final class Results {
    Instant startedAt;
    String command;
    boolean embedded;
    String serverVersion;
    Map<String, String> machine;
    Map<String, String> settings;
    double totalSeconds;

    Latency latency;
    Idle idle;
    EndToEnd e2e;
    final List<Ceiling> ceilings = new ArrayList<>();
    final List<String> notes = new ArrayList<>();
    /** The most CPU that processes other than this JVM and the embedded server used during a measurement. */
    double maxOtherCores = Double.NaN;

    String maxOtherWhere;

    void other(String where, Machine.Cpu before, Machine.Cpu after) {
        double o = after.otherCores(before);
        if (!Double.isNaN(o) && (Double.isNaN(maxOtherCores) || o > maxOtherCores)) {
            maxOtherCores = o;
            maxOtherWhere = where;
        }
    }

    /** Phase 2. All times in milliseconds. */
    static final class Latency {
        int jobs;
        int warmup;
        int gapMs;
        /** --latency-enqueue: own, framework or framework-inside. */
        String enqueueIn;

        int concurrency;
        boolean listening;
        int timedOut;
        double p50;
        double p90;
        double p99;
        double max;
        double mean;
        double enqueueP50;
        double enqueueP99;
        int over100ms;
        String cpu;
        List<StatementCounter.Snapshot> statements;
    }

    /** Phase 4. */
    static final class Idle {
        int seconds;
        int settleSeconds;
        boolean listening;
        boolean leader;
        long serverTransactions;
        double serverPerSecond;
        long batonStatements;
        double batonPerSecond;
        List<StatementCounter.Snapshot> statements;
        String cpu;
    }

    /** Phase 1. */
    static final class EndToEnd {
        int jobs;
        int nodes;
        int concurrency;
        int poolSize;
        int batch;
        double enqueueSeconds;
        double enqueueRate;
        double runSeconds;
        double rate;
        double steadyRate;
        long completed;
        boolean capped;
        String cpu;
        double effectiveClaimBatch;
        double claimRowsPerCall;
        double completeRowsPerCall;
        List<StatementCounter.Snapshot> statements;
        long maxRunningRows;
        long handlerRuns;
        long attempts;
        long jobsAttemptedMoreThanOnce;
        long stalls;
        Map<String, Long> warnings = Map.of();
        List<Map.Entry<String, Double>> threadCores = List.of();
        long polls;
        double pollAvgMs;
        long contextSwitches = -1;
        /** CPU microseconds per job over the run: this JVM, PostgreSQL (NaN if unknown). */
        double jvmMicrosPerJob = Double.NaN;

        double pgMicrosPerJob = Double.NaN;
    }

    /** Phase 3, one batch size. */
    static final class Ceiling {
        int batch;
        int threads;
        int jobs;
        boolean baton;
        double enqueueRate;
        double seconds;
        double rate;
        long completed;
        boolean capped;
        long claims;
        double claimAvgMs;
        long completes;
        double completeAvgMs;
        String cpu;
        long polls;
        double pollAvgMs;
        double jvmMicrosPerJob = Double.NaN;
        double pgMicrosPerJob = Double.NaN;
    }

    /** CPU µs per job {JVM, PostgreSQL} between two samples. */
    static double[] microsPerJob(Machine.Cpu before, Machine.Cpu after, long jobs) {
        double[] c = after.cores(before);
        if (c == null || jobs <= 0) {
            return new double[] {Double.NaN, Double.NaN};
        }
        double secs = (after.wallNanos() - before.wallNanos()) / 1e9;
        return new double[] {c[1] * secs * 1e6 / jobs, c[2] * secs * 1e6 / jobs};
    }

    Ceiling ceilingFor(int batch) {
        for (Ceiling c : ceilings) {
            if (c.batch == batch) {
                return c;
            }
        }
        return null;
    }
}
