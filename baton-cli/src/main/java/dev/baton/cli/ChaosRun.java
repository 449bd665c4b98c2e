package dev.baton.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.baton.Baton;
import dev.baton.cli.ChaosPlan.Fault;
import dev.baton.cli.ChaosPlan.Kind;
import dev.baton.testkit.FaultProxy;
import dev.baton.testkit.JdbcUrls;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * One run of {@code baton chaos}: database, node processes behind their own fault proxies, the seeded
 * fault schedule, healing, a liveness check, the checker and the report.
 *
 * <p>Faults are started on a scheduler at their planned offsets and healed by a task scheduled at the
 * fault's end; sleeps only pace the schedule (this is a tool, not a test). Waiting for the nodes and for
 * progress polls the database with generous time-outs, so a slow machine makes the run slower, not wrong.
 */
final class ChaosRun {
    /** The nodes' lease TTL; the plan sizes its pauses from it. */
    static final Duration LEASE_TTL = Duration.ofSeconds(2);

    private static final Duration RENEW = Duration.ofMillis(400);
    private static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(90);
    private static final Duration PROGRESS_TIMEOUT = Duration.ofSeconds(60);
    private static final Duration STATUS_EVERY = Duration.ofSeconds(5);
    /** How long the supervisor waits before it restarts a node that exited on its own (systemd's is 100 ms). */
    private static final Duration SUPERVISOR_DELAY = Duration.ofSeconds(1);

    private final ChaosCommand opt;
    private final ChaosPlan plan;
    private final PrintWriter out;
    private final long t0 = System.nanoTime();

    private final Map<Kind, Integer> injected = new EnumMap<>(Kind.class); // guarded by itself
    private int skipped; // guarded by injected
    private final List<String> faultErrors = new CopyOnWriteArrayList<>();
    private final Map<String, CountDownLatch> ready = new ConcurrentHashMap<>();
    // The run is the nodes' supervisor: a process that ends without this run stopping it is restarted, as
    // systemd or Kubernetes would. A node exits on its own only when it cannot start (the database is out of
    // reach, e.g. in a black hole): that is reported. An exit after READY is a crash, and fails the run.
    private final Set<Long> stoppedByRun = ConcurrentHashMap.newKeySet();
    private final Set<Long> readyPids = ConcurrentHashMap.newKeySet();
    private final List<String> supervisorRestarts = new CopyOnWriteArrayList<>();
    private final List<String> crashes = new CopyOnWriteArrayList<>();
    private volatile boolean finishing;
    private final Map<String, FaultProxy> proxies = new LinkedHashMap<>();
    private final List<Future<?>> begun = new ArrayList<>();
    private final ScheduledExecutorService scheduler = Executors.newScheduledThreadPool(4, r -> {
        Thread t = new Thread(r, "baton-chaos-faults");
        t.setDaemon(true);
        return t;
    });
    private final ScheduledExecutorService supervisor = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "baton-chaos-supervisor");
        t.setDaemon(true);
        return t;
    });

    private EmbeddedServer server;
    private HikariDataSource ds;
    private NodeFleet fleet;
    private String url;
    private Path logs;

    ChaosRun(ChaosCommand opt, ChaosPlan plan, PrintWriter out) {
        this.opt = opt;
        this.plan = plan;
        this.out = out;
    }

    int run() throws Exception {
        Thread hook = new Thread(this::cleanup, "baton-chaos-cleanup");
        Runtime.getRuntime().addShutdownHook(hook);
        try {
            setUp();
            Progress before = progress();
            runPlan();
            heal();
            Progress healed = progress();
            say("every fault healed; waiting for progress (ledger rows, job effects, ticks)");
            Progress after = awaitProgress(healed);
            finishing = true;
            fleet.stopAll(Duration.ofSeconds(30));
            return verifyAndReport(before, healed, after);
        } finally {
            cleanup();
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException e) {
                // already shutting down
            }
        }
    }

    // ------------------------------------------------------------------------------------------ set-up

    private void setUp() throws IOException, SQLException, InterruptedException {
        say("seed " + plan.seed() + ": " + plan.faults().size() + " faults over " + Durations.human(plan.duration())
                + " against " + plan.nodes() + " nodes " + counts(plan.counts()));
        if (opt.jdbcUrl == null) {
            say("starting an embedded PostgreSQL (the first run unpacks it, which takes a few seconds)");
            server = EmbeddedServer.start();
            url = server.jdbcUrl();
        } else {
            url = opt.jdbcUrl;
        }
        ds = Db.pool(url, "baton-chaos", 3);
        prepareSchema();
        logs = opt.logDir != null ? Files.createDirectories(opt.logDir) : Files.createTempDirectory("baton-chaos-");
        say("node logs: " + logs);
        JdbcUrls.HostPort target = JdbcUrls.hostPort(url);
        fleet = new NodeFleet(logs, this::nodeArgs, new NodeFleet.Listener() {
            @Override
            public void line(NodeFleet.Node node, long pid, String line) {
                if (line.startsWith("READY")) {
                    readyPids.add(pid);
                    ready.computeIfAbsent(node.id, k -> new CountDownLatch(1)).countDown();
                }
            }

            @Override
            public void exited(NodeFleet.Node node, long pid, int exitCode) {
                supervise(node, pid, exitCode);
            }
        });
        for (int i = 1; i <= plan.nodes(); i++) {
            String id = "node-" + i;
            FaultProxy proxy = FaultProxy.start(target.host(), target.port());
            proxies.put(id, proxy);
            fleet.add(id, JdbcUrls.via(url, "127.0.0.1", proxy.port()));
        }
        for (NodeFleet.Node n : fleet.nodes()) {
            awaitReady(n);
        }
        say(plan.nodes() + " nodes ready; faults start in " + Durations.human(ChaosPlan.WARM_UP));
    }

    private List<String> nodeArgs(NodeFleet.Node n) {
        return List.of(
                "--node-id",
                n.id,
                "--schema",
                opt.schema,
                "--workload",
                "verify",
                "--ttl",
                LEASE_TTL.toMillis() + "ms",
                "--renew",
                RENEW.toMillis() + "ms",
                "--exit-on-stdin-eof");
    }

    private void prepareSchema() throws SQLException {
        try (Connection c = ds.getConnection();
                Statement s = c.createStatement()) {
            boolean exists;
            try (ResultSet rs =
                    s.executeQuery("SELECT count(*) FROM pg_namespace WHERE nspname = '" + opt.schema + "'")) {
                rs.next();
                exists = rs.getLong(1) > 0;
            }
            if (exists && opt.reset) {
                s.execute("DROP SCHEMA \"" + opt.schema + "\" CASCADE");
                say("dropped schema '" + opt.schema + "' (--reset)");
            } else if (exists) {
                try (ResultSet rs =
                        s.executeQuery("SELECT count(*) FROM pg_tables WHERE schemaname = '" + opt.schema + "'")) {
                    rs.next();
                    if (rs.getLong(1) > 0) {
                        throw CliException.usage("schema '" + opt.schema + "' already has tables; a chaos run starts "
                                + "from an empty schema: pass --reset to drop it, or choose another --schema");
                    }
                }
            }
        }
        Baton.migrate(ds, opt.schema);
        VerifyWorkload.install(ds, opt.schema);
    }

    /** Waits for the node's READY line; a supervisor restart in between replaces the latch, so it is read again. */
    private void awaitReady(NodeFleet.Node n) throws InterruptedException {
        long deadline = System.nanoTime() + STARTUP_TIMEOUT.toNanos();
        while (!ready.computeIfAbsent(n.id, k -> new CountDownLatch(1)).await(200, TimeUnit.MILLISECONDS)) {
            if (System.nanoTime() > deadline) {
                throw new CliException(
                        Main.EXIT_USAGE,
                        n.id + " did not become ready within " + Durations.human(STARTUP_TIMEOUT) + "; see "
                                + fleet.log(n));
            }
        }
    }

    /** A node process ended: nothing to do if this run stopped it; otherwise restart it as a supervisor would. */
    private void supervise(NodeFleet.Node n, long pid, int exitCode) {
        if (finishing || stoppedByRun.remove(pid)) {
            return;
        }
        String what = n.id + " (pid " + pid + ") exited on its own with code " + exitCode;
        if (readyPids.contains(pid)) {
            crashes.add(what + " after it was ready; see " + fleet.log(n));
            say("CRASH     " + what + " after it was ready; restarting it in " + Durations.human(SUPERVISOR_DELAY));
        } else {
            supervisorRestarts.add(what + " during start-up");
            say("supervisor: " + what + " during start-up (see its log); restarting it in "
                    + Durations.human(SUPERVISOR_DELAY));
        }
        supervisor.schedule(
                () -> {
                    try {
                        restart(n);
                    } catch (IOException | IllegalStateException e) {
                        if (!finishing) {
                            faultErrors.add("restarting " + n.id + " after it exited: " + Db.rootMessage(e));
                        }
                    }
                },
                SUPERVISOR_DELAY.toMillis(),
                TimeUnit.MILLISECONDS);
    }

    // ------------------------------------------------------------------------------------------ faults

    private void runPlan() throws InterruptedException {
        long start = System.nanoTime();
        for (Fault f : plan.faults()) {
            begun.add(scheduler.schedule(() -> begin(f), f.at().toMillis(), TimeUnit.MILLISECONDS));
        }
        long end = start + plan.duration().minus(ChaosPlan.QUIET_TAIL).toNanos();
        long nextStatus = start + STATUS_EVERY.toNanos();
        Progress last = null;
        while (System.nanoTime() < end) {
            Thread.sleep(Math.min(200, Math.max(1, (end - System.nanoTime()) / 1_000_000))); // pacing only
            if (System.nanoTime() >= nextStatus) {
                nextStatus += STATUS_EVERY.toNanos();
                last = status(start, last);
            }
        }
    }

    private void begin(Fault f) {
        NodeFleet.Node n = f.node() < 0 ? null : fleet.node("node-" + (f.node() + 1));
        boolean needsProcess = switch (f.kind()) {
            case PAUSE, KILL, GRACEFUL_RESTART, TERMINATE_BACKEND -> true;
            default -> false;
        };
        if (needsProcess && (!n.alive() || n.paused)) {
            // An earlier fault on this node ran late (a slow SIGTERM): its process is not there to hit.
            synchronized (injected) {
                skipped++;
            }
            say("skipped   " + f.describe().trim() + " (" + n.id + " is " + (n.paused ? "paused" : "down") + ")");
            return;
        }
        say("FAULT " + f.describe());
        try {
            switch (f.kind()) {
                case PAUSE -> {
                    fleet.pause(n);
                    later(f, () -> fleet.resume(n));
                }
                case KILL -> {
                    stoppedByRun.add(n.pid());
                    fleet.kill(n);
                    later(f, () -> restart(n));
                }
                case GRACEFUL_RESTART -> {
                    stoppedByRun.add(n.pid());
                    fleet.stop(n, Duration.ofSeconds(20));
                    later(f, () -> restart(n));
                }
                case TERMINATE_BACKEND -> {
                    if (!terminateBackend(n)) {
                        // Nodes hold no connection between calls: right after a restart of PostgreSQL there
                        // may be no client session at all, and then there is nothing to hit.
                        synchronized (injected) {
                            skipped++;
                        }
                        say("skipped   " + f.describe().trim() + " (no client session open at that moment)");
                        return;
                    }
                }
                case BLACK_HOLE -> {
                    proxies.get(n.id).blackHole();
                    later(f, () -> proxies.get(n.id).heal());
                }
                case LATENCY -> {
                    proxies.get(n.id).latency(f.latency());
                    later(f, () -> proxies.get(n.id).latency(Duration.ZERO));
                }
                case DB_RESTART -> server.restart(f.length());
            }
            synchronized (injected) {
                injected.merge(f.kind(), 1, Integer::sum);
            }
        } catch (Exception e) {
            faultErrors.add(f.describe().trim() + ": " + Db.rootMessage(e));
            say("fault could not be injected: " + f.describe().trim() + ": " + Db.rootMessage(e));
        }
    }

    @FunctionalInterface
    private interface Action {
        void run() throws Exception;
    }

    private void later(Fault f, Action heal) {
        scheduler.schedule(
                () -> {
                    try {
                        heal.run();
                    } catch (Exception e) {
                        faultErrors.add("healing " + f.describe().trim() + ": " + Db.rootMessage(e));
                    }
                },
                f.length().toMillis(),
                TimeUnit.MILLISECONDS);
    }

    /** Starts the node again unless it already runs (two overlapping faults' healings). */
    private void restart(NodeFleet.Node n) throws IOException {
        synchronized (n) {
            if (!n.alive()) {
                ready.put(n.id, new CountDownLatch(1));
                fleet.start(n);
            }
        }
    }

    /**
     * Terminates one of the node's sessions (by application name), or any other client session if none is
     * found; false when no client session is open at all.
     */
    private boolean terminateBackend(NodeFleet.Node n) throws SQLException {
        try (Connection c = ds.getConnection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT pg_terminate_backend(pid) FROM ("
                        + " SELECT pid FROM pg_stat_activity"
                        + " WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
                        + " ORDER BY (application_name LIKE '%" + n.id + "%') DESC, random() LIMIT 1) x")) {
            return rs.next();
        }
    }

    /** Ends every fault: SIGCONT, proxies healed, dead nodes restarted; waits until all are ready again. */
    private void heal() throws InterruptedException, IOException {
        for (Future<?> f : begun) {
            try {
                f.get(); // a fault that began late (a slow SIGTERM) schedules its healing before the shutdown below
            } catch (ExecutionException e) {
                faultErrors.add("fault task failed: " + Db.rootMessage(e.getCause()));
            }
        }
        scheduler.shutdown(); // healing tasks already scheduled still run
        if (!scheduler.awaitTermination(30, TimeUnit.SECONDS)) {
            faultErrors.add("fault scheduler did not finish within 30 s");
        }
        proxies.values().forEach(FaultProxy::resetAll);
        for (NodeFleet.Node n : fleet.nodes()) {
            if (n.paused) {
                fleet.resume(n);
            }
            if (!n.alive()) {
                restart(n);
            }
        }
        for (NodeFleet.Node n : fleet.nodes()) {
            awaitReady(n);
        }
    }

    // ------------------------------------------------------------------------------------------ progress

    /** What the workload has recorded so far, read straight from its tables. */
    record Progress(long ledgerRows, long enqueued, long effects, long ticks, String leader, long generation) {}

    private Progress progress() {
        String q = "\"" + opt.schema + "\".";
        try (Connection c = ds.getConnection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT"
                        + " (SELECT count(*) FROM " + q + "verify_ledger),"
                        + " (SELECT count(*) FROM " + q + "verify_enqueued),"
                        + " (SELECT count(*) FROM " + q + "verify_effect),"
                        + " (SELECT count(*) FROM " + q + "verify_tick),"
                        + " (SELECT owner_id FROM " + q + "lease WHERE name = 'verify-leader'),"
                        + " (SELECT generation FROM " + q + "lease WHERE name = 'verify-leader')")) {
            rs.next();
            return new Progress(
                    rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4), rs.getString(5), rs.getLong(6));
        } catch (SQLException e) {
            return null; // e.g. while the database restarts
        }
    }

    private Progress status(long start, Progress last) {
        Progress p = progress();
        if (p == null) {
            say(String.format(Locale.ROOT, "t+%-5s database unreachable", secs(System.nanoTime() - start)));
            return last;
        }
        long effectsPerSec = last == null ? 0 : (p.effects() - last.effects()) / Math.max(1, STATUS_EVERY.toSeconds());
        int faults;
        synchronized (injected) {
            faults = injected.values().stream().mapToInt(Integer::intValue).sum();
        }
        say(String.format(
                Locale.ROOT,
                "t+%-5s leader %-7s g%-4d ledger %-6d jobs %d/%d done (%d/s)  ticks %-4d faults %d/%d",
                secs(System.nanoTime() - start),
                p.leader() == null ? "-" : p.leader(),
                p.generation(),
                p.ledgerRows(),
                p.effects(),
                p.enqueued(),
                effectsPerSec,
                p.ticks(),
                faults,
                plan.faults().size()));
        return p;
    }

    private Progress awaitProgress(Progress healed) throws InterruptedException {
        long deadline = System.nanoTime() + PROGRESS_TIMEOUT.toNanos();
        while (System.nanoTime() < deadline) {
            Progress p = progress();
            if (healed != null
                    && p != null
                    && p.ledgerRows() > healed.ledgerRows()
                    && p.effects() > healed.effects()
                    && p.ticks() > healed.ticks()) {
                return p;
            }
            if (healed == null) {
                healed = p;
            }
            Thread.sleep(200); // polling the database
        }
        return null;
    }

    // ------------------------------------------------------------------------------------------ verdict

    private int verifyAndReport(Progress before, Progress healed, Progress after) throws IOException {
        // The checker runs in this process, on this run's pool: its typed result goes into the report.
        Verifier.Result checked = null;
        String checkerError = null;
        try {
            checked = Verifier.check(ds, opt.schema);
        } catch (SQLException | RuntimeException e) {
            checkerError = "the checker could not read the workload: " + e.getMessage();
        }
        boolean checkerPassed = checked != null && checked.ok();
        boolean progressed = after != null;
        boolean pass = checkerPassed && progressed && faultErrors.isEmpty() && crashes.isEmpty();

        Map<String, Object> json = new LinkedHashMap<>();
        json.put("verdict", pass ? "PASS" : "FAIL");
        json.put("seed", plan.seed());
        json.put("replay", opt.replay(plan));
        json.put("nodes", plan.nodes());
        json.put("durationMs", plan.duration().toMillis());
        json.put("database", server != null ? "embedded PostgreSQL (restartable)" : Db.redact(url));
        Map<String, Object> counts = new LinkedHashMap<>();
        synchronized (injected) {
            injected.forEach((k, v) -> counts.put(k.name(), v));
        }
        json.put("faultsInjected", counts);
        synchronized (injected) {
            json.put("faultsSkipped", skipped);
        }
        json.put("faultErrors", List.copyOf(faultErrors));
        json.put("supervisorRestarts", List.copyOf(supervisorRestarts));
        json.put("crashes", List.copyOf(crashes));
        List<Object> schedule = new ArrayList<>();
        plan.faults().forEach(f -> schedule.add(f.describe()));
        json.put("schedule", schedule);
        Progress end = after != null ? after : progress();
        if (end != null) {
            Map<String, Object> p = new LinkedHashMap<>();
            p.put("ledgerRows", end.ledgerRows());
            p.put("jobsEnqueued", end.enqueued());
            p.put("jobEffects", end.effects());
            p.put("ticks", end.ticks());
            p.put("lastGeneration", end.generation());
            json.put("progress", p);
        }
        json.put("progressAfterHealing", progressed);
        json.put("checker", checked != null ? checked.toJson() : Map.of("error", checkerError));
        json.put("nodeLogs", logs.toString());
        Path reportFile = opt.report.toAbsolutePath();
        if (reportFile.getParent() != null) {
            Files.createDirectories(reportFile.getParent());
        }
        Files.writeString(reportFile, Json.write(json), StandardCharsets.UTF_8);

        String rule = "=".repeat(78);
        out.println();
        out.println(rule);
        out.println(" Baton chaos run (E03): " + (pass ? "PASS" : "FAIL") + "   seed " + plan.seed());
        out.println(rule);
        int skippedFaults;
        synchronized (injected) {
            skippedFaults = skipped;
        }
        out.println(" faults injected  " + counts(injectedCopy())
                + (skippedFaults == 0 ? "" : "; " + skippedFaults + " skipped (target down, or no session to end)")
                + (faultErrors.isEmpty() ? "" : "; " + faultErrors.size() + " could not be injected"));
        faultErrors.forEach(e -> out.println("                  ! " + e));
        if (!supervisorRestarts.isEmpty()) {
            out.println(" restarted        " + supervisorRestarts.size()
                    + " node start(s) that failed in a fault, as a supervisor would");
            supervisorRestarts.forEach(e -> out.println("                  - " + e));
        }
        out.println(" crashes          " + (crashes.isEmpty() ? "none" : crashes.size() + " (exits after READY)"));
        crashes.forEach(e -> out.println("                  ! " + e));
        if (end != null) {
            out.println(String.format(
                    Locale.ROOT,
                    " workload         %d ledger rows, %d jobs enqueued, %d effects, %d ticks, " + "last generation %d",
                    end.ledgerRows(),
                    end.enqueued(),
                    end.effects(),
                    end.ticks(),
                    end.generation()));
        }
        out.println(" progress         "
                + (progressed
                        ? "yes: ledger, jobs and ticks advanced after healing"
                        : "NO progress within " + Durations.human(PROGRESS_TIMEOUT) + " after healing"));
        out.println(" checker          " + (checkerPassed ? "PASS" : "FAIL"));
        (checked != null ? checked.text() : checkerError).lines().forEach(l -> out.println("   " + l));
        out.println(" report           " + reportFile);
        if (!pass) {
            out.println(" replay           " + opt.replay(plan));
        }
        out.println(rule);
        out.flush();
        return pass ? Main.EXIT_OK : Main.EXIT_CHECK_FAILED;
    }

    private Map<Kind, Integer> injectedCopy() {
        synchronized (injected) {
            return new EnumMap<>(injected);
        }
    }

    private static String counts(Map<Kind, Integer> counts) {
        StringBuilder sb = new StringBuilder("(");
        counts.forEach((k, v) ->
                sb.append(sb.length() > 1 ? ", " : "").append(v).append(' ').append(k.label));
        return sb.append(')').toString();
    }

    // ------------------------------------------------------------------------------------------ plumbing

    private synchronized void cleanup() {
        finishing = true;
        scheduler.shutdownNow();
        supervisor.shutdownNow();
        if (fleet != null) {
            fleet.close();
        }
        proxies.values().forEach(FaultProxy::close);
        if (ds != null) {
            ds.close();
        }
        if (server != null) {
            server.close();
        }
    }

    private void say(String line) {
        synchronized (out) {
            out.println(String.format(Locale.ROOT, "[%6.1fs] %s", (System.nanoTime() - t0) / 1e9, line));
            out.flush();
        }
    }

    private static String secs(long nanos) {
        return (nanos / 1_000_000_000L) + "s";
    }
}
