package dev.baton.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.baton.Baton;
import dev.baton.JobRequest;
import dev.baton.Jobs;
import dev.baton.WorkerConfig;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * The four measurements of {@code baton-bench jobs}. Each runs in a fresh schema of the same database;
 * schemas are dropped afterwards unless {@code --keep-schemas}.
 */
final class JobsBenchmark {
    static final String QUEUE = "bench";
    /** Before the idle window: longer than the node heartbeat (5 s) and the claim poll (5 s ± 20 %). */
    static final int IDLE_SETTLE_SECONDS = 8;
    /**
     * Candidate rows per claimed row in the ceiling's claims: 1, as Baton's producer binds them for a queue
     * whose claims come back full and keyless (decision 0028; 2 while it has keyed jobs). An experiment knob
     * for the ceiling only, not an option: -Dbench.candidateFactor=2 measures the keyed form.
     */
    static final int CANDIDATE_FACTOR = Integer.getInteger("bench.candidateFactor", 1);
    /** The progress poll of the throughput runs, as the brief of this benchmark asks. */
    static final long POLL_MS = 200;

    private static final String SUFFIX = Long.toHexString(System.currentTimeMillis() & 0xffffffL);

    private final Options o;
    private final Database db;
    private final Results results;
    private final List<String> schemas = new ArrayList<>();

    JobsBenchmark(Options o, Database db, Results results) {
        this.o = o;
        this.db = db;
        this.results = results;
    }

    void run() throws Exception {
        try {
            if (o.phases.contains("latency")) {
                latency();
            }
            if (o.phases.contains("idle")) {
                idle();
            }
            if (o.phases.contains("e2e")) {
                endToEnd();
            }
            if (o.phases.contains("ceiling")) {
                ceiling();
            }
        } finally {
            if (!o.keepSchemas) {
                schemas.forEach(db::dropSchema);
            }
        }
    }

    private String newSchema(String what) {
        String s = "bench_" + what + "_" + SUFFIX;
        db.dropSchema(s);
        schemas.add(s);
        return s;
    }

    // ------------------------------------------------------------------ phase 2: idle latency

    /** One node working queue 'bench', idle between jobs; its handler records when each job starts. */
    private final class IdleNode implements AutoCloseable {
        final String schema;
        final StatementCounter counter;
        final HikariDataSource pool;
        final Baton baton;
        final long[] starts;
        final BlockingQueue<Integer> started = new LinkedBlockingQueue<>();

        IdleNode(String schema, int maxJobs) {
            this.schema = schema;
            this.counter = new StatementCounter(schema);
            this.pool = db.pool("bench-idle-node", o.poolSize);
            this.starts = new long[maxJobs];
            this.baton = Baton.builder(counter.wrap(pool))
                    .schema(schema)
                    .nodeId("bench-idle-node")
                    .worker(WorkerConfig.builder().queue(QUEUE, o.concurrency).build())
                    .handle("bench.latency", Integer.class, (i, ctx) -> {
                        starts[i] = System.nanoTime();
                        started.add(i);
                    })
                    .build()
                    .start();
        }

        @Override
        public void close() {
            baton.close();
            pool.close();
        }
    }

    /** A node on a fresh schema of its own. */
    private IdleNode idleNode(String what, int maxJobs) throws SQLException {
        String schema = newSchema(what);
        migrate(schema);
        return new IdleNode(schema, maxJobs);
    }

    private void latency() throws Exception {
        System.out.printf(
                "%n== 2. idle enqueue-to-start latency: %d jobs one at a time (+%d warm-up), one idle node, enqueued: %s%n",
                o.latencyJobs, o.latencyWarmup, o.latencyEnqueue);
        try (IdleNode node = idleNode("lat", o.latencyJobs + o.latencyWarmup)) {
            latency(node);
        }
    }

    private void latency(IdleNode node) throws Exception {
        Results.Latency r = new Results.Latency();
        r.jobs = o.latencyJobs;
        r.warmup = o.latencyWarmup;
        r.gapMs = o.latencyGapMs;
        r.enqueueIn = o.latencyEnqueue;
        r.concurrency = o.concurrency;
        r.listening = node.baton.notificationsActive();
        List<StatementCounter.Snapshot> before = node.counter.snapshot();
        Machine.Cpu c0 = Machine.Cpu.sample();
        double[] latency = new double[o.latencyJobs];
        double[] enqueue = new double[o.latencyJobs];
        int n = 0;
        try (HikariDataSource clientPool = db.pool("bench-client", 2)) {
            FrameworkTransactions framework = o.latencyEnqueue.equals("own")
                    ? null
                    : new FrameworkTransactions(o.latencyEnqueue.equals("framework"));
            Baton.Builder client = Baton.builder(clientPool).schema(node.schema);
            Jobs jobs = (framework == null ? client : client.transactionBinding(framework))
                    .build()
                    .jobs();
            int total = o.latencyWarmup + o.latencyJobs;
            for (int i = 0; i < total; i++) {
                if (o.latencyGapMs > 0) {
                    // jittered, so enqueues do not lock into phase with the node's periodic work
                    Thread.sleep(ThreadLocalRandom.current().nextInt(o.latencyGapMs / 2, o.latencyGapMs * 3 / 2 + 1));
                }
                JobRequest job = JobRequest.of("bench.latency", i).queue(QUEUE);
                long t0 = System.nanoTime();
                if (framework == null) {
                    jobs.enqueue(job);
                } else {
                    framework.run(clientPool, () -> jobs.enqueue(job)); // until after the commit and its wake-up
                }
                long t1 = System.nanoTime();
                Integer got = node.started.poll(15, TimeUnit.SECONDS);
                if (got == null) {
                    r.timedOut++;
                    System.out.printf("  job %d did not start within 15 s%n", i);
                    continue;
                }
                if (got != i) {
                    throw new IllegalStateException("job " + got + " started while waiting for " + i);
                }
                if (i >= o.latencyWarmup) {
                    latency[n] = (node.starts[i] - t0) / 1e6;
                    enqueue[n] = (t1 - t0) / 1e6;
                    n++;
                }
            }
        }
        Machine.Cpu c1 = Machine.Cpu.sample();
        r.cpu = c1.since(c0);
        results.other("the latency run", c0, c1);
        double[] l = Arrays.copyOf(latency, n);
        double[] e = Arrays.copyOf(enqueue, n);
        Arrays.sort(l);
        Arrays.sort(e);
        r.p50 = percentile(l, 50);
        r.p90 = percentile(l, 90);
        r.p99 = percentile(l, 99);
        r.max = n == 0 ? Double.NaN : l[n - 1];
        r.mean = Arrays.stream(l).average().orElse(Double.NaN);
        r.enqueueP50 = percentile(e, 50);
        r.enqueueP99 = percentile(e, 99);
        r.over100ms = (int) Arrays.stream(l).filter(x -> x > 100).count();
        r.statements = StatementCounter.delta(node.counter.snapshot(), before);
        results.latency = r;
        System.out.printf(
                "  LISTEN active: %s; p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms "
                        + "(enqueue call alone: p50 %.2f ms); %d over 100 ms, %d timed out%n",
                r.listening, r.p50, r.p90, r.p99, r.max, r.enqueueP50, r.over100ms, r.timedOut);
    }

    /**
     * Binds job.claim's key to start after, at {@code from} and the two parameters after it, to the head of the claim
     * order ({@code JobStore.ClaimKey.HEAD}): the raw ceiling scans the ready index from its head every time.
     */
    static void bindFromHead(java.sql.PreparedStatement claim, int from) throws java.sql.SQLException {
        claim.setInt(from, -1);
        claim.setObject(from + 1, java.time.OffsetDateTime.parse("1970-01-01T00:00:00Z"));
        claim.setLong(from + 2, 0);
    }

    static double percentile(double[] sorted, double p) {
        if (sorted.length == 0) {
            return Double.NaN;
        }
        int rank = (int) Math.ceil(p / 100.0 * sorted.length); // nearest rank
        return sorted[Math.max(0, Math.min(sorted.length - 1, rank - 1))];
    }

    // ------------------------------------------------------------------ phase 4: idle load

    private void idle() throws Exception {
        System.out.printf(
                "%n== 4. idle load: one idle node (LISTEN), %d s window, pg_stat_database deltas%n", o.idleSeconds);
        try (IdleNode node = idleNode("idle", 1)) {
            idle(node);
        }
    }

    /**
     * A fresh node that has run no jobs: PostgreSQL 14 and older send a backend's statistics at most every
     * 500 ms and only at the end of a transaction, so counts left over from a burst (node start-up, or the
     * latency run) would be flushed into the window by the connection's next transaction. After the
     * settling time every connection the node uses periodically has reported its start-up work.
     */
    private void idle(IdleNode node) throws Exception {
        Results.Idle r = new Results.Idle();
        r.seconds = o.idleSeconds;
        r.settleSeconds = IDLE_SETTLE_SECONDS;
        Thread.sleep(IDLE_SETTLE_SECONDS * 1000L);
        r.listening = node.baton.notificationsActive();
        try (Connection mon = db.connect()) {
            long tx0 = transactions(mon);
            List<StatementCounter.Snapshot> s0 = node.counter.snapshot();
            Machine.Cpu c0 = Machine.Cpu.sample();
            long t0 = System.nanoTime();
            // Sampled every 10 s for the console, as a check that the window is steady (each sample is one
            // more measuring transaction, subtracted below).
            int samples = 0;
            long prev = tx0;
            for (int left = o.idleSeconds; left > 0; left -= 10) {
                Thread.sleep(Math.min(10, left) * 1000L);
                if (left > 10) {
                    long tx = transactions(mon);
                    samples++;
                    System.out.printf(
                            "    %3d s: %d transactions in the last 10 s%n", o.idleSeconds - left + 10, tx - prev - 1);
                    prev = tx;
                }
            }
            long tx1 = transactions(mon);
            long t1 = System.nanoTime();
            List<StatementCounter.Snapshot> s1 = node.counter.snapshot();
            Machine.Cpu c1 = Machine.Cpu.sample();
            r.cpu = c1.since(c0);
            results.other("the idle window", c0, c1);
            double secs = (t1 - t0) / 1e9;
            // the measuring queries' own transactions: the first one and the intermediate samples
            r.serverTransactions = tx1 - tx0 - 1 - samples;
            r.serverPerSecond = r.serverTransactions / secs;
            r.statements = StatementCounter.delta(s1, s0);
            r.batonStatements = StatementCounter.totalCalls(r.statements);
            r.batonPerSecond = r.batonStatements / secs;
            r.leader = leads(mon, node.schema, "bench-idle-node");
        }
        results.idle = r;
        System.out.printf(
                "  %.2f transactions/s on the database (pg_stat_database), %.2f statements/s issued by "
                        + "Baton (client-side count); node is maintenance leader: %s%n",
                r.serverPerSecond, r.batonPerSecond, r.leader);
        for (StatementCounter.Snapshot s : r.statements) {
            System.out.printf(
                    "    %-28s %4d calls  %.2f/s%n", s.label(), s.calls(), s.calls() / (double) o.idleSeconds);
        }
    }

    private static long transactions(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                        "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()");
                ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static boolean leads(Connection c, String schema, String node) {
        try (PreparedStatement ps = c.prepareStatement("SELECT owner_id FROM \"" + schema + "\".lease"
                + " WHERE name = ? AND expires_at > clock_timestamp()")) {
            ps.setString(1, "baton.maintenance");
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() && node.equals(rs.getString(1));
            }
        } catch (SQLException e) {
            return false;
        }
    }

    // ------------------------------------------------------------------ phase 1: end to end

    private void endToEnd() throws Exception {
        System.out.printf(
                "%n== 1. end to end: enqueueAll %,d jobs (batches of %d), then %d nodes × concurrency %d%n",
                o.jobs, o.batch, o.nodes, o.concurrency);
        String schema = newSchema("e2e");
        migrate(schema);
        Results.EndToEnd r = new Results.EndToEnd();
        r.jobs = o.jobs;
        r.nodes = o.nodes;
        r.concurrency = o.concurrency;
        r.poolSize = o.poolSize;
        r.batch = o.batch;
        db.checkpoint();
        double enqueueSecs = enqueue(schema, o.jobs, "bench.noop");
        r.enqueueSeconds = enqueueSecs;
        r.enqueueRate = o.jobs / enqueueSecs;
        System.out.printf("  enqueued in %.1f s: %,.0f jobs/s%n", enqueueSecs, r.enqueueRate);

        StatementCounter counter = new StatementCounter(schema);
        LongAdder handled = new LongAdder();
        List<HikariDataSource> pools = new ArrayList<>();
        List<Baton> nodes = new ArrayList<>();
        try (HikariDataSource clientPool = db.pool("bench-client", 2);
                Connection mon = db.connect()) {
            Jobs jobs = Baton.builder(clientPool).schema(schema).build().jobs();
            // Paused while the nodes start, so that the clock starts with every node ready.
            jobs.pause(QUEUE);
            for (int i = 1; i <= o.nodes; i++) {
                HikariDataSource pool = db.pool("bench-node-" + i, o.poolSize);
                pools.add(pool);
                Baton.Builder nb = Baton.builder(counter.wrap(pool));
                if (o.limit != null) {
                    nb.jobLimit(o.limit);
                }
                if (o.rate != null) {
                    nb.jobLimit(o.rate);
                }
                nodes.add(nb.schema(schema)
                        .nodeId("bench-node-" + i)
                        .worker(WorkerConfig.builder()
                                .queue(QUEUE, o.concurrency)
                                .build())
                        .handle("bench.noop", Integer.class, (p, ctx) -> handled.increment())
                        .build()
                        .start());
            }
            long listening = nodes.stream().filter(Baton::notificationsActive).count();
            System.out.printf(
                    "  %d nodes started (%d with LISTEN active); resuming the queue%n", nodes.size(), listening);
            db.checkpoint();
            List<StatementCounter.Snapshot> s0 = counter.snapshot();
            Map<String, Long> logs0 = LogWatch.snapshot();
            Machine.Cpu c0 = Machine.Cpu.sample();
            Machine.Threads th0 = Machine.Threads.sample();
            long cs0 = Machine.contextSwitches();
            long t0 = System.nanoTime();
            jobs.resume(QUEUE);
            notifyQueue(mon, schema);
            long deadline = t0 + o.timeLimitSeconds * 1_000_000_000L;
            long remaining = o.jobs;
            long t10 = 0;
            long t90 = 0;
            long lastPrint = t0;
            long now;
            long pollNanos = 0;
            while (true) {
                Thread.sleep(POLL_MS);
                long p0 = System.nanoTime();
                remaining = remainingJobs(mon, schema);
                now = System.nanoTime();
                pollNanos += now - p0;
                r.polls++;
                long running = runningJobs(mon, schema);
                r.maxRunningRows = Math.max(r.maxRunningRows, running);
                long done = o.jobs - remaining;
                if (t10 == 0 && done >= o.jobs / 10) {
                    t10 = now;
                }
                if (t90 == 0 && done >= o.jobs * 9L / 10) {
                    t90 = now;
                }
                if (now - lastPrint > 5_000_000_000L) {
                    System.out.printf(
                            "  %5.1f s: %,d of %,d succeeded; %,d rows in state 'running'%n",
                            (now - t0) / 1e9, done, o.jobs, running);
                    lastPrint = now;
                }
                if (remaining == 0 || now - deadline > 0) {
                    break;
                }
            }
            long cs1 = Machine.contextSwitches();
            r.contextSwitches = cs0 < 0 || cs1 < 0 ? -1 : cs1 - cs0;
            Machine.Cpu c1 = Machine.Cpu.sample();
            r.cpu = c1.since(c0);
            results.other("the end-to-end run", c0, c1);
            double[] per = Results.microsPerJob(c0, c1, o.jobs - remaining);
            r.jvmMicrosPerJob = per[0];
            r.pgMicrosPerJob = per[1];
            r.threadCores = Machine.Threads.sample().since(th0);
            r.pollAvgMs = pollNanos / 1e6 / Math.max(1, r.polls);
            r.statements = StatementCounter.delta(counter.snapshot(), s0);
            r.warnings = LogWatch.since(logs0);
            r.handlerRuns = handled.sum();
            attempts(mon, schema, r);
            r.runSeconds = (now - t0) / 1e9;
            r.completed = o.jobs - remaining;
            r.capped = remaining > 0;
            r.rate = r.completed / r.runSeconds;
            r.steadyRate = t90 > t10 ? (o.jobs * 9L / 10 - o.jobs / 10) / ((t90 - t10) / 1e9) : Double.NaN;
        } finally {
            closeAll(nodes);
            pools.forEach(HikariDataSource::close);
        }
        StatementCounter.Snapshot claim = StatementCounter.find(r.statements, "job.claim");
        StatementCounter.Snapshot complete = StatementCounter.find(r.statements, "job.complete");
        r.effectiveClaimBatch = claim.rowsPerNonEmptyCall();
        r.claimRowsPerCall = claim.rowsPerCall();
        r.completeRowsPerCall = complete.rowsPerCall();
        results.e2e = r;
        System.out.printf(
                "  %s%,d jobs succeeded in %.1f s: %,.0f jobs/s end to end (steady state 10%%→90%%: %,.0f jobs/s)%n",
                r.capped ? "CAPPED at --time-limit-seconds: " : "", r.completed, r.runSeconds, r.rate, r.steadyRate);
        System.out.printf(
                "  claims: %,d (%,d empty), %.1f jobs per non-empty claim, %.2f ms each; completions: %,d, "
                        + "%.1f jobs each, %.2f ms each%n",
                claim.calls(),
                claim.emptyCalls(),
                r.effectiveClaimBatch,
                claim.avgMillis(),
                complete.calls(),
                r.completeRowsPerCall,
                complete.avgMillis());
        System.out.printf(
                "  CPU: %s; per job: JVM %.0f µs, PostgreSQL %.0f µs; the progress query took %.1f ms on "
                        + "average (%d polls)%n",
                r.cpu, r.jvmMicrosPerJob, r.pgMicrosPerJob, r.pollAvgMs, r.polls);
        if (r.contextSwitches >= 0) {
            System.out.printf(
                    "  context switches of this JVM's threads: %,d (%.1f per job)%n",
                    r.contextSwitches, r.contextSwitches / (double) Math.max(1, r.completed));
        }
        System.out.print("  JVM threads (cores):");
        r.threadCores.stream().limit(8).forEach(e -> System.out.printf(" %s %.3f;", e.getKey(), e.getValue()));
        System.out.println();
        System.out.printf(
                "  at most %,d rows in state 'running' at once; handler runs %,d, attempts %,d, jobs attempted "
                        + "more than once %,d, stalls (expired leases rescued) %,d; Baton log lines: %s%n",
                r.maxRunningRows,
                r.handlerRuns,
                r.attempts,
                r.jobsAttemptedMoreThanOnce,
                r.stalls,
                r.warnings.isEmpty() ? "none" : r.warnings);
        if (o.limit != null || o.rate != null) {
            limitsReport(schema, r, claim);
        }
        db.dropSchema(schema);
    }

    /**
     * With --limit or --rate: the claim cost of the limited path and how closely the limits held, from
     * the jobs' own attempt times (database clock): the most attempts [attempted_at, finished_at) that
     * overlapped per limited scope, and the most starts in one rate window.
     */
    private void limitsReport(String schema, Results.EndToEnd r, StatementCounter.Snapshot plainClaim)
            throws SQLException {
        StatementCounter.Snapshot lock = StatementCounter.find(r.statements, "job.lock_limits");
        StatementCounter.Snapshot limited = StatementCounter.find(r.statements, "job.claim_limited");
        StatementCounter.Snapshot claim = limited.calls() > 0 ? limited : plainClaim;
        String v = o.limitKey == null ? "''" : "metadata ->> '" + o.limitKey.replace("'", "''") + "'";
        String q = "\"" + schema + "\".job";
        long maxOverlap;
        long maxStarts = -1;
        try (Connection c = db.connect()) {
            maxOverlap = single(
                    c,
                    "WITH ev AS (SELECT attempted_at AS at, 1 AS d, " + v + " AS v FROM " + q
                            + " UNION ALL SELECT finished_at, -1, " + v + " FROM " + q
                            + ") SELECT coalesce(max(n), 0) FROM ("
                            + "SELECT sum(d) OVER (PARTITION BY v ORDER BY at, d ROWS UNBOUNDED PRECEDING) AS n FROM ev) s");
            if (o.rate != null) {
                maxStarts = single(
                        c,
                        "SELECT coalesce(max(n), 0) FROM (SELECT count(*) OVER (ORDER BY attempted_at"
                                + " RANGE BETWEEN CURRENT ROW AND interval '"
                                + (o.rate.window().orElseThrow().toNanos() / 1000 - 1)
                                + " microseconds' FOLLOWING) AS n FROM " + q + ") s");
            }
        }
        double claimMs = (lock.nanos() + claim.nanos()) / 1e6 / Math.max(1, claim.calls());
        System.out.printf(
                "  LIMITS limit=%s rate=%s jobs/s=%.0f steady=%.0f claim-ms=%.3f (lock %.3f) jobs/claim=%.1f "
                        + "max-overlap-per-scope=%d max-starts-per-window=%d%n",
                o.limit,
                o.rate,
                r.rate,
                r.steadyRate,
                claimMs,
                lock.avgMillis(),
                claim.rowsPerNonEmptyCall(),
                maxOverlap,
                maxStarts);
    }

    private static long single(Connection c, String sql) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql);
                ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /**
     * Wakes the nodes after {@code resume} (which does not notify). The channel and payload mirror
     * {@code JobStore.channel(schema)} = schema + ".job" and the queue name, as enqueue sends them.
     */
    private static void notifyQueue(Connection mon, String schema) throws SQLException {
        try (PreparedStatement ps = mon.prepareStatement("SELECT pg_notify(?, ?)")) {
            ps.setString(1, schema + ".job");
            ps.setString(2, QUEUE);
            ps.execute();
        }
    }

    private static long remainingJobs(Connection c, String schema) throws SQLException {
        try (PreparedStatement ps =
                        c.prepareStatement("SELECT count(*) FROM \"" + schema + "\".job WHERE state <> 'succeeded'");
                ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /** Rows in state 'running' (claimed, outcome not yet recorded): through the small partial index job_running_lease. */
    private static long runningJobs(Connection c, String schema) throws SQLException {
        try (PreparedStatement ps =
                        c.prepareStatement("SELECT count(*) FROM \"" + schema + "\".job WHERE state = 'running'");
                ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /** Jobs that ran more than once (their first attempt's lease expired before its outcome was recorded). */
    private static void attempts(Connection c, String schema, Results.EndToEnd r) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT count(*) FILTER (WHERE attempt > 1), "
                        + "coalesce(sum(stall_count), 0), coalesce(sum(attempt), 0) FROM \"" + schema + "\".job");
                ResultSet rs = ps.executeQuery()) {
            rs.next();
            r.jobsAttemptedMoreThanOnce = rs.getLong(1);
            r.stalls = rs.getLong(2);
            r.attempts = rs.getLong(3);
        }
    }

    private static void closeAll(List<Baton> nodes) throws InterruptedException {
        ExecutorService ex = Executors.newFixedThreadPool(Math.max(1, nodes.size()));
        List<Future<?>> fs = new ArrayList<>();
        for (Baton b : nodes) {
            fs.add(ex.submit(b::close));
        }
        for (Future<?> f : fs) {
            try {
                f.get(60, TimeUnit.SECONDS);
            } catch (Exception e) {
                System.out.println("  (closing a node failed: " + e + ")");
            }
        }
        ex.shutdownNow();
    }

    /** Enqueues {@code n} no-op jobs with {@code Jobs.enqueueAll} in batches from one thread; returns seconds. */
    private double enqueue(String schema, int n, String kind) {
        try (HikariDataSource pool = db.pool("bench-enqueue", 2)) {
            Jobs jobs = Baton.builder(pool).schema(schema).build().jobs();
            long t0 = System.nanoTime();
            for (int start = 0; start < n; start += o.batch) {
                int end = Math.min(n, start + o.batch);
                List<JobRequest> batch = new ArrayList<>(end - start);
                for (int i = start; i < end; i++) {
                    JobRequest r = JobRequest.of(kind, i).queue(QUEUE);
                    batch.add(o.limitKey == null ? r : r.metadata(o.limitKey, "k" + (i % o.keys)));
                }
                jobs.enqueueAll(batch);
            }
            return (System.nanoTime() - t0) / 1e9;
        }
    }

    private void migrate(String schema) throws SQLException {
        try (HikariDataSource pool = db.pool("bench-migrate", 1)) {
            Baton.migrate(pool, schema);
        }
    }

    // ------------------------------------------------------------------ phase 3: raw-SQL ceiling

    private void ceiling() throws Exception {
        TreeSet<Integer> batches = new TreeSet<>(o.ceilingBatches);
        Integer baton = null;
        if (results.e2e != null && results.e2e.effectiveClaimBatch >= 1) {
            baton = (int) Math.round(results.e2e.effectiveClaimBatch);
            batches.add(baton);
        }
        System.out.printf(
                "%n== 3. raw-SQL ceiling: job.sql's claim + complete from %d threads, batches %s%s%n",
                o.ceilingThreads(), batches, baton == null ? "" : " (" + baton + " = Baton's effective claim batch)");
        if (CANDIDATE_FACTOR != 2) {
            results.notes.add("EXPERIMENT: the ceiling's claim locked limit × " + CANDIDATE_FACTOR + " candidate rows "
                    + "(-Dbench.candidateFactor), not limit × 2 as JobStore.claim does.");
        }
        for (int b : batches) {
            Results.Ceiling c = ceilingRun(b);
            c.baton = baton != null && b == baton;
            results.ceilings.add(c);
        }
    }

    private Results.Ceiling ceilingRun(int batch) throws Exception {
        String schema = newSchema("raw" + batch);
        migrate(schema);
        Results.Ceiling r = new Results.Ceiling();
        r.batch = batch;
        r.threads = o.ceilingThreads();
        r.jobs = o.jobs;
        db.checkpoint();
        r.enqueueRate = o.jobs / enqueue(schema, o.jobs, "bench.raw");
        Map<String, String> sql = BatonSql.load("job", schema);
        String claimSql = sql.get("claim");
        String completeSql = sql.get("complete");
        long leaseMs = WorkerConfig.DEFAULT_JOB_LEASE.toMillis();
        db.checkpoint();

        AtomicLong completed = new AtomicLong();
        LongAdder claims = new LongAdder();
        LongAdder claimNanos = new LongAdder();
        LongAdder completes = new LongAdder();
        LongAdder completeNanos = new LongAdder();
        AtomicBoolean capped = new AtomicBoolean();
        CountDownLatch go = new CountDownLatch(1);
        List<Thread> threads = new ArrayList<>();
        List<Throwable> errors = new java.util.concurrent.CopyOnWriteArrayList<>();
        long[] deadline = new long[1];
        for (int t = 0; t < r.threads; t++) {
            String owner = "raw-client-" + t;
            Connection c = db.connect();
            Thread th = new Thread(
                    () -> {
                        try (c;
                                PreparedStatement claim = c.prepareStatement(claimSql);
                                PreparedStatement complete = c.prepareStatement(completeSql)) {
                            go.await();
                            Long[] ids = new Long[batch];
                            Long[] tokens = new Long[batch];
                            Array kinds = c.createArrayOf("text", new String[] {"bench.raw"});
                            while (true) {
                                if (System.nanoTime() - deadline[0] > 0) {
                                    capped.set(true);
                                    return;
                                }
                                // As JobStore.claim binds them, from the head of the claim order: queue, kinds,
                                // queue, the key to start after, limit*2, limit, job_lease_ms, node_id.
                                claim.setString(1, QUEUE);
                                claim.setArray(2, kinds);
                                claim.setString(3, QUEUE);
                                bindFromHead(claim, 4);
                                claim.setInt(7, batch * CANDIDATE_FACTOR);
                                claim.setInt(8, batch);
                                claim.setLong(9, leaseMs);
                                claim.setString(10, owner);
                                int n = 0;
                                long c0 = System.nanoTime();
                                try (ResultSet rs = claim.executeQuery()) {
                                    while (rs.next()) {
                                        ids[n] = rs.getLong("id");
                                        tokens[n] = rs.getLong("attempt_token");
                                        n++;
                                    }
                                }
                                claimNanos.add(System.nanoTime() - c0);
                                claims.increment();
                                if (n == 0) {
                                    return; // every ready job is claimed (locked ones belong to the other threads)
                                }
                                Array idArr = c.createArrayOf("int8", Arrays.copyOf(ids, n));
                                Array tokArr = c.createArrayOf("int8", Arrays.copyOf(tokens, n));
                                complete.setArray(1, idArr);
                                complete.setArray(2, tokArr);
                                int done = 0;
                                long k0 = System.nanoTime();
                                try (ResultSet rs = complete.executeQuery()) {
                                    while (rs.next()) {
                                        done++;
                                    }
                                }
                                completeNanos.add(System.nanoTime() - k0);
                                completes.increment();
                                completed.addAndGet(done);
                            }
                        } catch (Throwable e) {
                            errors.add(e);
                        }
                    },
                    "raw-client-" + t);
            th.start();
            threads.add(th);
        }
        Machine.Cpu c0 = Machine.Cpu.sample();
        long t0 = System.nanoTime();
        deadline[0] = t0 + o.timeLimitSeconds * 1_000_000_000L;
        go.countDown();
        // The same progress poll as in the end-to-end run, so that both pay for it; here it decides nothing.
        long pollNanos = 0;
        try (Connection mon = db.connect()) {
            while (threads.stream().anyMatch(Thread::isAlive)) {
                threads.get(0).join(POLL_MS);
                if (threads.stream().anyMatch(Thread::isAlive)) {
                    long p0 = System.nanoTime();
                    remainingJobs(mon, schema);
                    pollNanos += System.nanoTime() - p0;
                    r.polls++;
                }
            }
        }
        for (Thread th : threads) {
            th.join();
        }
        long t1 = System.nanoTime();
        r.pollAvgMs = pollNanos / 1e6 / Math.max(1, r.polls);
        Machine.Cpu c1 = Machine.Cpu.sample();
        r.cpu = c1.since(c0);
        results.other("the ceiling run at batch " + batch, c0, c1);
        double[] per = Results.microsPerJob(c0, c1, completed.get());
        r.jvmMicrosPerJob = per[0];
        r.pgMicrosPerJob = per[1];
        if (!errors.isEmpty()) {
            throw new IllegalStateException("raw-SQL client failed: " + errors.get(0), errors.get(0));
        }
        r.seconds = (t1 - t0) / 1e9;
        r.completed = completed.get();
        r.capped = capped.get();
        r.rate = r.completed / r.seconds;
        r.claims = claims.sum();
        r.claimAvgMs = claimNanos.sum() / 1e6 / Math.max(1, r.claims);
        r.completes = completes.sum();
        r.completeAvgMs = completeNanos.sum() / 1e6 / Math.max(1, r.completes);
        try (Connection mon = db.connect()) {
            long left = remainingJobs(mon, schema);
            if (left != 0 && !r.capped) {
                throw new IllegalStateException(left + " jobs not succeeded after the raw-SQL run at batch " + batch);
            }
        }
        System.out.printf(
                "  batch %4d: %,d jobs in %.1f s = %,.0f jobs/s%s (claim %.2f ms, complete %.2f ms; "
                        + "enqueue %,.0f jobs/s; progress query %.1f ms); CPU: %s; per job: JVM %.0f µs, PostgreSQL "
                        + "%.0f µs%n",
                batch,
                r.completed,
                r.seconds,
                r.rate,
                r.capped ? " (CAPPED)" : "",
                r.claimAvgMs,
                r.completeAvgMs,
                r.enqueueRate,
                r.pollAvgMs,
                r.cpu,
                r.jvmMicrosPerJob,
                r.pgMicrosPerJob);
        db.dropSchema(schema);
        return r;
    }
}
