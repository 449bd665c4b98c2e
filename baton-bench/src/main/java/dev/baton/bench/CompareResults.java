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
    final List<GrowthPairs> growthPairs = new ArrayList<>();
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

    /**
     * Enqueue-to-start latency of probe jobs, idle or under a background load; of it, the probe's enqueue call
     * itself (until its commit returned: the part a node cannot shorten); the load's jobs enqueued per second
     * while the probes were sent (0 idle) and the machine's CPU meanwhile ({@link Machine.Cpu#since}), which say
     * whether a node that fell behind was short of CPU or of claims.
     */
    record Latency(
            String system,
            String mode,
            int probes,
            int started,
            double p50,
            double p99,
            double max,
            double callP50,
            double callP99,
            double loadEnqueued,
            String cpu) {}

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

    /**
     * A backlog with {@code finished} jobs kept against the same backlog alone, measured in alternating pairs: the
     * ratios kept ÷ alone of each pair, ascending.
     */
    record GrowthPairs(String system, long pending, long finished, int sample, double[] rate, double[] claim) {}

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
        return median(rates(system, nodes));
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

    /** The growth runs of one system and backlog: median and range of jobs/s and of the claim statement's time. */
    record GrowthPoint(
            String system,
            String backlog,
            long pending,
            long finished,
            int runs,
            double rate,
            double rateMin,
            double rateMax,
            double claimMs,
            double claimMin,
            double claimMax,
            String claimStatement) {}

    /** The growth runs grouped by system and backlog, in the order they ran. */
    List<GrowthPoint> growthPoints() {
        java.util.Map<List<String>, List<Growth>> groups = new java.util.LinkedHashMap<>();
        for (Growth g : growth) {
            groups.computeIfAbsent(List.of(g.system(), g.backlog()), k -> new ArrayList<>())
                    .add(g);
        }
        List<GrowthPoint> out = new ArrayList<>();
        for (List<Growth> runs : groups.values()) {
            double[] rate = runs.stream().mapToDouble(Growth::rate).sorted().toArray();
            double[] claim = runs.stream().mapToDouble(Growth::claimMs).sorted().toArray();
            Growth g = runs.get(0);
            out.add(new GrowthPoint(
                    g.system(),
                    g.backlog(),
                    g.pending(),
                    g.finished(),
                    runs.size(),
                    median(rate),
                    rate[0],
                    rate[rate.length - 1],
                    median(claim),
                    claim[0],
                    claim[claim.length - 1],
                    g.claimStatement()));
        }
        return out;
    }

    /** The median of sorted values (the mean of the middle two for an even count); NaN if none. */
    static double median(double[] sorted) {
        if (sorted.length == 0) {
            return Double.NaN;
        }
        int m = sorted.length / 2;
        return sorted.length % 2 == 1 ? sorted[m] : (sorted[m - 1] + sorted[m]) / 2;
    }

    /** The number of runs per point (the most of any point). */
    int repetitions() {
        return throughput.stream().mapToInt(Throughput::rep).max().orElse(0);
    }
}
