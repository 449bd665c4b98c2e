package dev.baton.internal.schedule;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.BatonMetrics;
import dev.baton.DbTest;
import dev.baton.internal.db.Db;
import dev.baton.internal.job.Interceptors;
import dev.baton.internal.job.JobStore;
import dev.baton.internal.notify.Notifier;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * The scheduler as a service: each test builds one on a real database and calls its {@code runOnce()}
 * directly (no thread started, except in the stop test), with schedules inserted through the store.
 *
 * <p>Seen failing: with {@code runOnce} returning the poll interval instead of the wait for the next due
 * instant, the first two tests failed on the upper bound; with the orphan check run at every pass, the third
 * failed on "not before a minute on the ticker"; without {@code onStopRequested} signalling the subscription,
 * stop waited out the 30 s join and the last test failed.
 */
class SchedulerTest extends DbTest {
    /** One day: the schedules of these tests are due at most once during a test. */
    private static final long DAY_MS = Duration.ofDays(1).toMillis();
    /** Longer than any wait in these tests, so the wait a pass returns is the time to the next instant. */
    private static final Duration LONG_POLL = Duration.ofDays(2);

    private ScheduleStore store;

    private Scheduler scheduler(Duration pollInterval, LongSupplier ticker) {
        store = new ScheduleStore(schema);
        return new Scheduler(
                Db.of(appPool),
                store,
                new JobStore(schema),
                Notifier.polling(),
                pollInterval,
                "svc",
                "1",
                BatonMetrics.NONE,
                ticker,
                Interceptors.NONE);
    }

    /** A daily interval schedule of application svc, declared by {@code version}, first due at {@code next}. */
    private void insertDaily(String name, String version, Instant next) throws SQLException {
        ScheduleStore.Definition d = new ScheduleStore.Definition(
                name,
                "interval",
                Long.toString(DAY_MS),
                "UTC",
                "tick",
                "default",
                "null",
                50,
                25,
                "run_once",
                0,
                Duration.ofMinutes(1).toMillis(),
                false);
        try (Connection c = pool.getConnection()) {
            new ScheduleStore(schema).insert(c, "svc", version, d, next);
        }
    }

    private Instant dbNow() throws SQLException {
        try (Connection c = pool.getConnection()) {
            return new ScheduleStore(schema).dbNow(c);
        }
    }

    /** The last instant of the daily grid at or before {@code t}: due, and its successor a day later. */
    private static Instant dayStart(Instant t) {
        return Instant.ofEpochMilli(Math.floorDiv(t.toEpochMilli(), DAY_MS) * DAY_MS);
    }

    private List<String> idempotencyKeysOfJobs() throws SQLException {
        List<String> out = new ArrayList<>();
        try (Connection c = pool.getConnection();
                PreparedStatement ps =
                        c.prepareStatement("SELECT idempotency_key FROM " + schema + ".job ORDER BY id");
                ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                out.add(rs.getString(1));
            }
        }
        return out;
    }

    private Instant nextRunAt(String name) throws SQLException {
        return timestampOf("SELECT next_run_at FROM " + schema + ".schedule WHERE name = ?", name);
    }

    private boolean enabled(String name) throws SQLException {
        try (Connection c = pool.getConnection();
                PreparedStatement ps =
                        c.prepareStatement("SELECT enabled FROM " + schema + ".schedule WHERE name = ?")) {
            ps.setString(1, name);
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).as("schedule %s exists", name).isTrue();
                return rs.getBoolean(1);
            }
        }
    }

    private Instant timestampOf(String sql, String param) throws SQLException {
        try (Connection c = pool.getConnection();
                PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, param);
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).isTrue();
                return rs.getTimestamp(1).toInstant();
            }
        }
    }

    @Test
    void aPassFiresTheDueScheduleAndWaitsNoLongerThanUntilItsNextInstant() throws Exception {
        Scheduler scheduler = scheduler(LONG_POLL, System::nanoTime);
        Instant due = dayStart(dbNow());
        Instant next = due.plusMillis(DAY_MS);
        insertDaily("daily", "1", due);

        Instant before = dbNow();
        long wait = scheduler.runOnce();
        Instant after = dbNow();

        assertThat(idempotencyKeysOfJobs())
                .as("one job, for the due instant")
                .containsExactly(ScheduleKeys.idempotencyKey("daily", due));
        assertThat(nextRunAt("daily")).isEqualTo(next);
        // The wait is measured on the database clock during the pass, between these two readings.
        assertThat(wait)
                .isPositive()
                .isLessThanOrEqualTo(Duration.between(before, next).toNanos())
                .isGreaterThanOrEqualTo(Duration.between(after, next).toNanos());
        assertThat(scheduler.fireDue()).as("nothing due any more").isZero();
        assertThat(idempotencyKeysOfJobs()).hasSize(1);
    }

    @Test
    void withNothingDueAPassFiresNothingAndWaitsForTheNextInstantOrThePollInterval() throws Exception {
        Duration poll = Duration.ofSeconds(5);
        assertThat(scheduler(poll, System::nanoTime).runOnce())
                .as("no schedule at all: the poll interval")
                .isEqualTo(poll.toNanos());

        Instant next = dayStart(dbNow()).plusMillis(2 * DAY_MS); // more than a day away: beyond the 5 s cap
        insertDaily("later", "1", next);
        Scheduler scheduler = scheduler(LONG_POLL, System::nanoTime);
        Instant before = dbNow();
        long wait = scheduler.runOnce();
        Instant after = dbNow();

        assertThat(idempotencyKeysOfJobs()).isEmpty();
        assertThat(nextRunAt("later")).isEqualTo(next);
        assertThat(wait)
                .isPositive()
                .isLessThanOrEqualTo(Duration.between(before, next).toNanos())
                .isGreaterThanOrEqualTo(Duration.between(after, next).toNanos());
        assertThat(scheduler(poll, System::nanoTime).runOnce())
                .as("capped by the poll interval without notifications")
                .isEqualTo(poll.toNanos());
    }

    @Test
    void thePassReconcilesOncePerOrphanCheckOnTheTicker() throws Exception {
        AtomicLong ticker = new AtomicLong();
        Scheduler scheduler = scheduler(LONG_POLL, ticker::get);
        // Declared only by version 0, which no live node runs (and not by this node's version 1): an orphan.
        insertDaily("orphan", "0", dayStart(dbNow()).plusMillis(DAY_MS));

        scheduler.runOnce();
        ticker.addAndGet(Scheduler.ORPHAN_CHECK.toNanos() - 1);
        scheduler.runOnce();
        assertThat(enabled("orphan")).as("not before a minute on the ticker").isTrue();

        ticker.addAndGet(1);
        scheduler.runOnce();
        assertThat(enabled("orphan")).as("disabled by the orphan check").isFalse();
    }

    @Test
    void stopEndsTheWaitOnTheSubscription() throws Exception {
        Scheduler scheduler = scheduler(LONG_POLL, System::nanoTime);
        Instant due = dayStart(dbNow());
        insertDaily("daily", "1", due);

        scheduler.start();
        Awaitility.await()
                .atMost(WAIT)
                .untilAsserted(() ->
                        assertThat(idempotencyKeysOfJobs()).containsExactly(ScheduleKeys.idempotencyKey("daily", due)));
        // Now it waits for the next instant, a day away (no notifications: the poll interval is longer).
        long start = System.nanoTime();
        scheduler.stop();
        assertThat(scheduler.isRunning()).isFalse();
        assertThat(Duration.ofNanos(System.nanoTime() - start))
                .as("stop ended the wait rather than giving up on the thread after its 30 s join")
                .isLessThan(Duration.ofSeconds(30));
    }
}
