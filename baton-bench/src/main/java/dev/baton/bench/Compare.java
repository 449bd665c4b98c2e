package dev.baton.bench;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * {@code java -jar baton-bench.jar compare [--quick|--full] [--jdbc-url URL] [--write-report [DIR]]}: Baton
 * side by side with db-scheduler (both polling strategies), JobRunr, Quartz (clustered JDBC job store),
 * ShedLock (leader failover only) and the raw-SQL ceiling, each in turn on the same database, each on a
 * schema of its own that is dropped after its run. See docs/benchmarks/compare.md.
 */
final class Compare {
    static final String USAGE = String.join(
            "\n",
            "usage: java -jar baton-bench.jar compare [--quick|--full] [options]",
            "",
            "Runs each system in turn on one PostgreSQL database (embedded unless --jdbc-url), in schemas of its own:",
            "  throughput  a pre-enqueued backlog of no-op jobs drained by 1, 2, 4 and 8 in-process nodes",
            "  latency     enqueue-to-start p50/p99 on one idle node, then under a steady background load",
            "  idle        statements/s of one idle node (client-side count) and server transactions/s",
            "  growth      one node's throughput and claim-statement time with 10^4..10^6 pending, 10^6 finished",
            "  failover    child processes: SIGKILL / SIGTERM of the node running a singleton task; dead-job rescue",
            "",
            "options:",
            "  --quick                 about 8 minutes: 20,000 jobs per throughput run (Quartz 3,000), growth up to 10^5",
            "  --full                  the long run (default): 50,000 jobs per throughput run (Quartz 10,000), growth up to 10^6",
            "  --jdbc-url URL          an existing database; default: embedded PostgreSQL",
            "  --systems LIST          subset of baton,ceiling,ceiling-best,dbs-fetch,dbs-lock,jobrunr,quartz,shedlock",
            "  --phases LIST           subset of throughput,latency,idle,growth,failover",
            "  --nodes LIST            node counts of the throughput runs (default 1,2,4,8)",
            "  --jobs N                jobs per throughput run",
            "  --threads N             worker threads per node, every system (default 32)",
            "  --dbs-threads LIST      db-scheduler's threads per node instead: each count runs as a system of its",
            "                          own (\"db-scheduler (lock-and-fetch, 32 threads)\"), so its best is its best",
            "                          setting, not only the one Baton runs with",
            "  --repeat N              throughput runs per system and node count, interleaved (default 1)",
            "  --window-seconds S      measure each throughput run over S s of steady state, after 1 s of warm-up,",
            "                          from a backlog sized to last that long (default: drain --jobs jobs)",
            "  --ceiling-batches LIST  claim batches the best-batch ceiling sweeps (default 10,50,100,200,500)",
            "  --cpu-layout L          shared (default) or split: PostgreSQL pinned to CPU 0, this JVM to the others",
            "                          (taskset; the server must run on this machine)",
            "  --growth-pending LIST   pending backlogs of the growth phase (default 10000,100000,1000000; --quick",
            "                          1000,10000,100000); the first is measured again with --growth-finished kept",
            "  --growth-finished N     finished jobs kept beside the first backlog (default 1000000; --quick 100000)",
            "  --growth-sample N       jobs one node runs per growth measurement (default 10000; --quick 2000);",
            "                          with --repeat, each loaded backlog is measured that many times",
            "  --growth-pairs N        measure the first backlog alone and beside the finished jobs as N pairs:",
            "                          both loaded side by side, their samples alternating (ABBA), each pair's",
            "                          ratio reported, so that the machine's drift cancels (default 0: separately)",
            "  --latency-probes N      enqueue-to-start probes per latency measurement (default 200; --quick 30)",
            "  --load-rate N|half|half-stream",
            "                          jobs/s of background load during the second latency measurement (default 200);",
            "                          half: half of one node's maximum, measured on a backlog just before;",
            "                          half-stream: half of the highest rate one node sustains beside that load,",
            "                          found just before by raising it a quarter a step (the enqueues' cost included);",
            "                          sent in batches on a fixed schedule by 4 threads (an open loop)",
            "  --load-batch N          jobs per enqueue call of that load (default 10)",
            "  --server-statements     under load, the ten statements that cost the server most, per call and",
            "                          per row, from pg_stat_statements (preloaded in the embedded server;",
            "                          another server must load it itself)",
            "  --write-report [DIR]    write DIR/compare.md and DIR/compare-*.png (default docs/benchmarks)",
            "  -h, --help              this help");

    static final List<String> ALL_SYSTEMS =
            List.of("baton", "ceiling", "ceiling-best", "dbs-fetch", "dbs-lock", "jobrunr", "quartz", "shedlock");
    static final List<String> LAYOUTS = List.of("shared", "split");
    static final int QUARTZ_QUICK_JOBS = 3_000;
    static final int QUARTZ_FULL_JOBS = 10_000;
    static final List<String> ALL_PHASES = List.of("throughput", "latency", "idle", "growth", "failover");

    boolean quick;
    String jdbcUrl;
    Set<String> systems = new LinkedHashSet<>(ALL_SYSTEMS);
    Set<String> phases = new LinkedHashSet<>(ALL_PHASES);
    List<Integer> nodeCounts = new ArrayList<>(List.of(1, 2, 4, 8));
    Integer jobs;
    /** --latency-probes, --load-rate and the --growth-* options: override the mode's sizes. */
    Integer probesOption;

    List<Integer> growthPendingOption;
    Integer growthFinishedOption;
    Integer growthSampleOption;
    /** --growth-pairs: the kept-finished case measured in alternating pairs; 0 = one case after the other. */
    int growthPairs;

    Integer loadRateOption;
    /** --load-rate half: the load is half of one node's maximum, measured just before the latency runs. */
    boolean loadHalf;
    /** --load-rate half-stream: that maximum is measured under a stream of enqueues, not on a backlog. */
    boolean loadHalfOfStream;

    int threads = 32;
    /** --dbs-threads: db-scheduler's thread counts, each a system of its own; empty = {@link #threads}. */
    List<Integer> dbsThreads = new ArrayList<>();

    int poolSize = 10;
    int repeat = 1;
    int windowSeconds;
    List<Integer> ceilingBatches = new ArrayList<>(List.of(10, 50, 100, 200, 500));
    /** The largest backlog a measuring window enqueues (tests keep it small). */
    int maxBacklog = 3_000_000;

    String cpuLayout = "shared";
    boolean writeReport;
    Path reportDir = Path.of("docs", "benchmarks");
    final List<String> commandLine = new ArrayList<>();

    // sizes, set by the mode
    int capSeconds;
    int latencyProbes;
    int loadRate;
    int idleSettle;
    int idleSeconds;
    List<Integer> growthPending;
    int growthFinished;
    int growthSample;

    /** Report the server's costliest statements under load (pg_stat_statements). */
    boolean serverStatements;
    /**
     * How many: ten, so that the maintenance passes (once per 10 s, tens of ms each under a stream) show beside the
     * claims, completions and enqueues that cost the most.
     */
    static final int SERVER_STATEMENTS = 10;

    private Database db;
    /** How long the background load runs before the probes under load start. */
    static final long LOAD_WARM_UP_MILLIS = 10_000;
    /** The threads that send the background load (see {@link #loadThread}). */
    static final int LOAD_SENDERS = 4;
    /** Jobs per call of the background load: --load-batch. */
    int loadBatch = 10;
    /**
     * A latency run under load counts as sustained if the jobs not finished after its last probe are fewer than
     * this many seconds of the load (a quarter second: 2,500 jobs at 10,000 jobs/s).
     */
    static final double SUSTAINED_BACKLOG_SECONDS = 0.25;
    /** --load-rate half-stream: the ramp's first rate (jobs/s), its steps' warm-up and measured time. */
    static final int STREAM_RAMP_FIRST = 2_000;

    static final long STREAM_STEP_WARM_UP_MILLIS = 5_000;
    static final long STREAM_STEP_MILLIS = 10_000;
    /** Steps halving the gap between the last sustained rate and the first one that was not. */
    static final int STREAM_BISECTIONS = 2;

    /** Jobs the background load thread has enqueued. */
    private final AtomicLong loaded = new AtomicLong();
    /** Per enqueue of the load thread: when it began (nanoTime) and how far behind its schedule (ns). */
    private final java.util.concurrent.ConcurrentLinkedQueue<long[]> loadLag =
            new java.util.concurrent.ConcurrentLinkedQueue<>();

    private CompareResults r;
    /** The best-batch ceiling's batch per node count, from {@link #sweepCeiling()}. */
    private final Map<Integer, Integer> bestCeilingBatch = new TreeMap<>();
    /** The fastest rate seen per system (warm-up included), to size the backlog of a measuring window. */
    private final Map<String, Double> expectedRate = new java.util.HashMap<>();
    /** The last drain of a whole backlog: its rate and the machine's CPU from the nodes' start to its end. */
    private Drain lastDrain;

    private record Drain(double rate, String cpu) {}

    private final String suffix = Long.toHexString(System.currentTimeMillis() & 0xffffffL);

    static Compare parse(String[] args) {
        Compare c = new Compare();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            c.commandLine.add(a);
            switch (a) {
                case "--quick" -> c.quick = true;
                case "--full" -> c.quick = false;
                case "--jdbc-url" -> c.jdbcUrl = value(args, ++i, a, c);
                case "--systems" -> c.systems = list(value(args, ++i, a, c), ALL_SYSTEMS, a);
                case "--phases" -> c.phases = list(value(args, ++i, a, c), ALL_PHASES, a);
                case "--nodes" -> {
                    c.nodeCounts.clear();
                    for (String s : value(args, ++i, a, c).split(",")) {
                        c.nodeCounts.add(positive(s.strip(), a));
                    }
                }
                case "--jobs" -> c.jobs = positive(value(args, ++i, a, c), a);
                case "--threads" -> c.threads = positive(value(args, ++i, a, c), a);
                case "--dbs-threads" -> {
                    c.dbsThreads.clear();
                    for (String s : value(args, ++i, a, c).split(",")) {
                        int t = positive(s.strip(), a);
                        if (!c.dbsThreads.contains(t)) {
                            c.dbsThreads.add(t);
                        }
                    }
                }
                case "--repeat" -> c.repeat = positive(value(args, ++i, a, c), a);
                case "--window-seconds" -> c.windowSeconds = positive(value(args, ++i, a, c), a);
                case "--ceiling-batches" -> {
                    c.ceilingBatches.clear();
                    for (String s : value(args, ++i, a, c).split(",")) {
                        c.ceilingBatches.add(positive(s.strip(), a));
                    }
                }
                case "--cpu-layout" -> {
                    c.cpuLayout = value(args, ++i, a, c);
                    if (!LAYOUTS.contains(c.cpuLayout)) {
                        throw new IllegalArgumentException(
                                a + ": unknown '" + c.cpuLayout + "' (allowed: " + String.join(",", LAYOUTS) + ")");
                    }
                }
                case "--growth-pending" -> {
                    c.growthPendingOption = new ArrayList<>();
                    for (String s : value(args, ++i, a, c).split(",")) {
                        c.growthPendingOption.add(positive(s.strip(), a));
                    }
                }
                case "--growth-finished" -> c.growthFinishedOption = positive(value(args, ++i, a, c), a);
                case "--growth-sample" -> c.growthSampleOption = positive(value(args, ++i, a, c), a);
                case "--growth-pairs" -> c.growthPairs = positive(value(args, ++i, a, c), a);
                case "--latency-probes" -> c.probesOption = positive(value(args, ++i, a, c), a);
                case "--load-batch" -> c.loadBatch = positive(value(args, ++i, a, c), a);
                case "--load-rate" -> {
                    String v = value(args, ++i, a, c);
                    if (v.equals("half") || v.equals("half-stream")) {
                        c.loadHalf = true;
                        c.loadHalfOfStream = v.equals("half-stream");
                    } else if (v.matches("[0-9_]+")) {
                        c.loadRateOption = positive(v, a);
                    } else {
                        throw new IllegalArgumentException(
                                a + " needs a positive integer, 'half' or 'half-stream', but was '" + v + "'");
                    }
                }
                case "--server-statements" -> c.serverStatements = true;
                case "--write-report" -> {
                    c.writeReport = true;
                    if (i + 1 < args.length && !args[i + 1].startsWith("--")) {
                        c.reportDir = Path.of(value(args, ++i, a, c));
                    }
                }
                default -> throw new IllegalArgumentException("unknown option '" + a + "'");
            }
        }
        if (c.quick) {
            c.jobs = c.jobs != null ? c.jobs : 20_000;
            c.capSeconds = 10;
            c.latencyProbes = 30;
            c.loadRate = 200;
            c.idleSettle = 6;
            c.idleSeconds = 10;
            c.growthPending = List.of(1_000, 10_000, 100_000);
            c.growthFinished = 100_000;
            c.growthSample = 2_000;
        } else {
            c.jobs = c.jobs != null ? c.jobs : 50_000;
            c.capSeconds = 120;
            c.latencyProbes = 200;
            c.loadRate = 200;
            c.idleSettle = 8;
            c.idleSeconds = 30;
            c.growthPending = List.of(10_000, 100_000, 1_000_000);
            c.growthFinished = 1_000_000;
            c.growthSample = 10_000;
        }
        if (c.probesOption != null) {
            c.latencyProbes = c.probesOption;
        }
        if (c.loadRateOption != null) {
            c.loadRate = c.loadRateOption;
        }
        if (c.growthPendingOption != null) {
            c.growthPending = c.growthPendingOption.stream().distinct().toList();
        }
        if (c.growthFinishedOption != null) {
            c.growthFinished = c.growthFinishedOption;
        }
        if (c.growthSampleOption != null) {
            c.growthSample = c.growthSampleOption;
        }
        return c;
    }

    private static Set<String> list(String v, List<String> allowed, String option) {
        Set<String> out = new LinkedHashSet<>();
        for (String s : v.split(",")) {
            String x = s.strip();
            if (!allowed.contains(x)) {
                throw new IllegalArgumentException(
                        option + ": unknown '" + x + "' (allowed: " + String.join(",", allowed) + ")");
            }
            out.add(x);
        }
        return out;
    }

    private static String value(String[] args, int i, String option, Compare c) {
        if (i >= args.length) {
            throw new IllegalArgumentException(option + " needs a value");
        }
        c.commandLine.add(args[i]);
        return args[i];
    }

    private static int positive(String s, String option) {
        try {
            int v = Integer.parseInt(s.replace("_", ""));
            if (v < 1) {
                throw new NumberFormatException();
            }
            return v;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(option + " needs a positive integer, but was '" + s + "'");
        }
    }

    static int main(String[] args) {
        if (Arrays.asList(args).contains("-h") || Arrays.asList(args).contains("--help")) {
            System.out.println(USAGE);
            return 0;
        }
        Compare c;
        try {
            c = parse(args);
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage() + "\n\n" + USAGE);
            return 2;
        }
        System.setProperty("java.awt.headless", "true");
        // Quartz logs every connection wait its scheduler thread abandons when a node shuts down
        System.setProperty("org.slf4j.simpleLogger.log.org.quartz.core.ErrorLogger", "off");
        CompareResults r = new CompareResults();
        r.startedAt = Instant.now();
        r.mode = c.quick ? "quick" : "full";
        List<String> shown = new ArrayList<>(c.commandLine);
        for (int i = 0; i + 1 < shown.size(); i++) {
            if (shown.get(i).equals("--jdbc-url")) {
                shown.set(i + 1, shown.get(i + 1).replaceAll("(?i)password=[^&]*", "password=***"));
            }
        }
        r.command = "java -jar baton-bench/target/baton-bench.jar compare"
                + (shown.isEmpty() ? "" : " " + String.join(" ", shown));
        r.loadBefore = Machine.loadAverage();
        long t0 = System.nanoTime();
        try (Database db = Database.open(c.jdbcUrl, null, c.serverStatements)) {
            if (c.serverStatements) {
                ServerStatements.install(db);
            }
            System.out.println("Baton side-by-side comparison (" + r.mode + "); load average " + r.loadBefore);
            c.run(db, r);
        } catch (Exception e) {
            System.err.println("comparison failed: " + e);
            e.printStackTrace();
            return 1;
        }
        r.totalSeconds = (System.nanoTime() - t0) / 1e9;
        r.loadAfter = Machine.loadAverage();
        String md = CompareReport.markdown(r, c);
        System.out.println();
        System.out.println(md);
        if (c.writeReport) {
            try {
                CompareReport.write(r, c, md);
                System.out.println(
                        "report written to " + c.reportDir.resolve("compare.md").toAbsolutePath());
            } catch (Exception e) {
                System.err.println("writing the report failed: " + e);
                e.printStackTrace();
                return 1;
            }
        }
        return 0;
    }

    void run(Database db, CompareResults r) throws Exception {
        this.db = db;
        this.r = r;
        r.embedded = db.embedded();
        r.serverVersion = db.serverVersion();
        r.settings = db.serverSettings();
        CpuLayout.Pinned pinned = null;
        if (cpuLayout.equals("split")) {
            pinned = CpuLayout.split(db);
            r.cpuLayout = pinned.description;
            System.out.println("  " + r.cpuLayout);
        }
        try {
            runPhases(db, r);
        } finally {
            if (pinned != null) {
                pinned.close();
            }
        }
    }

    private void runPhases(Database db, CompareResults r) throws Exception {
        r.machine = Machine.facts();
        r.machine.forEach((k, v) -> System.out.printf("  %-32s %s%n", k, v));
        System.out.println("  PostgreSQL " + r.serverVersion);
        r.versions.put("Baton", Machine.artifactVersion("dev.baton", "baton-core"));
        r.versions.put("db-scheduler", Machine.comparedVersion("db-scheduler"));
        r.versions.put("JobRunr", Machine.comparedVersion("jobrunr"));
        r.versions.put("Quartz", Machine.comparedVersion("quartz"));
        r.versions.put("ShedLock", Machine.comparedVersion("shedlock"));
        r.versions.put("XChart (charts)", Machine.comparedVersion("xchart"));
        r.versions.put("HikariCP", Machine.artifactVersion("com.zaxxer", "HikariCP"));
        r.versions.put("PostgreSQL JDBC", org.postgresql.util.DriverInfo.DRIVER_VERSION);
        List<JobSystem> jobSystems = new ArrayList<>();
        if (systems.contains("baton")) {
            jobSystems.add(new JobSystem(schema("baton"), x -> new Peer.BatonPeer(db, x, threads, poolSize)));
        }
        if (systems.contains("ceiling")) {
            jobSystems.add(new JobSystem(schema("raw"), x -> new Ceiling(db, x, threads, false)));
        }
        if (systems.contains("ceiling-best")) {
            jobSystems.add(new JobSystem(schema("rawbest"), x -> new Ceiling(db, x, threads, true)));
        }
        // with --dbs-threads, each of db-scheduler's thread counts is a system of its own, named by it
        boolean dbsNamedByThreads = !dbsThreads.isEmpty();
        for (int t : dbsNamedByThreads ? dbsThreads : List.of(threads)) {
            String tag = dbsNamedByThreads ? "_" + t : "";
            if (systems.contains("dbs-fetch")) {
                jobSystems.add(new JobSystem(
                        schema("dbsf") + tag,
                        x -> new Peer.DbSchedulerPeer(db, x, t, poolSize, false, dbsNamedByThreads)));
            }
            if (systems.contains("dbs-lock")) {
                jobSystems.add(new JobSystem(
                        schema("dbsl") + tag,
                        x -> new Peer.DbSchedulerPeer(db, x, t, poolSize, true, dbsNamedByThreads)));
            }
        }
        if (systems.contains("jobrunr")) {
            jobSystems.add(new JobSystem(schema("jobrunr"), x -> new Peer.JobRunrPeer(db, x, threads, poolSize)));
        }
        if (systems.contains("quartz")) {
            jobSystems.add(new JobSystem(schema("quartz"), x -> new Peer.QuartzPeer(db, x, threads, poolSize)));
        }
        for (Supplier<Peer> s : jobSystems) {
            try (Peer p = s.get()) {
                r.systemSettings.put(p.name(), p.settings());
            }
        }
        // Idle load and latency first, while no other system's node has run in this JVM or on this database.
        if (phases.contains("idle") || phases.contains("latency")) {
            for (Supplier<Peer> s : jobSystems) {
                idleAndLatency(s);
            }
        }
        if (phases.contains("throughput")) {
            for (Supplier<Peer> s : jobSystems) {
                if (jobs >= 2_000) {
                    // JIT warm-up of this system's code paths, not recorded
                    throughput(s, 2, windowSeconds > 0 ? Math.max(jobs, 20_000) : 2_000, 0);
                }
            }
            if (systems.contains("ceiling-best")) {
                sweepCeiling();
            }
            // interleaved: every system at one node count, then the next count, then the next repetition, so
            // that a drift of the machine hits all systems alike
            for (int rep = 1; rep <= repeat; rep++) {
                for (int n : nodeCounts) {
                    for (Supplier<Peer> s : jobSystems) {
                        throughput(s, n, jobs, rep);
                    }
                }
            }
        }
        if (phases.contains("growth")) {
            for (JobSystem s : jobSystems) {
                growth(s);
            }
        }
        if (phases.contains("failover")) {
            new Failover(db, r, quick, systems).run();
        }
    }

    private String schema(String system) {
        return "cmp_" + system + "_" + suffix;
    }

    /** One system under comparison: {@link #get()} makes its peer on its own schema, {@link #on} on another. */
    record JobSystem(String schema, java.util.function.Function<String, Peer> make) implements Supplier<Peer> {
        @Override
        public Peer get() {
            return make.apply(schema);
        }

        /** The same system on the schema named {@code schema + "_" + tag}, beside the first. */
        Peer on(String tag) {
            return make.apply(schema + "_" + tag);
        }
    }

    // ------------------------------------------------------------------ throughput

    /**
     * The best-batch ceiling's batch at each node count: every batch of --ceiling-batches over a short window,
     * the fastest kept. Recorded for the report; the measured runs then use that batch.
     */
    private void sweepCeiling() throws Exception {
        int seconds = windowSeconds > 0 ? Math.max(2, windowSeconds / 4) : 2;
        for (int n : nodeCounts) {
            double bestRate = -1;
            for (int b : ceilingBatches) {
                try (Ceiling c = new Ceiling(db, schema("rawsweep"), threads, true)) {
                    c.batch = b;
                    c.install();
                    double seen = Math.max(2_000, expectedRate.getOrDefault(c.name(), 0.0));
                    int backlog = (int) Math.min(maxBacklog, Math.max(jobs, seen * 2 * (seconds + 2)));
                    c.enqueue(0, backlog);
                    db.checkpoint();
                    double rate = window(c, n, backlog, seconds)[0];
                    r.ceilingSweep.add(new CompareResults.Sweep(n, b, seconds, rate));
                    System.out.printf("raw-SQL ceiling sweep, %d node(s), batch %d: %,7.0f jobs/s%n", n, b, rate);
                    expectedRate.merge(c.name(), rate, Math::max);
                    if (rate > bestRate) {
                        bestRate = rate;
                        bestCeilingBatch.put(n, b);
                    }
                }
            }
        }
    }

    /**
     * Starts {@code nodes} nodes on a backlog of {@code backlog} jobs and measures the start rate over {@code
     * seconds} after 1 s of warm-up from the first start: {rate, seconds measured, 1 if the backlog ran out first}.
     */
    private double[] window(Peer p, int nodes, int backlog, int seconds) throws Exception {
        Sink.reset(backlog);
        List<AutoCloseable> started = new ArrayList<>();
        try {
            for (int i = 1; i <= nodes; i++) {
                started.add(p.startNode(i));
            }
            long giveUp = System.nanoTime() + 60_000_000_000L;
            while (Sink.FIRST.get() == 0 && System.nanoTime() < giveUp) {
                Thread.sleep(5);
            }
            if (Sink.FIRST.get() == 0) {
                throw new IllegalStateException(
                        p.name() + ": no job started within 60 s of starting " + nodes + " node(s)");
            }
            long w0 = Sink.FIRST.get() + 1_000_000_000L;
            while (System.nanoTime() < w0 && Sink.RUNS.get() < backlog) {
                Thread.sleep(5);
            }
            // a backlog gone before the window opened: the rate of the whole run, from its first start
            boolean early = Sink.RUNS.get() >= backlog;
            long c0 = early ? 0 : Sink.RUNS.get();
            long start = early ? Sink.FIRST.get() : System.nanoTime();
            long end = start + seconds * 1_000_000_000L;
            while (System.nanoTime() < end && Sink.RUNS.get() < backlog) {
                Thread.sleep(5);
            }
            long c1 = Sink.RUNS.get();
            long stop = c1 >= backlog && Sink.LAST.get() != 0 ? Sink.LAST.get() : System.nanoTime();
            double secs = (stop - start) / 1e9;
            return new double[] {(c1 - c0) / secs, secs, c1 >= backlog ? 1 : 0};
        } finally {
            closeAll(started);
        }
    }

    private void throughput(Supplier<Peer> s, int nodes, int jobs, int rep) throws Exception {
        boolean record = rep > 0;
        try (Peer p = s.get()) {
            if (p instanceof Ceiling c) {
                if (c.best) {
                    c.batch = bestCeilingBatch.getOrDefault(nodes, 100);
                } else {
                    CompareResults.Throughput b = find("Baton", nodes);
                    c.batch = b != null && b.claimBatch() >= 1 ? (int) Math.round(b.claimBatch()) : 16;
                }
            }
            if (p instanceof Peer.QuartzPeer) {
                // Quartz enqueues at about 1k jobs/s and drains at a few hundred: a smaller backlog keeps the runs
                // short (they would be capped anyway)
                jobs = Math.min(jobs, quick ? QUARTZ_QUICK_JOBS : QUARTZ_FULL_JOBS);
            }
            if (record && windowSeconds > 0) {
                // a backlog that lasts the warm-up and the window at the fastest rate seen so far, with a margin
                double seen = Math.max(2_000, expectedRate.getOrDefault(p.name(), 0.0));
                jobs = (int) Math.min(maxBacklog, Math.max(jobs, seen * 2 * (windowSeconds + 2)));
            }
            p.install();
            long e0 = System.nanoTime();
            p.enqueue(0, jobs);
            double enqueueRate = jobs / ((System.nanoTime() - e0) / 1e9);
            db.checkpoint();
            if (record && windowSeconds > 0) {
                List<StatementCounter.Snapshot> s0 = p.counter.snapshot();
                double[] w = window(p, nodes, jobs, windowSeconds);
                double[] claim = claimStats(p, StatementCounter.delta(p.counter.snapshot(), s0));
                if (w[2] > 0) {
                    r.notes.add(p.name() + ", " + nodes + " node(s), run " + rep + ": the backlog of " + jobs
                            + " ran out after " + String.format(Locale.ROOT, "%.1f", w[1]) + " s of the window");
                }
                expectedRate.merge(p.name(), w[0], Math::max);
                r.throughput.add(new CompareResults.Throughput(
                        p.name(),
                        nodes,
                        rep,
                        jobs,
                        enqueueRate,
                        w[1],
                        (long) (w[0] * w[1]),
                        w[0],
                        false,
                        claim[0],
                        claim[1],
                        0));
                System.out.printf(
                        "%-42s %d node(s), run %d: %,7.0f jobs/s over %.1f s (backlog %,d; enqueue %,.0f/s%s)%n",
                        p.name(),
                        nodes,
                        rep,
                        w[0],
                        w[1],
                        jobs,
                        enqueueRate,
                        Double.isNaN(claim[0]) ? "" : String.format(Locale.ROOT, ", %.1f jobs per claim", claim[0]));
                return;
            }
            Sink.reset(jobs);
            List<StatementCounter.Snapshot> s0 = p.counter.snapshot();
            List<AutoCloseable> started = new ArrayList<>();
            Machine.Cpu cpu0 = Machine.Cpu.sample();
            long t0 = System.nanoTime();
            long deadline = t0 + capSeconds * 1_000_000_000L;
            boolean capped = false;
            long end;
            try {
                for (int i = 1; i <= nodes; i++) {
                    started.add(p.startNode(i));
                }
                while (Sink.RUNS.get() < jobs && System.nanoTime() < deadline) {
                    Thread.sleep(10);
                }
                if (Sink.RUNS.get() < jobs) {
                    capped = true;
                    end = System.nanoTime();
                } else {
                    // the clock stops when the database says every job is done
                    while (p.remaining() > 0 && System.nanoTime() < deadline + 30_000_000_000L) {
                        Thread.sleep(10);
                    }
                    end = System.nanoTime();
                }
            } finally {
                closeAll(started);
            }
            String cpu = Machine.Cpu.sample().since(cpu0);
            long first = Sink.FIRST.get();
            long done = capped ? Sink.RUNS.get() : jobs;
            double secs = (end - (first == 0 ? t0 : first)) / 1e9;
            double rate = done / secs;
            double[] claim = claimStats(p, StatementCounter.delta(p.counter.snapshot(), s0));
            double batch = claim[0];
            double claimMs = claim[1];
            expectedRate.merge(p.name(), rate, Math::max);
            lastDrain = new Drain(rate, cpu);
            if (!record) {
                return;
            }
            long left = p.remaining();
            if (left > 0 && !capped) {
                r.notes.add(p.name() + ", " + nodes + " node(s): " + left
                        + " jobs still unfinished 30 s after all had started");
            }
            r.throughput.add(new CompareResults.Throughput(
                    p.name(), nodes, rep, jobs, enqueueRate, secs, done, rate, capped, batch, claimMs, left));
            System.out.printf(
                    "%-42s %d node(s): %,7.0f jobs/s%s (%,d jobs in %.2f s from the first start; enqueue %,.0f/s%s)%n",
                    p.name(),
                    nodes,
                    rate,
                    capped ? " CAPPED" : "",
                    done,
                    secs,
                    enqueueRate,
                    Double.isNaN(batch) ? "" : String.format(", %.1f jobs per claim", batch));
        }
    }

    /** Jobs per non-empty claim and the claim statement's mean time in ms (NaN where not seen). */
    private static double[] claimStats(Peer p, List<StatementCounter.Snapshot> delta) {
        double batch = Double.NaN;
        double claimMs = Double.NaN;
        for (StatementCounter.Snapshot x : delta) {
            if (p.isClaim(x.label())) {
                if (x.label().startsWith("job.claim")) {
                    batch = x.rowsPerNonEmptyCall();
                }
                claimMs = x.avgMillis();
            }
        }
        return new double[] {batch, claimMs};
    }

    /** The latest recorded run of {@code system} at {@code nodes}. */
    private CompareResults.Throughput find(String system, int nodes) {
        CompareResults.Throughput found = null;
        for (CompareResults.Throughput t : r.throughput) {
            if (t.system().equals(system) && t.nodes() == nodes) {
                found = t;
            }
        }
        return found;
    }

    static void closeAll(List<AutoCloseable> nodes) {
        List<Thread> ts = new ArrayList<>();
        for (AutoCloseable n : nodes) {
            Thread t = new Thread(() -> {
                try {
                    n.close();
                } catch (Exception e) {
                    System.out.println("  (closing a node failed: " + e + ")");
                }
            });
            t.start();
            ts.add(t);
        }
        for (Thread t : ts) {
            try {
                t.join(60_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    // ------------------------------------------------------------------ idle load and latency

    private void idleAndLatency(Supplier<Peer> s) throws Exception {
        try (Peer p = s.get()) {
            if (p instanceof Ceiling) {
                return; // no idle node, no enqueue-to-start path: the ceiling is only a throughput limit
            }
            if (loadHalf && phases.contains("latency")) {
                loadRate = loadHalfOfStream
                        ? halfOfOneNodesStreamMaximum(s, p.name())
                        : halfOfOneNodesMaximum(s, p.name());
            }
            p.install();
            Sink.reset(Long.MAX_VALUE);
            AutoCloseable node = p.startNode(1);
            try {
                if (phases.contains("idle")) {
                    Thread.sleep(idleSettle * 1000L);
                    try (Connection mon = db.connect()) {
                        long tx0 = transactions(mon);
                        List<StatementCounter.Snapshot> s0 = p.counter.snapshot();
                        long t0 = System.nanoTime();
                        Thread.sleep(idleSeconds * 1000L);
                        List<StatementCounter.Snapshot> d = StatementCounter.delta(p.counter.snapshot(), s0);
                        long tx1 = transactions(mon);
                        double secs = (System.nanoTime() - t0) / 1e9;
                        long calls = StatementCounter.totalCalls(d);
                        StringBuilder top = new StringBuilder();
                        d.stream()
                                .limit(3)
                                .forEach(x -> top.append(top.length() == 0 ? "" : "; ")
                                        .append(x.calls())
                                        .append("× ")
                                        .append(shorten(x.label())));
                        r.idle.add(new CompareResults.Idle(
                                p.name(), secs, calls / secs, (tx1 - tx0 - 1) / secs, top.toString()));
                        System.out.printf(
                                "%-42s idle: %.2f statements/s (client side), %.2f server transactions/s [%s]%n",
                                p.name(), calls / secs, (tx1 - tx0 - 1) / secs, top);
                    }
                }
                if (phases.contains("latency")) {
                    if (!phases.contains("idle")) {
                        // Idle means a node at rest: its start (registration, the first elections, the first
                        // maintenance passes) is not idle. The settle moved no percentile measurably (2026-12-07,
                        // round-two.md); the first probes after it are still among the slowest.
                        Thread.sleep(idleSettle * 1000L);
                    }
                    latency(p, "idle", null);
                    AtomicBoolean stop = new AtomicBoolean();
                    Thread load = loadThread(p, stop, loadRate, 0);
                    try {
                        // The first seconds of load are not its steady state: the load thread fell behind its
                        // schedule by up to half a second there and then caught up in a burst (measured: 527 ms
                        // behind in the first 10 s, 32-39 ms in every later 10 s), and the probes queued behind
                        // that burst.
                        Thread.sleep(LOAD_WARM_UP_MILLIS);
                        latency(p, "under load (" + loadRate + " jobs/s)", load);
                    } finally {
                        stop.set(true);
                        load.join(30_000);
                    }
                }
            } finally {
                closeAll(List.of(node));
            }
        }
    }

    /**
     * Half of one node's maximum, measured on a backlog (one unrecorded warm-up run, then the faster of two),
     * so that the load under which latency is measured is half of what the node does at that moment: this
     * VM's speed drifts by a quarter within minutes, so a maximum measured in another run does not say it.
     */
    private int halfOfOneNodesMaximum(Supplier<Peer> s, String name) throws Exception {
        int backlog = Math.max(jobs, 150_000);
        throughput(s, 1, backlog, 0);
        expectedRate.remove(name);
        Drain fastest = null;
        for (int i = 0; i < 2; i++) {
            throughput(s, 1, backlog, 0);
            if (fastest == null || lastDrain.rate() > fastest.rate()) {
                fastest = lastDrain;
            }
        }
        int half = (int) Math.round(fastest.rate() / 2);
        r.notes.add(String.format(
                Locale.ROOT,
                "%s: the load of its latency run, %,d jobs/s, is half of one node's maximum measured just before "
                        + "(the faster of two runs on a backlog of %,d jobs: %,.0f jobs/s; meanwhile %s)",
                name,
                half,
                backlog,
                fastest.rate(),
                fastest.cpu()));
        System.out.printf(
                "%-42s one node's maximum just now: %,.0f jobs/s (meanwhile %s); the load: %,d jobs/s%n",
                name, fastest.rate(), fastest.cpu(), half);
        return half;
    }

    /**
     * Half of the highest rate one node sustains beside a stream of enqueues: the open-loop load of the latency run
     * ({@link #loadThread}) at rising rates, from {@link #STREAM_RAMP_FIRST} jobs/s up by a quarter a step, and after
     * the first step that is not sustained {@link #STREAM_BISECTIONS} steps halving the gap to the last that was; each
     * step runs {@link #STREAM_STEP_WARM_UP_MILLIS} and is then measured for {@link #STREAM_STEP_MILLIS}; a step is
     * sustained when the node ran what was enqueued and left no more than {@link #SUSTAINED_BACKLOG_SECONDS} of it
     * unfinished, the latency run's own test; the backlog is worked off between steps. A drain's maximum leaves out
     * what the enqueues cost the server (about as much per job as the claim and the completion together), so half of
     * it is about the most one node sustains beside a stream; and senders that enqueue as fast as they can measure a
     * node starved by them (tried, 2026-12-07: the node ran 6,000-6,600 jobs/s while they enqueued 17,000-20,600),
     * not the most it keeps up with. Decision 0044.
     */
    private int halfOfOneNodesStreamMaximum(Supplier<Peer> s, String name) throws Exception {
        try (Peer p = s.get()) {
            p.install();
            Sink.reset(Long.MAX_VALUE);
            AutoCloseable node = p.startNode(1);
            try {
                double sustained = 0;
                double failed = 0;
                String last = "none";
                long firstId = 0;
                for (int bisections = 0; bisections <= STREAM_BISECTIONS; ) {
                    double rate = failed == 0
                            ? (sustained == 0 ? STREAM_RAMP_FIRST : sustained * 1.25)
                            : (sustained + failed) / 2;
                    StreamStep step = streamStep(p, rate, firstId);
                    System.out.printf("%-42s one node beside a stream: %s%n", name, step.words());
                    if (step.kept()) {
                        sustained = rate;
                        last = step.words();
                    } else {
                        failed = rate;
                    }
                    if (failed != 0) {
                        bisections++;
                    }
                    firstId += (long) (rate * (STREAM_STEP_WARM_UP_MILLIS + STREAM_STEP_MILLIS) * 2 / 1000);
                    long drained = System.nanoTime() + 60_000_000_000L;
                    while (p.remaining() > 0 && System.nanoTime() < drained) {
                        Thread.sleep(50);
                    }
                    if (sustained == 0 && failed != 0) {
                        break;
                    }
                }
                if (sustained == 0) {
                    throw new IllegalStateException(name + ": one node did not sustain even " + STREAM_RAMP_FIRST
                            + " jobs/s beside a stream, so there is no half to measure latency under");
                }
                int half = (int) Math.round(sustained / 2);
                r.notes.add(String.format(
                        Locale.ROOT,
                        "%s: the load of its latency run, %,d jobs/s, is half of the highest rate one node sustained "
                                + "beside a stream measured just before (an open loop of %d jobs a call from %d "
                                + "threads, rising by a quarter a step, then halving the gap %d times; the last step sustained: %s)",
                        name,
                        half,
                        loadBatch,
                        LOAD_SENDERS,
                        STREAM_BISECTIONS,
                        last));
                return half;
            } finally {
                closeAll(List.of(node));
            }
        }
    }

    private record StreamStep(boolean kept, String words) {}

    /** One step of {@link #halfOfOneNodesStreamMaximum}: the open-loop load at {@code rate}, warmed up, measured. */
    private StreamStep streamStep(Peer p, double rate, long firstId) throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        Thread load = loadThread(p, stop, (int) rate, firstId);
        try {
            Thread.sleep(STREAM_STEP_WARM_UP_MILLIS);
            long loaded0 = loaded.get();
            long ran0 = Sink.RUNS.get();
            Machine.Cpu cpu0 = Machine.Cpu.sample();
            long t0 = System.nanoTime();
            Thread.sleep(STREAM_STEP_MILLIS);
            double secs = (System.nanoTime() - t0) / 1e9;
            double enqueued = (loaded.get() - loaded0) / secs;
            double ran = (Sink.RUNS.get() - ran0) / secs;
            long left = p.remaining();
            boolean kept = left <= enqueued * SUSTAINED_BACKLOG_SECONDS && enqueued >= 0.95 * rate;
            return new StreamStep(
                    kept,
                    String.format(
                            Locale.ROOT,
                            "%,.0f jobs/s due, %,.0f enqueued, %,.0f run, %,d not finished at the end%s; meanwhile %s",
                            rate,
                            enqueued,
                            ran,
                            left,
                            kept ? "" : " (NOT SUSTAINED)",
                            Machine.Cpu.sample().since(cpu0)));
        } finally {
            stop.set(true);
            load.join(30_000);
        }
    }

    /**
     * The background load: batches of {@link #loadBatch} jobs due on a fixed schedule (an open loop), sent by
     * {@link #LOAD_SENDERS} threads that take the next due batch each, so that one slow call delays the load only
     * when every sender is busy. A single sender waiting for each call fell 9-17 s behind its schedule when
     * PostgreSQL's one core was busy (2026-12-07, split layout: 81-89 % of the load delivered), and so measured the
     * latency under less load than it said.
     */
    private Thread loadThread(Peer p, AtomicBoolean stop, int rate, long firstId) {
        long period = 1_000_000_000L * loadBatch / rate;
        long start = System.nanoTime();
        AtomicLong nextBatch = new AtomicLong();
        Runnable sender = () -> {
            try {
                while (!stop.get()) {
                    long batch = nextBatch.getAndIncrement();
                    long due = start + batch * period;
                    long wait = due - System.nanoTime();
                    if (wait > 0) {
                        TimeUnit.NANOSECONDS.sleep(wait);
                    }
                    long now = System.nanoTime();
                    loadLag.add(new long[] {now, Math.max(0, now - due)});
                    p.enqueue(firstId + batch * loadBatch, loadBatch);
                    loaded.addAndGet(loadBatch);
                }
            } catch (Exception e) {
                if (!stop.get()) {
                    System.out.println("  a load sender failed: " + e);
                }
            }
        };
        Thread t = new Thread(
                () -> {
                    List<Thread> senders = new ArrayList<>();
                    for (int i = 0; i < LOAD_SENDERS; i++) {
                        Thread s = new Thread(sender, "load-" + i);
                        s.start();
                        senders.add(s);
                    }
                    for (Thread s : senders) {
                        try {
                            s.join();
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                            return;
                        }
                    }
                },
                "load");
        t.start();
        return t;
    }

    private void latency(Peer p, String mode, Thread load) throws Exception {
        // A watch samples the schema's vacuums on its own thread: closed however the run ends.
        try (VacuumWatch vacuum = VacuumWatch.start(db, p.schema)) {
            latency(p, mode, load, vacuum);
        }
    }

    private void latency(Peer p, String mode, Thread load, VacuumWatch vacuum) throws Exception {
        int n = latencyProbes;
        long loaded0 = loaded.get();
        long ran0 = Sink.RUNS.get();
        long backlog0 = load == null ? 0 : p.remaining();
        long gc0 = gcMillis();
        long vacuums0 = vacuums(p.schema);
        List<StatementCounter.Snapshot> statements0 = p.counter.snapshot();
        Machine.Cpu cpu0 = Machine.Cpu.sample();
        Map<Long, ServerStatements.Counts> server0 =
                load != null && serverStatements ? ServerStatements.snapshot(db) : null;
        long start = System.nanoTime();
        long[] sent = new long[n];
        double[] calls = new double[n]; // how long each probe's enqueue call took, its commit included (ms)
        long base = -1_000_000L * (r.latency.size() + 1);
        for (int i = 0; i < n; i++) {
            Thread.sleep(ThreadLocalRandom.current().nextInt(20, 120));
            sent[i] = System.nanoTime();
            p.probe(base - i);
            calls[i] = (System.nanoTime() - sent[i]) / 1e6;
        }
        double[] callBySending = calls.clone();
        Arrays.sort(calls);
        long waitUntil = System.nanoTime() + 30_000_000_000L;
        while (System.nanoTime() < waitUntil) {
            int got = 0;
            for (int i = 0; i < n; i++) {
                if (Sink.PROBES.containsKey(base - i)) {
                    got++;
                }
            }
            if (got == n) {
                break;
            }
            Thread.sleep(20);
        }
        double elapsed = (System.nanoTime() - start) / 1e9;
        double loadRate = (loaded.get() - loaded0) / elapsed;
        double ranRate = (Sink.RUNS.get() - ran0) / elapsed;
        long backlog1 = load == null ? 0 : p.remaining();
        // A node with a backlog behind the load (one that grew through the run, or one left from the load's first
        // seconds that it barely works off) makes the probes wait behind it: their latencies then say how long
        // the backlog is, not how fast a job starts.
        boolean sustained = load == null || backlog1 <= loadRate * SUSTAINED_BACKLOG_SECONDS;
        String backlog = load == null
                ? ""
                : String.format(
                        Locale.ROOT,
                        ", run: %.0f jobs/s, jobs not finished at the first probe %,d and after the last %,d%s",
                        ranRate,
                        backlog0,
                        backlog1,
                        sustained ? "" : " (NOT SUSTAINED: a backlog behind the load)");
        if (!sustained) {
            r.notes.add(String.format(
                    Locale.ROOT,
                    "%s: NOT SUSTAINED under a load of %,.0f jobs/s: the node ran %,.0f jobs/s meanwhile and %,d jobs"
                            + " were not finished after the last probe (%,d at the first), so the latencies under"
                            + " load are the wait behind that backlog",
                    p.name(),
                    loadRate,
                    ranRate,
                    backlog1,
                    backlog0));
        }
        String cpu = Machine.Cpu.sample().since(cpu0);
        double[] l = new double[n];
        double[] byProbe = new double[n]; // in sending order; a probe that never started counts as infinite
        int k = 0;
        for (int i = 0; i < n; i++) {
            Long st = Sink.PROBES.get(base - i);
            byProbe[i] = st == null ? Double.POSITIVE_INFINITY : (st - sent[i]) / 1e6;
            if (st != null) {
                l[k++] = byProbe[i];
            }
        }
        double[] sorted = Arrays.copyOf(l, k);
        Arrays.sort(sorted);
        double p50 = JobsBenchmark.percentile(sorted, 50);
        double p99 = JobsBenchmark.percentile(sorted, 99);
        double max = k == 0 ? Double.NaN : sorted[k - 1];
        double callP50 = JobsBenchmark.percentile(calls, 50);
        double callP99 = JobsBenchmark.percentile(calls, 99);
        r.latency.add(new CompareResults.Latency(p.name(), mode, n, k, p50, p99, max, callP50, callP99, loadRate, cpu));
        System.out.printf(
                "%-42s latency %s: p50 %.1f ms, p99 %.1f ms, max %.1f ms (%d/%d started; of it the enqueue call: p50 %.1f"
                        + " ms, p99 %.1f ms)%s; meanwhile %s%n",
                p.name(),
                mode,
                p50,
                p99,
                max,
                k,
                n,
                callP50,
                callP99,
                load == null ? "" : String.format(", load enqueued meanwhile: %.0f jobs/s%s", loadRate, backlog),
                cpu);
        vacuum.close();
        if (load == null) {
            // Idle, where the slow starts are is the question: spread evenly (the machine) or bunched beside
            // something else that ran (a vacuum, a collection, the node's periodic statements).
            System.out.printf(
                    "%-42s   meanwhile: GC %d ms in this JVM, %d (auto)vacuums and analyzes of its tables; "
                            + "worst probe per 10 s of sending: %s; its tables being vacuumed per 10 s (s): %s; "
                            + "the slowest probes, ms (of it the enqueue call) at s from the first: %s%n",
                    "",
                    gcMillis() - gc0,
                    vacuums(p.schema) - vacuums0,
                    worstPerWindow(sent, start, byProbe, 10),
                    vacuum.secondsPerWindow(start, 10, (int) ((sent[n - 1] - start) / 10_000_000_000L) + 1),
                    slowest(sent, start, byProbe, callBySending, Math.max(1, n / 100)));
        } else {
            double secs = (System.nanoTime() - start) / 1e9;
            StringBuilder top = new StringBuilder();
            StatementCounter.delta(p.counter.snapshot(), statements0).stream()
                    .limit(4)
                    .forEach(x -> top.append(top.length() == 0 ? "" : "; ")
                            .append(String.format(
                                    "%.0f/s (%.1f rows, %.2f ms each) ",
                                    x.calls() / secs,
                                    (double) x.rows() / Math.max(1, x.calls()),
                                    x.nanos() / 1e6 / Math.max(1, x.calls())))
                            .append(shorten(x.label())));
            System.out.printf(
                    "%-42s   meanwhile: GC %d ms in this JVM, %d (auto)vacuums and analyzes of its tables; "
                            + "the node's statements: %s; worst probe per 10 s of sending: %s; "
                            + "its tables being vacuumed per 10 s (s): %s; "
                            + "the load's most behind its schedule per 10 s (ms): %s%n",
                    "",
                    gcMillis() - gc0,
                    vacuums(p.schema) - vacuums0,
                    top,
                    worstPerWindow(sent, start, byProbe, 10),
                    vacuum.secondsPerWindow(start, 10, (int) ((sent[n - 1] - start) / 10_000_000_000L) + 1),
                    worstLoadLag(start, 10));
            if (server0 != null) {
                System.out.printf("%-42s   the server's costliest statements meanwhile:%n", "");
                ServerStatements.costliest(server0, ServerStatements.snapshot(db), secs, SERVER_STATEMENTS)
                        .forEach(line -> System.out.printf("%-42s     %s%n", "", line));
            }
        }
    }

    /** Where slow starts cluster: the slowest probe (ms) among those sent in each window of {@code seconds}. */
    static String worstPerWindow(long[] sent, long start, double[] latencies, int seconds) {
        java.util.TreeMap<Long, Double> worst = new java.util.TreeMap<>();
        for (int i = 0; i < sent.length; i++) {
            worst.merge((sent[i] - start) / (seconds * 1_000_000_000L), latencies[i], Math::max);
        }
        StringBuilder b = new StringBuilder();
        worst.values().forEach(v -> b.append(b.length() == 0 ? "" : " ").append(String.format("%.0f", v)));
        return b.toString();
    }

    /** The {@code count} slowest probes: total and enqueue call (ms), and when each was sent (s from start). */
    static String slowest(long[] sent, long start, double[] latencies, double[] calls, int count) {
        Integer[] order = new Integer[sent.length];
        Arrays.setAll(order, i -> i);
        Arrays.sort(order, (a, b) -> Double.compare(latencies[b], latencies[a]));
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < Math.min(count, order.length); i++) {
            int k = order[i];
            b.append(b.length() == 0 ? "" : ", ")
                    .append(String.format(
                            Locale.ROOT, "%.1f (%.1f) at %.1f", latencies[k], calls[k], (sent[k] - start) / 1e9));
        }
        return b.toString();
    }

    /** The load thread's largest lag behind its schedule (ms) per window of {@code seconds} from {@code start}. */
    private String worstLoadLag(long start, int seconds) {
        List<long[]> lags = loadLag.stream().filter(x -> x[0] >= start).toList();
        long[] at = new long[lags.size()];
        double[] ms = new double[lags.size()];
        for (int i = 0; i < at.length; i++) {
            at[i] = lags.get(i)[0];
            ms[i] = lags.get(i)[1] / 1e6;
        }
        return worstPerWindow(at, start, ms, seconds);
    }

    private static long gcMillis() {
        return java.lang.management.ManagementFactory.getGarbageCollectorMXBeans().stream()
                .mapToLong(java.lang.management.GarbageCollectorMXBean::getCollectionTime)
                .sum();
    }

    private long vacuums(String schema) throws SQLException {
        try (Connection c = db.connect();
                PreparedStatement ps =
                        c.prepareStatement("SELECT coalesce(sum(autovacuum_count + autoanalyze_count), 0)"
                                + " FROM pg_stat_user_tables WHERE schemaname = ?")) {
            ps.setString(1, schema);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    private static String shorten(String label) {
        String l = label.replaceAll("\\s+", " ");
        return l.length() > 60 ? l.substring(0, 57) + "..." : l;
    }

    static long transactions(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                        "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()");
                ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        }
    }

    // ------------------------------------------------------------------ growth

    /**
     * Each pending backlog alone, then the first again beside {@code growthFinished} finished jobs; each loaded
     * once, warmed by one unrecorded sample, then measured {@code repeat} times, one node running a sample of it
     * each time (at most the backlog divided by repeat + 2, so the last measurement does not run dry).
     */
    private void growth(JobSystem s) throws Exception {
        try (Peer p = s.get()) {
            if (p instanceof Ceiling c && c.best) {
                return; // in the growth runs both ceilings claim 16 at a time: the plain ceiling's rows say it
            }
        }
        List<long[]> cases = new ArrayList<>();
        for (int pending : growthPending) {
            cases.add(new long[] {pending, 0});
        }
        if (growthPairs == 0) {
            cases.add(new long[] {growthPending.get(0), growthFinished});
        }
        // The JVM warmed first on a backlog of its own, not recorded: otherwise the cases measured later find a
        // hotter JIT than the first (seen without it: the first case about 20 % slower than the later ones).
        try (Peer p = s.get()) {
            p.install();
            if (p.bulk(0, growthSample * 4, false)) {
                for (int i = 0; i < 3; i++) {
                    growthSample(p, "warm-up", growthSample * 4L, 0, growthSample);
                }
            }
        }
        for (long[] cs : cases) {
            try (Peer p = s.get()) {
                p.install();
                long pending = cs[0];
                long finished = cs[1];
                long e0 = System.nanoTime();
                if (finished > 0 && !p.bulk(1_000_000_000L, (int) finished, true)) {
                    System.out.printf("%-42s growth: no finished jobs are retained (n/a)%n", p.name());
                    continue;
                }
                if (!p.bulk(0, (int) pending, false)) {
                    System.out.printf("%-42s growth: not measured (no bulk SQL path for its job format)%n", p.name());
                    return;
                }
                double loadSecs = (System.nanoTime() - e0) / 1e9;
                String backlog = finished > 0
                        ? String.format("%,d pending + %,d finished", pending, finished)
                        : String.format("%,d pending", pending);
                int sample = (int) Math.min(growthSample, pending / (repeat + 2));
                // One sample first, not recorded: the JIT and the server's caches warm, as in a node that has
                // been running for a while (the first case would otherwise pay for a cold JVM).
                growthSample(p, backlog, pending, finished, sample);
                for (int rep = 1; rep <= repeat; rep++) {
                    db.checkpoint();
                    CompareResults.Growth g = growthSample(p, backlog, pending, finished, sample);
                    r.growth.add(g);
                    System.out.printf(
                            "%-42s growth %s (loaded in %.1f s), run %d: %,.0f jobs/s over %,d jobs, claim %.2f ms [%s]%n",
                            p.name(), backlog, loadSecs, rep, g.rate(), sample, g.claimMs(), g.claimStatement());
                }
            }
        }
        if (growthPairs > 0) {
            growthPaired(s);
        }
    }

    /**
     * The first pending backlog alone (A) and beside {@code growthFinished} finished jobs (B), loaded side by side
     * in two schemas, measured in {@code growthPairs} pairs whose order alternates (AB, BA, AB, ...), so that a
     * drift of the machine within the run reaches both sides alike. Each pair's ratio B ÷ A is printed and recorded;
     * their median and range say how close the two are, at a resolution the separate cases do not reach.
     */
    private void growthPaired(JobSystem s) throws Exception {
        long pending = growthPending.get(0);
        int sample = (int) Math.min(growthSample, pending / (growthPairs + 2));
        try (Peer a = s.on("alone");
                Peer b = s.on("kept")) {
            a.install();
            b.install();
            long e0 = System.nanoTime();
            if (!b.bulk(1_000_000_000L, growthFinished, true)) {
                System.out.printf("%-42s growth pairs: no finished jobs are retained (n/a)%n", a.name());
                return;
            }
            if (!a.bulk(0, (int) pending, false) || !b.bulk(0, (int) pending, false)) {
                System.out.printf("%-42s growth pairs: not measured (no bulk SQL path)%n", a.name());
                return;
            }
            String alone = String.format("%,d pending, in pairs", pending);
            String kept = String.format("%,d pending + %,d finished, in pairs", pending, growthFinished);
            System.out.printf("%-42s growth pairs: loaded in %.1f s%n", a.name(), (System.nanoTime() - e0) / 1e9);
            growthSample(a, alone, pending, 0, sample);
            growthSample(b, kept, pending, growthFinished, sample);
            double[] rateRatio = new double[growthPairs];
            double[] claimRatio = new double[growthPairs];
            for (int i = 0; i < growthPairs; i++) {
                CompareResults.Growth ga = null;
                CompareResults.Growth gb = null;
                for (int side = 0; side < 2; side++) {
                    db.checkpoint();
                    if ((side == 0) == (i % 2 == 0)) {
                        ga = growthSample(a, alone, pending, 0, sample);
                    } else {
                        gb = growthSample(b, kept, pending, growthFinished, sample);
                    }
                }
                r.growth.add(ga);
                r.growth.add(gb);
                rateRatio[i] = gb.rate() / ga.rate();
                claimRatio[i] = gb.claimMs() / ga.claimMs();
                System.out.printf(
                        "%-42s growth pair %d (%s): alone %,.0f jobs/s, claim %.2f ms; kept %,.0f jobs/s, claim %.2f ms;"
                                + " kept ÷ alone %.3f / %.3f; job tables alone %s, kept %s%n",
                        a.name(),
                        i + 1,
                        i % 2 == 0 ? "AB" : "BA",
                        ga.rate(),
                        ga.claimMs(),
                        gb.rate(),
                        gb.claimMs(),
                        rateRatio[i],
                        claimRatio[i],
                        vacuumStats(a.schema),
                        vacuumStats(b.schema));
            }
            Arrays.sort(rateRatio);
            Arrays.sort(claimRatio);
            CompareResults.GrowthPairs gp =
                    new CompareResults.GrowthPairs(a.name(), pending, growthFinished, sample, rateRatio, claimRatio);
            r.growthPairs.add(gp);
            System.out.println(CompareReport.pairs(gp));
        }
    }

    /** Dead tuples and (auto)vacuum counts of the schema's job table, if it has one: what a claim wades through. */
    private String vacuumStats(String schema) {
        try (Connection c = db.connect();
                PreparedStatement ps = c.prepareStatement("SELECT n_dead_tup, vacuum_count + autovacuum_count,"
                        + " analyze_count + autoanalyze_count FROM pg_stat_user_tables"
                        + " WHERE schemaname = ? AND relname = 'job'")) {
            ps.setString(1, schema);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next()
                        ? String.format(
                                "[dead %,d, vacuums %d, analyzes %d]", rs.getLong(1), rs.getLong(2), rs.getLong(3))
                        : "[-]";
            }
        } catch (SQLException e) {
            return "[" + e.getMessage() + "]";
        }
    }

    /** One node started on a loaded backlog until it has run {@code sample} jobs: its rate and claim time. */
    private CompareResults.Growth growthSample(Peer p, String backlog, long pending, long finished, int sample)
            throws Exception {
        Sink.reset(sample);
        if (p instanceof Ceiling c) {
            c.batch = 16;
        }
        List<StatementCounter.Snapshot> s0 = p.counter.snapshot();
        AutoCloseable node = p.startNode(1);
        long deadline = System.nanoTime() + capSeconds * 1_000_000_000L;
        try {
            while (Sink.RUNS.get() < sample && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
        } finally {
            closeAll(List.of(node));
        }
        long first = Sink.FIRST.get();
        long last = Sink.LAST.get() != 0 ? Sink.LAST.get() : System.nanoTime();
        long done = Math.min(Sink.RUNS.get(), sample);
        double rate = done / ((last - first) / 1e9);
        double claimMs = Double.NaN;
        String claim = "";
        for (StatementCounter.Snapshot x : StatementCounter.delta(p.counter.snapshot(), s0)) {
            if (p.isClaim(x.label()) && Double.isNaN(claimMs)) {
                claimMs = x.avgMillis();
                claim = shorten(x.label());
            }
        }
        return new CompareResults.Growth(p.name(), backlog, pending, finished, sample, rate, claimMs, claim);
    }
}
