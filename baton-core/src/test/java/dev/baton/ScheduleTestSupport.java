package dev.baton;

import dev.baton.internal.db.Db;
import dev.baton.internal.job.Interceptors;
import dev.baton.internal.job.JobStore;
import dev.baton.internal.maintenance.MaintenanceTask;
import dev.baton.internal.notify.Notifier;
import dev.baton.internal.schedule.ScheduleStore;
import dev.baton.internal.schedule.Scheduler;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;
import org.awaitility.Awaitility;

/**
 * Helpers for the recurring-schedule tests (S…): node builders with short timings, a scheduler built
 * directly (bypassing the leader lease) so a test decides when firing happens, waits on the database
 * clock, and reads of the jobs a schedule fired, keyed by their due instant.
 */
abstract class ScheduleTestSupport extends DbTest {

    /** A node builder on this test's schema; LISTEN only where it can work (not through PgBouncer). */
    Baton.Builder nodeBuilder(String id, DataSource ds) {
        return Baton.builder(ds)
                .schema(schema)
                .nodeId(id)
                .nodeHeartbeat(Duration.ofMillis(200))
                .testHooks(points::reach)
                .maintenance(fastLeadership())
                .notifications(PG.pooled() ? NotificationMode.POLL : NotificationMode.AUTO);
    }

    /** Job lease 2 s, heartbeat 150 ms, poll 50 ms, rescue every 200 ms, drain 300 ms. */
    static WorkerConfig.Builder fastWorker(String queue, int concurrency) {
        return WorkerConfig.builder()
                .queue(queue, concurrency)
                .jobLease(Duration.ofSeconds(2))
                .heartbeatInterval(Duration.ofMillis(150))
                .pollInterval(Duration.ofMillis(50))
                .rescueInterval(Duration.ofMillis(200))
                .drainTimeout(Duration.ofMillis(300));
    }

    /** Builds and starts the node; it is closed after the test (before pools registered earlier). */
    Baton startNode(Baton.Builder b) {
        return closeLater(b.build()).start();
    }

    /** The schedules API on the test's pool, without starting a node. */
    Schedules schedulesApi() {
        return Baton.builder(appPool).schema(schema).build().schedules();
    }

    /** The jobs API on the test's pool, without a worker. */
    Jobs jobsApi() {
        return Baton.builder(appPool).schema(schema).build().jobs();
    }

    /** A scheduler of application {@code app} on {@code ds}, as a node would run it, but not under the lease. */
    Scheduler scheduler(DataSource ds, String app) {
        return new Scheduler(
                Db.of(ds),
                new ScheduleStore(schema),
                new JobStore(schema),
                Notifier.polling(),
                Duration.ofMillis(100),
                app,
                "0",
                BatonMetrics.NONE,
                System::nanoTime,
                Interceptors.NONE);
    }

    /** Holds the scheduler's leader lease for the rest of the test, so no node fires: the test does. */
    LeaseGrant blockNodeSchedulers() {
        return leases.tryAcquire(MaintenanceTask.LEASE, "test-holds-the-scheduler", Duration.ofMinutes(10))
                .orElseThrow(() -> new AssertionError("scheduler lease already held"));
    }

    Instant dbNow() throws SQLException {
        try (Connection c = pool.getConnection()) {
            return new ScheduleStore(schema).dbNow(c);
        }
    }

    /** Waits, polling the database clock, until it reads at least {@code t}. */
    void awaitDbClock(Instant t) {
        Awaitility.await().atMost(WAIT).pollInterval(Duration.ofMillis(5)).until(() -> !dbNow().isBefore(t));
    }

    /** The schedule's stored next run. */
    Instant nextRunAt(String name) throws SQLException {
        return instantOf("SELECT next_run_at FROM " + schema + ".schedule WHERE name = ?", name)
                .orElseThrow(() -> new AssertionError("no schedule " + name));
    }

    Optional<Instant> instantOf(String sql, String param) throws SQLException {
        try (Connection c = pool.getConnection();
                PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, param);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next() || rs.getTimestamp(1) == null) {
                    return Optional.empty();
                }
                return Optional.of(rs.getTimestamp(1).toInstant());
            }
        }
    }

    ScheduleInfo info(String name) {
        return schedulesApi().list(null, 100).items().stream()
                .filter(i -> i.name().equals(name))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no schedule " + name));
    }

    /** The due instant named by a job's idempotency key {@code schedule:<name>:<instant>}. */
    static Instant dueOf(String name, String idempotencyKey) {
        String prefix = "schedule:" + name + ":";
        if (idempotencyKey == null || !idempotencyKey.startsWith(prefix)) {
            throw new AssertionError("job of schedule '" + name + "' has idempotency key " + idempotencyKey
                    + ", not one naming its due instant (" + prefix + "<instant>)");
        }
        return Instant.parse(idempotencyKey.substring(prefix.length()));
    }

    /** A fired job: id, idempotency key (null if none), state. */
    record FiredJob(long id, String key, String state) {}

    /** Every job of {@code kind} that was not triggered by hand, in id order. */
    List<FiredJob> jobsOfKind(String kind) throws SQLException {
        List<FiredJob> out = new ArrayList<>();
        try (Connection c = pool.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT id, idempotency_key, state FROM " + schema
                        + ".job WHERE kind = ? AND coalesce(idempotency_key, '') NOT LIKE '%:manual:%' ORDER BY id")) {
            ps.setString(1, kind);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(new FiredJob(rs.getLong(1), rs.getString(2), rs.getString(3)));
                }
            }
        }
        return out;
    }

    /** The due instants of the jobs of {@code kind} fired by schedule {@code name}, in id order. */
    List<Instant> firedInstants(String name, String kind) throws SQLException {
        List<Instant> out = new ArrayList<>();
        for (FiredJob j : jobsOfKind(kind)) {
            out.add(dueOf(name, j.key()));
        }
        return out;
    }

    /** {@code from}, {@code from + step}, … while before {@code untilExclusive}. */
    static List<Instant> grid(Instant from, Instant untilExclusive, Duration step) {
        List<Instant> out = new ArrayList<>();
        for (Instant t = from; t.isBefore(untilExclusive); t = t.plus(step)) {
            out.add(t);
        }
        return out;
    }

    /** Backends of this test's schema waiting on a lock (pg_stat_activity; server side, so pooled too). */
    long backendsWaitingOnLock() throws SQLException {
        try (Connection c = pool.getConnection();
                PreparedStatement ps =
                        c.prepareStatement("SELECT count(*) FROM pg_stat_activity WHERE state = 'active' "
                                + "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid() AND query LIKE ?")) {
            ps.setString(1, "%" + schema + "%"); // statements name it quoted: "schema".table
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }
}
