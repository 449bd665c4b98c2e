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
    /** shared, or split with the CPUs each side was pinned to. */
    String cpuLayout = "shared";

    final List<Throughput> throughput = new ArrayList<>();
    /** The best-batch ceiling's sweep. */
    final List<Sweep> ceilingSweep = new ArrayList<>();

    final List<Latency> latency = new ArrayList<>();
    final List<Idle> idle = new ArrayList<>();
    final List<Growth> growth = new ArrayList<>();
    final List<Failover> failover = new ArrayList<>();
    final List<String> notes = new ArrayList<>();

    /** A pre-enqueued backlog drained by {@code nodes} nodes. */
    record Throughput(
            String system,
            int nodes,
            int rep,
            int jobs,
            double enqueueRate,
            double seconds,
            long done,
            double rate,
            boolean capped,
            double claimBatch,
            double claimMs,
            long left) {}

    /** One point of the best-batch ceiling's sweep. */
    record Sweep(int nodes, int batch, int seconds, double rate) {}

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

    /** Every recorded run's rate of {@code system} at {@code nodes}, in ascending order. */
    double[] rates(String system, int nodes) {
        return throughput.stream()
                .filter(t -> t.system().equals(system) && t.nodes() == nodes)
                .mapToDouble(Throughput::rate)
                .sorted()
                .toArray();
    }

    /** The median of the runs of {@code system} at {@code nodes}; NaN if none. */
    double rate(String system, int nodes) {
        double[] v = rates(system, nodes);
        if (v.length == 0) {
            return Double.NaN;
        }
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }

    /** The highest median over the node counts. */
    double bestRate(String system) {
        double best = Double.NaN;
        for (Throughput t : throughput) {
            double m = t.system().equals(system) ? rate(system, t.nodes()) : Double.NaN;
            if (!Double.isNaN(m) && (Double.isNaN(best) || m > best)) {
                best = m;
            }
        }
        return best;
    }

    /** The number of runs per point (the most of any point). */
    int repetitions() {
        return throughput.stream().mapToInt(Throughput::rep).max().orElse(0);
    }
}
