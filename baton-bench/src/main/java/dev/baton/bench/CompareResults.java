package dev.baton.bench;

import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Everything one {@code compare} run measured, for {@link CompareReport}. */
final class CompareResults {
    Instant startedAt;
    String command;
    String mode;
    boolean embedded;
    String serverVersion;
    Map<String, String> settings;
    Map<String, String> machine;
    String loadBefore;
    String loadAfter;
    double totalSeconds;
    final Map<String, String> systemSettings = new LinkedHashMap<>();
    final Map<String, String> versions = new LinkedHashMap<>();
    final List<Throughput> throughput = new ArrayList<>();
    final List<Latency> latency = new ArrayList<>();
    final List<Idle> idle = new ArrayList<>();
    final List<Growth> growth = new ArrayList<>();
    final List<Failover> failover = new ArrayList<>();
    final List<String> notes = new ArrayList<>();

    /** A pre-enqueued backlog drained by {@code nodes} nodes. */
    record Throughput(
            String system,
            int nodes,
            int jobs,
            double enqueueRate,
            double seconds,
            long done,
            double rate,
            boolean capped,
            double claimBatch,
            double claimMs,
            long left) {}

    /** Enqueue-to-start latency of probe jobs, idle or under a background load. */
    record Latency(String system, String mode, int probes, int started, double p50, double p99, double max) {}

    /** Statements per second of one idle node, client-side count and server transactions. */
    record Idle(String system, double seconds, double statementsPerSecond, double serverTxPerSecond, String top) {}

    /** Throughput and claim latency of one node with a given backlog. */
    record Growth(
            String system,
            String backlog,
            long pending,
            long finished,
            int sample,
            double rate,
            double claimMs,
            String claimStatement) {}

    /** Time to the next run elsewhere (seconds), with the settings it ran with. */
    record Failover(String system, String kind, double seconds, String settings, String note) {}

    double rate(String system, int nodes) {
        for (Throughput t : throughput) {
            if (t.system().equals(system) && t.nodes() == nodes) {
                return t.rate();
            }
        }
        return Double.NaN;
    }

    double bestRate(String system) {
        double best = Double.NaN;
        for (Throughput t : throughput) {
            if (t.system().equals(system) && (Double.isNaN(best) || t.rate() > best)) {
                best = t.rate();
            }
        }
        return best;
    }
}
