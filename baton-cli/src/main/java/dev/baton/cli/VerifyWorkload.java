package dev.baton.cli;

import dev.baton.Baton;
import dev.baton.BatonException;
import dev.baton.EnqueueResult;
import dev.baton.JobContext;
import dev.baton.JobRequest;
import dev.baton.LeaderContext;
import dev.baton.LeaderTask;
import dev.baton.Leadership;
import dev.baton.LeadershipConfig;
import dev.baton.LeadershipListener;
import dev.baton.LeaseGrant;
import dev.baton.LeaseLostException;
import dev.baton.RevocationReason;
import dev.baton.Schedule;
import dev.baton.UnknownOutcomeException;
import dev.baton.WorkerConfig;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;
import javax.sql.DataSource;

/**
 * The verification workload: a fixed contract (documented in the README, "Verification workload") whose
 * tables let anyone check a run with SQL, and {@link Verifier} check it automatically.
 *
 * <ul>
 *   <li>Lease {@value #LEASE}: while holding it, the node appends a row to {@code verify_ledger} every
 *       write interval, as a fenced write; in the same fenced transaction it enqueues the {@value #EFFECT_KIND}
 *       jobs due at the job rate and records each in {@code verify_enqueued}.</li>
 *   <li>Handler of {@value #EFFECT_KIND}: inserts {@code verify_external} in its own transaction (an effect
 *       outside the completion, so at least once), then {@code verify_effect} inside the completion
 *       transaction.</li>
 *   <li>Schedule {@value #TICK_SCHEDULE}: fires every tick interval; its job inserts {@code verify_tick}
 *       (due instant, job id, node) inside the completion transaction.</li>
 * </ul>
 */
final class VerifyWorkload {
    static final String LEASE = "verify-leader";
    static final String EFFECT_KIND = "verify.effect";
    static final String TICK_SCHEDULE = "verify.tick";
    static final String TICK_KIND = "verify.tick";
    static final String QUEUE = "verify";
    static final String APPLICATION = "baton-verify";
    static final List<String> TABLES =
            List.of("verify_ledger", "verify_enqueued", "verify_external", "verify_effect", "verify_tick");
    /** Effect jobs get many attempts: a chaos run must not fail a job by exhausting them. */
    static final int EFFECT_MAX_ATTEMPTS = 1000;

    private static final int MAX_JOBS_PER_WRITE = 100;

    /** Timing of one node; validated by {@link #validate()}. */
    record Settings(
            Duration leaseTtl,
            Duration renewInterval,
            Duration writeInterval,
            double jobRate,
            Duration jobLease,
            Duration jobHeartbeat,
            Duration rescueInterval,
            Duration tickInterval,
            int concurrency,
            Duration drainTimeout) {
        static Settings defaults() {
            return new Settings(
                    Duration.ofSeconds(2),
                    Duration.ofMillis(400),
                    Duration.ofMillis(20),
                    50,
                    Duration.ofSeconds(4),
                    Duration.ofMillis(500),
                    Duration.ofSeconds(1),
                    Duration.ofSeconds(1),
                    4,
                    Duration.ofSeconds(5));
        }

        LeadershipConfig leadership() {
            return LeadershipConfig.builder()
                    .leaseTtl(leaseTtl)
                    .renewInterval(renewInterval)
                    .stopTimeout(Duration.ofSeconds(5))
                    .build();
        }

        WorkerConfig worker() {
            return WorkerConfig.builder()
                    .queue(QUEUE, concurrency)
                    .jobLease(jobLease)
                    .heartbeatInterval(jobHeartbeat)
                    .pollInterval(Duration.ofMillis(500))
                    .rescueInterval(rescueInterval)
                    .maxStalls(100)
                    .drainTimeout(drainTimeout)
                    .build();
        }

        /** Throws IllegalArgumentException naming what is wrong. */
        void validate() {
            leadership();
            worker();
            if (writeInterval.compareTo(Duration.ofMillis(1)) < 0
                    || writeInterval.compareTo(Duration.ofSeconds(10)) > 0) {
                throw new IllegalArgumentException(
                        "--write-interval must be 1ms to 10s, but was " + Durations.human(writeInterval));
            }
            if (!(jobRate >= 0 && jobRate <= 1000)) {
                throw new IllegalArgumentException("--job-rate must be 0 to 1000 jobs per second, but was " + jobRate);
            }
            if (tickInterval.compareTo(Schedule.MIN_INTERVAL) < 0) {
                throw new IllegalArgumentException("--tick-interval must be at least "
                        + Durations.human(Schedule.MIN_INTERVAL) + ", but was " + Durations.human(tickInterval));
            }
        }
    }

    private final String schema;
    private final String nodeId;
    private final Settings settings;
    private final Consumer<String> emit;
    private final DataSource app;
    private final String q;

    private volatile boolean enqueueing = true;

    final AtomicLong ledgerRows = new AtomicLong();
    final AtomicLong enqueued = new AtomicLong();
    final AtomicLong effects = new AtomicLong();
    final AtomicLong externals = new AtomicLong();
    final AtomicLong ticks = new AtomicLong();

    /**
     * @param app  the pool the handlers use for their "external" insert
     * @param emit receives the event lines of {@link NodeCommand}'s protocol
     */
    VerifyWorkload(String schema, String nodeId, Settings settings, DataSource app, Consumer<String> emit) {
        this.schema = schema;
        this.nodeId = nodeId;
        this.settings = settings;
        this.app = app;
        this.emit = emit;
        this.q = "\"" + schema + "\".";
    }

    /**
     * Creates the workload's tables if missing. Several nodes may start at once: creation is serialized by a
     * transaction-scoped advisory lock (which also works through a transaction-pooling PgBouncer).
     */
    static void install(DataSource ds, String schema) throws SQLException {
        String q = "\"" + schema + "\".";
        try (Connection c = ds.getConnection()) {
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                s.execute("SELECT pg_advisory_xact_lock(hashtext('baton-verify-install:" + schema + "'))");
                s.execute("CREATE TABLE IF NOT EXISTS " + q + "verify_ledger (seq bigserial PRIMARY KEY, "
                        + "lease_name text NOT NULL, generation bigint NOT NULL, node_id text NOT NULL, "
                        + "written_at timestamptz NOT NULL DEFAULT clock_timestamp())");
                s.execute("CREATE TABLE IF NOT EXISTS " + q + "verify_enqueued (job_id bigint PRIMARY KEY, "
                        + "enqueued_at timestamptz NOT NULL DEFAULT clock_timestamp())");
                s.execute("CREATE TABLE IF NOT EXISTS " + q + "verify_external (job_id bigint NOT NULL, "
                        + "attempt int NOT NULL, node_id text NOT NULL)");
                s.execute("CREATE INDEX IF NOT EXISTS verify_external_job ON " + q + "verify_external (job_id)");
                s.execute("CREATE TABLE IF NOT EXISTS " + q + "verify_effect (job_id bigint NOT NULL, "
                        + "attempt int NOT NULL, node_id text NOT NULL)");
                s.execute("CREATE INDEX IF NOT EXISTS verify_effect_job ON " + q + "verify_effect (job_id)");
                s.execute("CREATE TABLE IF NOT EXISTS " + q + "verify_tick (due_at timestamptz NOT NULL, "
                        + "job_id bigint NOT NULL, node_id text NOT NULL)");
                c.commit();
            } catch (SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            }
        }
    }

    /** Adds the worker, the two handlers and the tick schedule to a node's builder. */
    Baton.Builder configure(Baton.Builder builder) {
        return builder.application(APPLICATION, "1")
                .worker(settings.worker())
                .maintenance(settings.leadership())
                .handle(EFFECT_KIND, Object.class, (ignored, ctx) -> effect(ctx))
                .handle(TICK_KIND, Object.class, (ignored, ctx) -> tick(ctx))
                .schedule(Schedule.every(TICK_SCHEDULE, settings.tickInterval())
                        .job(TICK_KIND, null)
                        .queue(QUEUE));
    }

    /** Starts campaigning for {@value #LEASE}; the listener gets elections and revocations. */
    Leadership lead(Baton baton, LeadershipListener listener) {
        return baton.leadership(LEASE, settings.leadership(), leaderTask(baton), listener)
                .start();
    }

    private void effect(JobContext ctx) throws SQLException {
        try (Connection c = app.getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "INSERT INTO " + q + "verify_external (job_id, attempt, node_id) " + "VALUES (?, ?, ?)")) {
            ps.setLong(1, ctx.jobId());
            ps.setInt(2, ctx.attempt());
            ps.setString(3, nodeId);
            ps.executeUpdate();
        }
        externals.incrementAndGet();
        ctx.transaction(tx -> {
            try (PreparedStatement ps = tx.prepareStatement(
                    "INSERT INTO " + q + "verify_effect (job_id, attempt, node_id) " + "VALUES (?, ?, ?)")) {
                ps.setLong(1, ctx.jobId());
                ps.setInt(2, ctx.attempt());
                ps.setString(3, nodeId);
                return ps.executeUpdate();
            }
        });
        effects.incrementAndGet();
    }

    private void tick(JobContext ctx) {
        // The due instant is in the job's idempotency key, schedule:<name>:<ISO instant>.
        String prefix = "schedule:" + TICK_SCHEDULE + ":";
        ctx.transaction(tx -> {
            try (PreparedStatement ps =
                    tx.prepareStatement("INSERT INTO " + q + "verify_tick (due_at, job_id, node_id) "
                            + "SELECT CASE WHEN idempotency_key LIKE ? THEN substr(idempotency_key, ?)::timestamptz ELSE run_at END, "
                            + "id, ? FROM " + q + "job WHERE id = ?")) {
                ps.setString(1, prefix.replace("_", "\\_") + "%");
                ps.setInt(2, prefix.length() + 1);
                ps.setString(3, nodeId);
                ps.setLong(4, ctx.jobId());
                return ps.executeUpdate();
            }
        });
        ticks.incrementAndGet();
    }

    private LeaderTask leaderTask(Baton baton) {
        String ledger = "INSERT INTO " + q + "verify_ledger (lease_name, generation, node_id) VALUES (?, ?, ?)";
        String record = "INSERT INTO " + q + "verify_enqueued (job_id, enqueued_at) VALUES (?, clock_timestamp())";
        return (LeaderContext ctx) -> {
            long generation = ctx.grant().generation();
            long last = System.nanoTime();
            double owed = 0;
            while (!ctx.isCancelled()) {
                long now = System.nanoTime();
                owed = Math.min(MAX_JOBS_PER_WRITE, owed + settings.jobRate() * (now - last) / 1e9);
                last = now;
                int jobs = enqueueing ? (int) owed : 0;
                try {
                    ctx.fenced(tx -> {
                        try (PreparedStatement ps = tx.prepareStatement(ledger)) {
                            ps.setString(1, LEASE);
                            ps.setLong(2, generation);
                            ps.setString(3, nodeId);
                            ps.executeUpdate();
                        }
                        try (PreparedStatement ps = tx.prepareStatement(record)) {
                            for (int i = 0; i < jobs; i++) {
                                EnqueueResult r = baton.jobs()
                                        .enqueue(
                                                tx,
                                                JobRequest.of(EFFECT_KIND, null)
                                                        .queue(QUEUE)
                                                        .maxAttempts(EFFECT_MAX_ATTEMPTS));
                                ps.setLong(1, r.id());
                                ps.addBatch();
                            }
                            if (jobs > 0) {
                                ps.executeBatch();
                            }
                        }
                        return null;
                    });
                    owed -= jobs;
                    ledgerRows.incrementAndGet();
                    enqueued.addAndGet(jobs);
                } catch (LeaseLostException e) {
                    // The term is over: never retry under the same grant.
                    boolean local = e.getMessage() != null && e.getMessage().contains("locally");
                    emit.accept("WRITE_REJECTED " + generation + " " + (local ? "local" : "database"));
                    return;
                } catch (UnknownOutcomeException e) {
                    emit.accept("WRITE_UNKNOWN " + generation);
                } catch (BatonException e) {
                    if (ctx.isCancelled()) {
                        return;
                    }
                    emit.accept("WRITE_ERROR " + generation + " " + Db.rootMessage(e));
                }
                if (ctx.awaitCancellation(settings.writeInterval())) {
                    return;
                }
            }
        };
    }

    /** From now on the leader enqueues no more jobs (shutting down: let the others drain the queue). */
    void stopEnqueueing() {
        enqueueing = false;
    }

    /** A write under a revoked grant, as a zombie task would make it: the fence decides. */
    void staleWrite(Baton baton, LeaseGrant grant) {
        String insert = "INSERT INTO " + q + "verify_ledger (lease_name, generation, node_id) VALUES (?, ?, ?)";
        for (int attempt = 1; ; attempt++) {
            try {
                baton.leases().fenced(grant, tx -> {
                    try (PreparedStatement ps = tx.prepareStatement(insert)) {
                        ps.setString(1, LEASE);
                        ps.setLong(2, grant.generation());
                        ps.setString(3, nodeId);
                        return ps.executeUpdate();
                    }
                });
                emit.accept("STALE_WRITE_COMMITTED " + grant.generation());
                return;
            } catch (LeaseLostException e) {
                emit.accept("STALE_WRITE_REJECTED " + grant.generation());
                return;
            } catch (UnknownOutcomeException e) {
                emit.accept("STALE_WRITE_ERROR " + grant.generation() + " outcome unknown: " + Db.rootMessage(e));
                return;
            } catch (RuntimeException e) {
                // A connection broken by the pause, for example: the write did not happen; try again.
                if (attempt == 3) {
                    emit.accept("STALE_WRITE_ERROR " + grant.generation() + " " + Db.rootMessage(e));
                    return;
                }
            }
        }
    }

    /** {@code STATS} line: this process's counts since it started. */
    String stats() {
        return "STATS ledger=" + ledgerRows.get() + " enqueued=" + enqueued.get() + " effects=" + effects.get()
                + " externals=" + externals.get() + " ticks=" + ticks.get();
    }

    static boolean revokedByFence(RevocationReason reason) {
        return reason == RevocationReason.LOST || reason == RevocationReason.DEADLINE;
    }
}
