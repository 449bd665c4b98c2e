package dev.baton.cli;

import dev.baton.Baton;
import dev.baton.LeaseHistoryEntry;
import dev.baton.LeaseInfo;
import dev.baton.Leases;
import dev.baton.MigrationResult;
import dev.baton.testkit.CheckResult;
import dev.baton.testkit.FencedMutexChecker;
import dev.baton.testkit.Grant;
import dev.baton.testkit.Write;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Predicate;
import javax.sql.DataSource;

/**
 * One run of {@code baton demo}: scripts a {@link Cluster} (the database and the node processes) through the
 * fault timeline, then stops everything, checks the recorded history and reports.
 *
 * <p>Every step that the report depends on waits by polling the database (or the nodes' event lines) with
 * a generous time-out, so a slow machine makes the demo slower, not wrong. Sleeps only pace the demo.
 */
final class DemoRun {
    private static final Duration POLL = Duration.ofMillis(20);
    private static final Duration STEP_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration PLAIN_EVERY = Duration.ofSeconds(5);

    private final DemoCommand opt;
    private final PrintWriter out;
    private final Cluster cluster;

    private final List<String> failures = new CopyOnWriteArrayList<>();

    private DataSource ds;
    private Leases leases;
    private long generationBefore; // the lease's generation before this run (0: never acquired)
    private long seqBefore; // the ledger's highest seq before this run
    private long runStartNanos; // first election

    // Measurements.
    /** What each fault step saw; null while the step has not completed. */
    private PauseStep pause;

    private KillStep kill;
    private GracefulStep graceful;
    private Step backends; // NoBackends or BackendsCut
    private volatile int faults;
    private final boolean tty;
    private volatile boolean progressStop;
    private Thread progress;
    private long effectsBefore;
    private long ticksBefore;
    private long enqueuedBefore;

    DemoRun(DemoCommand opt, PrintWriter out) {
        this.opt = opt;
        this.out = out;
        this.tty = !opt.plain && System.console() != null;
        this.cluster = new Cluster("demo", out, "[%7.2fs] ");
    }

    // ------------------------------------------------------------------------------------------ run

    int run() throws Exception {
        cluster.onInterrupt(() -> say("interrupted: stopping every node process"
                + (cluster.embedded() ? " and the embedded PostgreSQL" : "")));
        cluster.onEvent(this::show);
        try (cluster) {
            setUp();
            try {
                timeline();
            } catch (RuntimeException e) {
                String msg = e instanceof StepFailed ? e.getMessage() : Db.rootMessage(e);
                failures.add(msg);
                say("STEP FAILED: " + msg);
            }
            stopAll();
            return verifyAndReport();
        }
    }

    private void setUp() throws IOException, SQLException {
        cluster.startDatabase(opt.jdbcUrl);
        ds = cluster.dataSource();
        say("PostgreSQL " + cluster.serverVersion() + " at " + Db.redact(cluster.url()));
        MigrationResult m = cluster.prepareSchema(opt.schema, false, false);
        Cluster.Progress before = cluster.progress();
        effectsBefore = before.effects();
        ticksBefore = before.ticks();
        enqueuedBefore = before.enqueued();
        seqBefore = maxSeq();
        leases = Baton.builder(ds)
                .schema(opt.schema)
                .migrateOnStart(false)
                .build()
                .leases(); // read-only, never started
        generationBefore =
                leases.inspect(DemoCommand.LEASE).map(LeaseInfo::generation).orElse(0L);
        say("schema '" + opt.schema + "' "
                + (m.changed() ? "migrated to version " + m.to() : "already at version " + m.to())
                + "; ledger table " + opt.schema + "." + DemoCommand.LEDGER + " ready"
                + (seqBefore > 0 ? " (earlier runs' rows are left out of this report)" : ""));
        say("starting " + opt.nodes + " node processes: lease '" + DemoCommand.LEASE + "', TTL "
                + Durations.human(opt.ttl) + ", renewal every " + Durations.human(opt.renew)
                + "; the leader appends a fenced row every 20 ms and enqueues 50 jobs/s");
        cluster.startNodes(
                opt.nodes, new Cluster.NodeSettings(opt.schema, opt.ttl, opt.renew, true), opt.logDir, false);
    }

    private void timeline() {
        Leader first = awaitLeader(generationBefore, Cluster.STARTUP_TIMEOUT, "a first leader");
        runStartNanos = first.seenNanos;
        startProgress();
        long d = opt.duration.toNanos();
        pace(runStartNanos + d / 10);
        pauseLeader();
        pace(runStartNanos + d * 3 / 10);
        killLeader();
        pace(runStartNanos + d * 5 / 10);
        terminateBackends();
        pace(runStartNanos + d * 7 / 10);
        stopLeaderGracefully();
        pace(runStartNanos + d);
    }

    // ------------------------------------------------------------------------------------------ faults

    /** Fault 1: SIGSTOP the leader for longer than its lease, then SIGCONT it: its stale write must be refused. */
    private void pauseLeader() {
        Leader l = awaitLeader(generationBefore, STEP_TIMEOUT, "a leader to pause");
        NodeFleet.Node p = cluster.node(l.owner);
        say("");
        faults++;
        say("FAULT 1/4  pause the leader: SIGSTOP " + l.owner + " (pid " + p.pid() + ", generation " + l.generation
                + ") for longer than its " + Durations.human(opt.ttl) + " lease");
        long stopAt = System.nanoTime();
        act("SIGSTOP " + l.owner, () -> cluster.pause(p));
        Leader next = awaitLeader(
                l.generation, opt.ttl.multipliedBy(3).plus(STEP_TIMEOUT), "a takeover while " + l.owner + " is paused");
        long takeoverMs = millis(next.seenNanos - stopAt);
        say("           takeover: " + next.owner + " leads with generation " + next.generation + ", " + ms(takeoverMs)
                + " after the pause (the paused leader's lease had to expire first)");
        // Keep it paused past the TTL and until the new leader has committed some rows.
        awaitTrue(
                () -> System.nanoTime() - stopAt > opt.ttl.plusMillis(300).toNanos() && rowsOf(next.generation) >= 5,
                STEP_TIMEOUT,
                "rows from generation " + next.generation);
        long pausedMs = millis(System.nanoTime() - stopAt);
        say("           SIGCONT " + l.owner + " after " + ms(pausedMs) + ": it wakes up still running generation "
                + l.generation + "'s task, unaware that generation " + next.generation + " exists");
        long contAt = System.nanoTime();
        act("SIGCONT " + l.owner, () -> cluster.resume(p));
        long deadline = System.nanoTime() + STEP_TIMEOUT.toNanos();
        // A generation is granted once, so these events can only be about the paused term.
        Predicate<Cluster.Event> ofStaleTerm = e -> e.node().equals(l.owner) && e.generation() == l.generation;
        Cluster.Event revoked = cluster.awaitEvent(ofStaleTerm.and(e -> e.is("REVOKED")), deadline);
        if (revoked == null) {
            throw new StepFailed(l.owner + " did not step down from generation " + l.generation + " within "
                    + Durations.human(STEP_TIMEOUT) + " after SIGCONT");
        }
        // After LOST or DEADLINE the node deliberately writes once more under the revoked grant (as a zombie
        // task would): the database fence decides.
        boolean probed = revoked.detail().equals("LOST") || revoked.detail().equals("DEADLINE");
        Cluster.Event probe =
                probed ? cluster.awaitEvent(ofStaleTerm.and(e -> e.type().startsWith("STALE_WRITE_")), deadline) : null;
        Cluster.Event rejected = cluster.findEvent(ofStaleTerm.and(e -> e.is("WRITE_REJECTED")));
        List<String> parts = new ArrayList<>();
        if (rejected != null) {
            parts.add(
                    rejected.detail().equals("database")
                            ? "its task's next fenced write (generation " + l.generation
                                    + ") was rejected by the database"
                            : "its task's next write was refused locally (term already cancelled)");
        }
        parts.add("it stepped down (" + revoked.detail() + ") " + ms(Math.max(0, millis(revoked.nanos() - contAt)))
                + " after SIGCONT");
        String probeOutcome = !probed
                ? "not attempted (the term ended " + revoked.detail() + ")"
                : probe == null
                        ? "not reported"
                        : probe.is("STALE_WRITE_REJECTED")
                                ? "rejected by the database"
                                : probe.is("STALE_WRITE_COMMITTED") ? "COMMITTED" : "failed: " + probe.detail();
        parts.add("a deliberate write with its old generation-" + l.generation + " grant was " + probeOutcome);
        if (probe == null || !probe.is("STALE_WRITE_REJECTED")) {
            failures.add("the deliberate stale write of " + l.owner + " under generation " + l.generation
                    + " after generation " + next.generation + " existed was " + probeOutcome
                    + "; expected: rejected by the database");
        }
        String outcome = String.join("; ", parts);
        say("           result: " + outcome);
        pause = new PauseStep(
                l.owner,
                l.generation,
                next.owner,
                next.generation,
                takeoverMs,
                pausedMs,
                rejected == null ? "none attempted" : "rejected by the " + rejected.detail(),
                revoked.detail(),
                Math.max(0, millis(revoked.nanos() - contAt)),
                probeOutcome,
                outcome);
    }

    /** Fault 2: SIGKILL the leader; measure until a new generation appears; restart the node. */
    private void killLeader() {
        Leader l = awaitLeader(generationBefore, STEP_TIMEOUT, "a leader to kill");
        NodeFleet.Node p = cluster.node(l.owner);
        say("");
        faults++;
        say("FAULT 2/4  crash the leader: SIGKILL " + l.owner + " (pid " + p.pid() + ", generation " + l.generation
                + "); polling the lease every " + POLL.toMillis() + " ms");
        long killAt = System.nanoTime();
        act("SIGKILL " + l.owner, () -> cluster.kill(p)); // returns once the process is gone
        Leader next = awaitLeader(l.generation, opt.ttl.multipliedBy(3).plus(STEP_TIMEOUT), "a takeover after SIGKILL");
        long takeoverMs = millis(next.seenNanos - killAt);
        say("           takeover: " + next.owner + " leads with generation " + next.generation + ", " + ms(takeoverMs)
                + " after SIGKILL (bounded by the " + Durations.human(opt.ttl)
                + " TTL: a dead leader's lease must expire)");
        kill = new KillStep(l.owner, l.generation, next.owner, next.generation, takeoverMs);
        restart(p);
    }

    /**
     * Fault 3: terminate every database connection of the leader (pg_terminate_backend), as a database failover
     * or a proxy restart would. Its pools reconnect; either it keeps its lease (a renewal on a new connection in
     * time) or it loses it and another node takes over. Either way the workload must go on and stay correct.
     */
    private void terminateBackends() {
        Leader l = awaitLeader(generationBefore, STEP_TIMEOUT, "a leader whose connections to terminate");
        say("");
        faults++;
        say("FAULT 3/4  cut the leader's database connections: pg_terminate_backend on every backend of " + l.owner
                + " (generation " + l.generation + ")");
        long seq = maxSeq();
        long at = System.nanoTime();
        int n;
        try {
            n = cluster.terminateBackends(l.owner);
        } catch (SQLException e) {
            throw new StepFailed(
                    "pg_terminate_backend failed (the demo's role may lack the right): " + Db.rootMessage(e));
        }
        if (n == 0) {
            say("           no backend of " + l.owner
                    + " found: behind a transaction-pooling proxy a node's connections "
                    + "are shared, so this fault cannot target one node");
            backends = new NoBackends(l.owner, 0);
            return;
        }
        // Recovered: a fenced ledger row committed after the cut, by whichever node leads now.
        awaitTrue(() -> maxSeq() > seq, opt.ttl.multipliedBy(3).plus(STEP_TIMEOUT), "a ledger write after the cut");
        long recoveredMs = millis(System.nanoTime() - at);
        Leader now = awaitLeader(generationBefore, STEP_TIMEOUT, "a leader after the cut");
        String outcome = now.generation == l.generation
                ? l.owner + " kept generation " + l.generation + " (its pools reconnected before the lease ran out)"
                : now.owner + " leads with generation " + now.generation + " (" + l.owner + " lost generation "
                        + l.generation + ")";
        say("           " + n + " backend(s) terminated; fenced writes resumed " + ms(recoveredMs) + " later: "
                + outcome);
        backends = new BackendsCut(l.owner, n, l.generation, recoveredMs, now.owner, now.generation);
    }

    private long maxSeq() {
        try (Connection c = ds.getConnection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(
                        "SELECT coalesce(max(seq), 0) FROM \"" + opt.schema + "\"." + DemoCommand.LEDGER)) {
            rs.next();
            return rs.getLong(1);
        } catch (SQLException e) {
            throw new IllegalStateException("reading the ledger failed: " + Db.rootMessage(e), e);
        }
    }

    /** Fault 4: SIGTERM the leader; its shutdown hook releases the lease; measure the hand-off. */
    private void stopLeaderGracefully() {
        Leader l = awaitLeader(generationBefore, STEP_TIMEOUT, "a leader to stop");
        NodeFleet.Node p = cluster.node(l.owner);
        say("");
        faults++;
        say("FAULT 4/4  stop the leader gracefully: SIGTERM " + l.owner + " (pid " + p.pid() + ", generation "
                + l.generation + "); its shutdown hook closes Baton, which releases the lease");
        long termAt = System.nanoTime();
        act("SIGTERM " + l.owner, () -> cluster.terminate(p));
        Leader next = awaitLeader(l.generation, opt.ttl.multipliedBy(3).plus(STEP_TIMEOUT), "a hand-off after SIGTERM");
        long handOffMs = millis(next.seenNanos - termAt);
        String endReason = leases.history(DemoCommand.LEASE, 50).stream()
                .filter(h -> h.generation() == l.generation)
                .findFirst()
                .flatMap(LeaseHistoryEntry::endReason)
                .orElse("?");
        say("           hand-off: " + next.owner + " leads with generation " + next.generation + ", " + ms(handOffMs)
                + " after SIGTERM (generation " + l.generation + " ended: " + endReason + ")");
        graceful = new GracefulStep(l.owner, l.generation, next.owner, next.generation, handOffMs, endReason);
        if (!"released".equals(endReason)) {
            failures.add("generation " + l.generation + " of " + l.owner + " ended '" + endReason
                    + "' after SIGTERM; expected 'released'");
        }
        awaitExit(p);
        restart(p);
    }

    // ------------------------------------------------------------------------------------------ stop, verify, report

    /** SIGTERM to every node at once: they stop enqueueing together, drain, release their leases and exit. */
    private void stopAll() throws InterruptedException, IOException {
        stopProgress();
        say("");
        say("stopping all nodes (SIGTERM): each drains (running jobs finish), releases its lease and exits");
        cluster.stopAll(Duration.ofSeconds(20));
    }

    private int verifyAndReport() throws IOException, SQLException {
        List<LeaseHistoryEntry> history = new ArrayList<>(leases.history(DemoCommand.LEASE, 10_000));
        history.removeIf(h -> h.generation() <= generationBefore);
        history.sort(Comparator.comparingLong(LeaseHistoryEntry::generation));
        List<Grant> grants = history.stream()
                .map(h -> new Grant(h.name(), h.generation(), h.owner()))
                .toList();
        List<Write> writes = new ArrayList<>();
        try (Connection c = ds.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT seq, lease_name, generation, node_id FROM \""
                        + opt.schema + "\"." + DemoCommand.LEDGER + " WHERE seq > ? ORDER BY seq")) {
            ps.setLong(1, seqBefore);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    writes.add(new Write(rs.getLong(1), rs.getString(2), rs.getLong(3), rs.getString(4)));
                }
            }
        }
        CheckResult check = FencedMutexChecker.check(grants, writes);
        Map<Long, Long> rowsPerGeneration = new TreeMap<>();
        for (Write w : writes) {
            rowsPerGeneration.merge(w.generation(), 1L, Long::sum);
        }
        long taskRejected =
                cluster.countEvents(e -> e.is("WRITE_REJECTED") && e.detail().equals("database"));
        long probeRejected = cluster.countEvents(e -> e.is("STALE_WRITE_REJECTED"));
        long rejectedByDb = taskRejected + probeRejected;
        long refusedLocally =
                cluster.countEvents(e -> e.is("WRITE_REJECTED") && !e.detail().equals("database"));
        long unknown = cluster.countEvents(e -> e.is("WRITE_UNKNOWN"));
        Verifier.Result verification = Verifier.check(ds, opt.schema);
        boolean pass = check.ok() && verification.ok() && failures.isEmpty();
        long runMs = runStartNanos == 0 ? 0 : millis(System.nanoTime() - runStartNanos);

        Report report = new Report(
                pass ? "PASS" : "FAIL",
                opt.nodes,
                DemoCommand.LEASE,
                opt.ttl.toMillis(),
                opt.renew.toMillis(),
                runMs,
                history.size(),
                writes.size(),
                history.stream()
                        .map(h -> new GenerationDetail(
                                h.generation(),
                                h.owner(),
                                rowsPerGeneration.getOrDefault(h.generation(), 0L),
                                h.endReason().orElse(null)))
                        .toList(),
                kill == null ? null : kill.takeoverMs(),
                graceful == null ? null : graceful.handOffMs(),
                pause == null ? null : pause.takeoverMs(),
                new StaleWrites(rejectedByDb, taskRejected, probeRejected, refusedLocally, unknown),
                this.faults,
                new Faults(
                        pause == null ? NOT_COMPLETED : pause,
                        kill == null ? NOT_COMPLETED : kill,
                        backends == null ? NOT_COMPLETED : backends,
                        graceful == null ? NOT_COMPLETED : graceful),
                verification.toJson(),
                new HistoryCheck(
                        check.ok(), check.grantsChecked(), check.writesChecked(), CHECKER_RULES, check.violations()),
                List.copyOf(failures),
                cluster.logs().toString());
        Path reportFile = opt.report.toAbsolutePath();
        if (reportFile.getParent() != null) {
            Files.createDirectories(reportFile.getParent());
        }
        Files.writeString(reportFile, Json.write(report), StandardCharsets.UTF_8);

        StringBuilder r = new StringBuilder();
        String rule = "=".repeat(78);
        Map<String, Long> n = verification.counts();
        r.append('\n').append(rule).append('\n');
        r.append(" Baton demo: verified report\n").append(rule).append('\n');
        row(
                r,
                "nodes",
                opt.nodes + " processes for " + Durations.human(Duration.ofMillis(runMs)) + "; lease '"
                        + DemoCommand.LEASE + "' (TTL " + Durations.human(opt.ttl) + "), " + history.size()
                        + " generations");
        row(r, "faults injected", this.faults + " of 4");
        row(
                r,
                "  SIGSTOP leader",
                pause != null
                        ? "takeover " + ms(pause.takeoverMs()) + "; resumed, its stale write was "
                                + pause.deliberateStaleWrite()
                        : "not completed");
        row(
                r,
                "  SIGKILL + restart",
                kill != null
                        ? "takeover after SIGKILL " + ms(kill.takeoverMs()) + " (" + kill.node() + " g"
                                + kill.generation() + " -> " + kill.newLeader() + " g" + kill.newGeneration() + ")"
                        : "not completed");
        row(
                r,
                "  backends terminated",
                backends instanceof BackendsCut b
                        ? b.backendsTerminated() + " of " + b.node() + "; fenced writes resumed after "
                                + ms(b.writesResumedMs())
                                + (b.generationAfter() == b.generation()
                                        ? " (kept its lease)"
                                        : " (" + b.leaderAfter() + " took over, g" + b.generationAfter() + ")")
                        : backends instanceof NoBackends b
                                ? "none found for " + b.node() + " (connections shared behind a pooler)"
                                : "not completed");
        row(
                r,
                "  SIGTERM leader",
                graceful != null
                        ? "hand-off after release " + ms(graceful.handOffMs()) + " (lease " + graceful.endReason() + ")"
                        : "not completed");
        row(
                r,
                "fenced ledger",
                String.format(
                        Locale.ROOT,
                        "%,d rows; %d stale write(s) rejected by the database fence",
                        writes.size(),
                        rejectedByDb));
        row(
                r,
                "jobs",
                String.format(
                        Locale.ROOT,
                        "%,d enqueued, %,d completed with one effect row, %,d still pending",
                        n.get("enqueued"),
                        n.get("effects"),
                        n.get("pending")));
        row(
                r,
                "scheduled ticks",
                String.format(Locale.ROOT, "%,d rows for %,d due instants", n.get("ticks"), n.get("tickDueInstants")));
        for (Verifier.Invariant i : verification.invariants()) {
            row(r, i.id() + " " + (i.ok() ? "PASS" : "FAIL"), i.description());
            i.examples().forEach(e -> r.append("    VIOLATION ").append(e).append('\n'));
        }
        row(
                r,
                "I4 info",
                String.format(
                        Locale.ROOT,
                        "%,d job(s) repeated their external effect after a retry " + "(at least once; not a violation)",
                        verification.externalDuplicateJobs()));
        row(
                r,
                "history check",
                (check.ok() ? "PASS" : "FAIL") + ": FencedMutexChecker over " + check.grantsChecked() + " grants and "
                        + String.format(Locale.ROOT, "%,d", check.writesChecked()) + " ledger writes");
        for (String v : check.violations()) {
            r.append("    VIOLATION ").append(v).append('\n');
        }
        for (String f : failures) {
            r.append("    FAILED STEP ").append(f).append('\n');
        }
        row(r, "verdict", pass ? "PASS" : "FAIL");
        row(r, "report", reportFile.toString());
        r.append(rule).append('\n');
        synchronized (out) {
            out.print(r);
            out.flush();
        }
        return pass ? Main.EXIT_OK : Main.EXIT_CHECK_FAILED;
    }

    private static void row(StringBuilder sb, String label, String value) {
        sb.append(String.format(Locale.ROOT, "  %-24s %s%n", label, value));
    }

    // ------------------------------------------------------------------------------------------ leader polling

    private record Leader(String owner, long generation, long seenNanos, Duration left) {}

    private Optional<Leader> currentLeader() {
        long now = System.nanoTime();
        return leases.inspect(DemoCommand.LEASE)
                .filter(LeaseInfo::held)
                .map(i -> new Leader(i.owner().orElseThrow(), i.generation(), now, i.remaining()));
    }

    /**
     * Polls the lease every 20 ms until it is held with a generation above {@code above} by a node that is not
     * paused and has itself reported ELECTED for that generation. (An acquisition whose answer timed out can
     * commit without its node knowing: the database then has an owner that writes nothing until the lease
     * expires. The demo waits for a leader that knows it leads.) The returned time is when the generation was
     * first seen in the database.
     */
    private Leader awaitLeader(long above, Duration timeout, String what) {
        long deadline = System.nanoTime() + timeout.toNanos();
        Map<Long, Long> firstSeen = new TreeMap<>();
        while (true) {
            Optional<Leader> l;
            try {
                l = currentLeader();
            } catch (RuntimeException e) {
                l = Optional.empty(); // transient: keep polling until the deadline
            }
            if (l.isPresent() && l.get().generation > above) {
                Leader x = l.get();
                long seen = firstSeen.computeIfAbsent(x.generation, g -> x.seenNanos);
                Cluster.Event elected = cluster.findEvent(
                        e -> e.node().equals(x.owner) && e.is("ELECTED") && e.generation() == x.generation);
                NodeFleet.Node n = elected == null ? null : cluster.node(x.owner); // a node of this demo
                if (n != null && !n.paused && n.pid() == elected.pid()) {
                    return new Leader(x.owner, x.generation, seen, x.left);
                }
            }
            if (System.nanoTime() - deadline > 0) {
                throw new StepFailed("no " + what + " within " + Durations.human(timeout));
            }
            sleep(POLL.toMillis());
        }
    }

    private void awaitTrue(BooleanSupplier condition, Duration timeout, String what) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new StepFailed("timed out after " + Durations.human(timeout) + " waiting for " + what);
            }
            sleep(POLL.toMillis());
        }
    }

    /** Waits until {@code nanos} (the progress thread shows what happens meanwhile). Pacing only. */
    private void pace(long untilNanos) {
        while (System.nanoTime() - untilNanos < 0) {
            sleep(Math.max(1, Math.min(TimeUnit.NANOSECONDS.toMillis(untilNanos - System.nanoTime()), 250)));
        }
    }

    // ------------------------------------------------------------------------------------------ live progress

    /**
     * Shows progress while the nodes run: on a terminal one line redrawn in place (event lines scroll above it),
     * otherwise a plain line every few seconds.
     */
    private void startProgress() {
        progress = new Thread(
                () -> {
                    java.util.ArrayDeque<long[]> window = new java.util.ArrayDeque<>(); // {nanos, effects}
                    long nextPlain = System.nanoTime() + PLAIN_EVERY.toNanos();
                    while (!progressStop) {
                        try {
                            long now = System.nanoTime();
                            Cluster.Progress c = cluster.progress();
                            long done = c.effects() - effectsBefore;
                            window.addLast(new long[] {now, done});
                            while (window.size() > 2 && now - window.peekFirst()[0] > TimeUnit.SECONDS.toNanos(3)) {
                                window.removeFirst();
                            }
                            long[] oldest = window.peekFirst();
                            double rate = now - oldest[0] > 0 ? (done - oldest[1]) * 1e9 / (now - oldest[0]) : 0;
                            Optional<Leader> l = currentLeader();
                            long total = opt.duration.toNanos();
                            long elapsed = Math.min(total, Math.max(0, now - runStartNanos));
                            int width = 24;
                            int filled = (int) (width * elapsed / total);
                            String line = String.format(
                                    Locale.ROOT,
                                    "[%s%s] %3ds/%ds | leader %s | %,.0f jobs/s, %,d done, %,d pending "
                                            + "| %,d ticks | faults %d/4",
                                    "#".repeat(filled),
                                    ".".repeat(width - filled),
                                    TimeUnit.NANOSECONDS.toSeconds(elapsed),
                                    opt.duration.toSeconds(),
                                    l.map(x -> x.owner + " g" + x.generation).orElse("none"),
                                    rate,
                                    done,
                                    Math.max(0, (c.enqueued() - enqueuedBefore) - done),
                                    c.ticks() - ticksBefore,
                                    faults);
                            if (tty) {
                                cluster.status(line);
                            } else if (now - nextPlain >= 0) {
                                say("progress   " + line);
                                nextPlain = now + PLAIN_EVERY.toNanos();
                            }
                        } catch (SQLException | RuntimeException e) {
                            // transient (the demo itself cuts connections): show the next sample
                        }
                        try {
                            Thread.sleep(tty ? 500 : 250); // pacing of the display only
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                },
                "baton-demo-progress");
        progress.setDaemon(true);
        progress.start();
    }

    private void stopProgress() {
        progressStop = true;
        if (progress != null) {
            progress.interrupt();
            try {
                progress.join(5_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        cluster.status(null);
    }

    /** Rows this run wrote, all of them ({@code generation < 0}) or of one generation. */
    private long rowsOf(long generation) {
        String sql = "SELECT count(*) FROM \"" + opt.schema + "\"." + DemoCommand.LEDGER + " WHERE seq > ?"
                + (generation >= 0 ? " AND generation = ?" : "");
        try (Connection c = ds.getConnection();
                PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setLong(1, seqBefore);
            if (generation >= 0) {
                ps.setLong(2, generation);
            }
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        } catch (SQLException e) {
            throw new IllegalStateException("counting ledger rows failed: " + e.getMessage(), e);
        }
    }

    // ------------------------------------------------------------------------------------------ processes

    /** Starts a fresh process for a node whose process has ended and waits until it is ready. */
    private void restart(NodeFleet.Node n) {
        act("restarting " + n.id, () -> cluster.startIfDown(n));
        say(String.format(Locale.ROOT, "%-10s restarted as pid %d", n.id, n.pid()));
        String problem = cluster.awaitReady(n, System.nanoTime() + Cluster.STARTUP_TIMEOUT.toNanos());
        if (problem != null) {
            throw new StepFailed(problem);
        }
    }

    /** Shows a node's event line (or its process's end) as it comes. */
    private void show(Cluster.Event e) {
        long gen = e.generation();
        String detail = e.detail();
        String text = switch (e.type()) {
            case "EXITED" -> "process " + e.pid() + " ended (" + Cluster.exitMeaning(Integer.parseInt(detail)) + ")";
            case "READY" -> "ready (pid " + detail + ")";
            case "ELECTED" -> "ELECTED leader with generation " + gen;
            case "REVOKED" -> "stepped down from generation " + gen + ": " + detail + " (" + revocation(detail) + ")";
            case "WRITE_REJECTED" ->
                detail.equals("database")
                        ? "WRITE REJECTED: the database refused its fenced write with generation " + gen
                                + " (a newer generation exists); nothing was written"
                        : "write with generation " + gen + " refused locally: the term was already cancelled";
            case "WRITE_UNKNOWN" ->
                "connection failed during COMMIT of a generation " + gen
                        + " write (outcome unknown; the ledger will tell)";
            case "WRITE_ERROR" -> "write with generation " + gen + " failed: " + detail;
            case "STALE_WRITE_REJECTED" ->
                "STALE WRITE REJECTED: it deliberately wrote once more with its revoked " + "generation-" + gen
                        + " grant (as a task ignoring cancellation would); the database fence refused it";
            case "STALE_WRITE_COMMITTED" ->
                "a write with its revoked generation-" + gen + " grant was accepted: the "
                        + "database still had generation " + gen + " as current";
            case "STALE_WRITE_ERROR" -> "a write with its revoked generation-" + gen + " grant failed: " + detail;
            case "DRAINING" -> "draining: claims no new jobs, running ones finish";
            case "STOPPED" -> "closed cleanly (Baton stopped its leadership and recorded the node as stopped)";
            default -> e.line();
        };
        say(String.format(Locale.ROOT, "%-10s %s", e.node(), text));
    }

    private static String revocation(String reason) {
        return switch (reason) {
            case "STOPPED" -> "shut down; task cancelled, lease released";
            case "LOST" -> "a renewal found the lease expired or taken over";
            case "DEADLINE" -> "no renewal confirmed within TTL/2, so it stopped by itself";
            case "TASK_COMPLETED" -> "the task returned";
            case "TASK_FAILED" -> "the task failed";
            default -> "?";
        };
    }

    @FunctionalInterface
    private interface ProcessAction {
        void run() throws IOException, InterruptedException;
    }

    /** Runs a fleet action as part of a fault step: if it fails, the step fails. */
    private static void act(String what, ProcessAction action) {
        try {
            action.run();
        } catch (IOException e) {
            throw new StepFailed(what + " failed: " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StepFailed("interrupted");
        }
    }

    private void awaitExit(NodeFleet.Node n) {
        Process p = n.process;
        act("waiting for " + n.id, () -> {
            if (!p.waitFor(STEP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new StepFailed(
                        n.id + " (pid " + p.pid() + ") did not exit within " + Durations.human(STEP_TIMEOUT));
            }
        });
    }

    // ------------------------------------------------------------------------------------------ output

    private void say(String line) {
        cluster.say(line);
    }

    private static long millis(long nanos) {
        return TimeUnit.NANOSECONDS.toMillis(nanos);
    }

    private static String ms(long millis) {
        return String.format(Locale.ROOT, "%,d ms", millis);
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StepFailed("interrupted");
        }
    }

    /** A step of the timeline was not observed in time; the run goes on to stop, check and report. */
    private static final class StepFailed extends RuntimeException {
        private static final long serialVersionUID = 1L;

        StepFailed(String message) {
            super(message);
        }
    }

    // ------------------------------------------------------------------------------------------ results

    /** What a fault step saw; written into the report as an object of its components. */
    private sealed interface Step permits PauseStep, KillStep, NoBackends, BackendsCut, GracefulStep, NotCompleted {}

    /** A step that did not complete: an empty object in the report. */
    private record NotCompleted() implements Step {}

    private static final Step NOT_COMPLETED = new NotCompleted();

    /** Fault 1: the leader paused (SIGSTOP), taken over, resumed. */
    private record PauseStep(
            String node,
            long generation,
            String newLeader,
            long newGeneration,
            long takeoverMs,
            long pausedMs,
            String taskWrite,
            String steppedDown,
            long steppedDownMsAfterResume,
            String deliberateStaleWrite,
            String outcome)
            implements Step {}

    /** Fault 2: the leader killed (SIGKILL), taken over, restarted. */
    private record KillStep(String node, long generation, String newLeader, long newGeneration, long takeoverMs)
            implements Step {}

    /** Fault 3 behind a transaction pooler: no backend of the leader's own to terminate. */
    private record NoBackends(String node, int backendsTerminated) implements Step {}

    /** Fault 3: the leader's backends terminated; who led once fenced writes resumed. */
    private record BackendsCut(
            String node,
            int backendsTerminated,
            long generation,
            long writesResumedMs,
            String leaderAfter,
            long generationAfter)
            implements Step {}

    /** Fault 4: the leader stopped gracefully (SIGTERM); its lease released and handed off. */
    private record GracefulStep(
            String node, long generation, String newLeader, long newGeneration, long handOffMs, String endReason)
            implements Step {}

    private static final List<String> CHECKER_RULES = List.of(
            "R1 at most one owner per generation",
            "R3 committed writes never go back in generation (ledger order)",
            "R4 every write carries a generation granted to its writer");

    /** The JSON report, field by field. {@code verification} is the verifier's own JSON (as {@code baton verify}). */
    private record Report(
            String verdict,
            int nodes,
            String lease,
            long leaseTtlMs,
            long renewIntervalMs,
            long runMs,
            int generations,
            int rowsWritten,
            List<GenerationDetail> generationDetails,
            Long takeoverAfterKillMs,
            Long handOffAfterReleaseMs,
            Long takeoverAfterPauseMs,
            StaleWrites staleWrites,
            int faultsInjected,
            Faults faults,
            Map<String, Object> verification,
            HistoryCheck checker,
            List<String> failures,
            String nodeLogs) {}

    private record GenerationDetail(long generation, String owner, long rows, String ended) {}

    private record StaleWrites(
            long rejectedByDatabase,
            long taskWritesRejectedByDatabase,
            long deliberateStaleWritesRejected,
            long refusedLocally,
            long unknownOutcome) {}

    private record Faults(Step pause, Step kill, Step terminateBackends, Step gracefulStop) {}

    /** FencedMutexChecker's verdict over the lease history and the ledger. */
    private record HistoryCheck(
            boolean ok, int grantsChecked, int writesChecked, List<String> rules, List<String> violations) {}
}
