package dev.baton.cli;

import dev.baton.cli.ChaosPlan.Fault;
import dev.baton.cli.ChaosPlan.Kind;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * One run of {@code baton chaos}: a supervised {@link Cluster} with every node behind a fault proxy of its own,
 * the seeded fault schedule, healing, a liveness check, the checker and the report.
 *
 * <p>Faults are started on a scheduler at their planned offsets and healed by a task scheduled at the
 * fault's end; sleeps only pace the schedule (this is a tool, not a test). Waiting for the nodes and for
 * progress polls the database with generous time-outs, so a slow machine makes the run slower, not wrong.
 */
final class ChaosRun {
    /** The nodes' lease TTL; the plan sizes its pauses from it. */
    static final Duration LEASE_TTL = Duration.ofSeconds(2);

    private static final Duration RENEW = Duration.ofMillis(400);
    private static final Duration PROGRESS_TIMEOUT = Duration.ofSeconds(60);
    private static final Duration STATUS_EVERY = Duration.ofSeconds(5);

    private final ChaosCommand opt;
    private final ChaosPlan plan;
    private final PrintWriter out;
    private final Cluster cluster;

    private final Map<Kind, Integer> injected = new EnumMap<>(Kind.class); // guarded by itself
    private int skipped; // guarded by injected
    private final List<String> faultErrors = new CopyOnWriteArrayList<>();
    private final List<Future<?>> begun = new ArrayList<>();
    private final ScheduledExecutorService scheduler = Executors.newScheduledThreadPool(4, r -> {
        Thread t = new Thread(r, "baton-chaos-faults");
        t.setDaemon(true);
        return t;
    });

    ChaosRun(ChaosCommand opt, ChaosPlan plan, PrintWriter out) {
        this.opt = opt;
        this.plan = plan;
        this.out = out;
        this.cluster = new Cluster("chaos", out, "[%6.1fs] ");
    }

    int run() throws Exception {
        cluster.onInterrupt(scheduler::shutdownNow);
        cluster.supervise(faultErrors::add);
        try (cluster) {
            try {
                setUp();
                Cluster.Progress before = progress();
                runPlan();
                heal();
                Cluster.Progress healed = progress();
                say("every fault healed; waiting for progress (ledger rows, job effects, ticks)");
                Cluster.Progress after = awaitProgress(healed);
                cluster.stopAll(Duration.ofSeconds(30));
                return verifyAndReport(before, healed, after);
            } finally {
                scheduler.shutdownNow(); // before the cluster closes: no fault starts on a closing cluster
            }
        }
    }

    // ------------------------------------------------------------------------------------------ set-up

    private void setUp() throws IOException, SQLException {
        say("seed " + plan.seed() + ": " + plan.faults().size() + " faults over " + Durations.human(plan.duration())
                + " against " + plan.nodes() + " nodes " + counts(plan.counts()));
        cluster.startDatabase(opt.jdbcUrl);
        cluster.prepareSchema(opt.schema, true, opt.reset);
        cluster.startNodes(
                plan.nodes(), new Cluster.NodeSettings(opt.schema, LEASE_TTL, RENEW, false), opt.logDir, true);
        say(plan.nodes() + " nodes ready; faults start in " + Durations.human(ChaosPlan.WARM_UP));
    }

    // ------------------------------------------------------------------------------------------ faults

    private void runPlan() throws InterruptedException {
        long start = System.nanoTime();
        for (Fault f : plan.faults()) {
            begun.add(scheduler.schedule(() -> begin(f), f.at().toMillis(), TimeUnit.MILLISECONDS));
        }
        long end = start + plan.duration().minus(ChaosPlan.QUIET_TAIL).toNanos();
        long nextStatus = start + STATUS_EVERY.toNanos();
        Cluster.Progress last = null;
        while (System.nanoTime() < end) {
            Thread.sleep(Math.min(200, Math.max(1, (end - System.nanoTime()) / 1_000_000))); // pacing only
            if (System.nanoTime() >= nextStatus) {
                nextStatus += STATUS_EVERY.toNanos();
                last = status(start, last);
            }
        }
    }

    private void begin(Fault f) {
        NodeFleet.Node n = f.node() < 0 ? null : cluster.node("node-" + (f.node() + 1));
        boolean needsProcess = switch (f.kind()) {
            case PAUSE, KILL, GRACEFUL_RESTART, TERMINATE_BACKEND -> true;
            default -> false;
        };
        if (needsProcess && (!n.alive() || n.paused || n.stopping)) {
            // An earlier fault on this node is still under way (a slow SIGTERM): its process is not there to hit.
            synchronized (injected) {
                skipped++;
            }
            String state = !n.alive() ? "down" : n.paused ? "paused" : "stopping";
            say("skipped   " + f.describe().trim() + " (" + n.id + " is " + state + ")");
            return;
        }
        say("FAULT " + f.describe());
        try {
            switch (f.kind()) {
                case PAUSE -> {
                    cluster.pause(n);
                    later(f, () -> cluster.resume(n));
                }
                case KILL -> {
                    cluster.kill(n);
                    later(f, () -> cluster.startIfDown(n));
                }
                case GRACEFUL_RESTART -> {
                    cluster.stop(n, Duration.ofSeconds(20));
                    later(f, () -> cluster.startIfDown(n));
                }
                case TERMINATE_BACKEND -> {
                    if (!cluster.terminateOneSession(n.id)) {
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
                    cluster.proxy(n.id).blackHole();
                    later(f, () -> cluster.proxy(n.id).heal());
                }
                case LATENCY -> {
                    cluster.proxy(n.id).latency(f.latency());
                    later(f, () -> cluster.proxy(n.id).latency(Duration.ZERO));
                }
                case DB_RESTART -> cluster.restartDatabase(f.length());
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
        cluster.healProxies();
        for (NodeFleet.Node n : cluster.nodes()) {
            if (n.paused) {
                cluster.resume(n);
            }
            cluster.startIfDown(n);
        }
        cluster.awaitAllReady();
    }

    // ------------------------------------------------------------------------------------------ progress

    /** What the workload has recorded so far; null while the database cannot be read (e.g. while it restarts). */
    private Cluster.Progress progress() {
        try {
            return cluster.progress();
        } catch (SQLException e) {
            return null;
        }
    }

    private Cluster.Progress status(long start, Cluster.Progress last) {
        Cluster.Progress p = progress();
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

    private Cluster.Progress awaitProgress(Cluster.Progress healed) throws InterruptedException {
        long deadline = System.nanoTime() + PROGRESS_TIMEOUT.toNanos();
        while (System.nanoTime() < deadline) {
            Cluster.Progress p = progress();
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

    private int verifyAndReport(Cluster.Progress before, Cluster.Progress healed, Cluster.Progress after)
            throws IOException {
        // The checker runs in this process, on this run's pool: its typed result goes into the report.
        Verifier.Result checked = null;
        String checkerError = null;
        try {
            checked = Verifier.check(cluster.dataSource(), opt.schema);
        } catch (SQLException | RuntimeException e) {
            checkerError = "the checker could not read the workload: " + e.getMessage();
        }
        boolean checkerPassed = checked != null && checked.ok();
        boolean progressed = after != null;
        List<String> supervisorRestarts = cluster.supervisorRestarts();
        List<String> crashes = cluster.crashes();
        boolean pass = checkerPassed && progressed && faultErrors.isEmpty() && crashes.isEmpty();

        Map<Kind, Integer> injectedNow;
        int skippedNow;
        synchronized (injected) {
            injectedNow = new EnumMap<>(injected);
            skippedNow = skipped;
        }
        Map<String, Integer> injectedByName = new LinkedHashMap<>();
        injectedNow.forEach((k, v) -> injectedByName.put(k.name(), v));
        Cluster.Progress end = after != null ? after : progress();
        Report report = new Report(
                pass ? "PASS" : "FAIL",
                plan.seed(),
                opt.replay(plan),
                plan.nodes(),
                plan.duration().toMillis(),
                cluster.embedded() ? "embedded PostgreSQL (restartable)" : Db.redact(cluster.url()),
                injectedByName,
                skippedNow,
                List.copyOf(faultErrors),
                supervisorRestarts,
                crashes,
                plan.faults().stream().map(Fault::describe).toList(),
                Optional.ofNullable(end)
                        .map(p -> new Workload(p.ledgerRows(), p.enqueued(), p.effects(), p.ticks(), p.generation())),
                progressed,
                checked != null ? checked.toJson() : Map.of("error", checkerError),
                cluster.logs().toString());
        Path reportFile = opt.report.toAbsolutePath();
        if (reportFile.getParent() != null) {
            Files.createDirectories(reportFile.getParent());
        }
        Files.writeString(reportFile, Json.write(report), StandardCharsets.UTF_8);

        String rule = "=".repeat(78);
        out.println();
        out.println(rule);
        out.println(" Baton chaos run (E03): " + (pass ? "PASS" : "FAIL") + "   seed " + plan.seed());
        out.println(rule);
        out.println(" faults injected  " + counts(injectedNow)
                + (skippedNow == 0 ? "" : "; " + skippedNow + " skipped (target down, or no session to end)")
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

    private static String counts(Map<Kind, Integer> counts) {
        StringBuilder sb = new StringBuilder("(");
        counts.forEach((k, v) ->
                sb.append(sb.length() > 1 ? ", " : "").append(v).append(' ').append(k.label));
        return sb.append(')').toString();
    }

    // ------------------------------------------------------------------------------------------ plumbing

    /**
     * The JSON report, field by field. {@code progress} is left out when the database could not be read;
     * {@code checker} is the verifier's own JSON (as {@code baton verify --json}), or the error that stopped it.
     */
    private record Report(
            String verdict,
            long seed,
            String replay,
            int nodes,
            long durationMs,
            String database,
            Map<String, Integer> faultsInjected,
            int faultsSkipped,
            List<String> faultErrors,
            List<String> supervisorRestarts,
            List<String> crashes,
            List<String> schedule,
            Optional<Workload> progress,
            boolean progressAfterHealing,
            Map<String, Object> checker,
            String nodeLogs) {}

    /** The workload's counts at the end of the run. */
    private record Workload(long ledgerRows, long jobsEnqueued, long jobEffects, long ticks, long lastGeneration) {}

    private void say(String line) {
        cluster.say(line);
    }

    private static String secs(long nanos) {
        return (nanos / 1_000_000_000L) + "s";
    }
}
