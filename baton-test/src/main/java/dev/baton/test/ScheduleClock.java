package dev.baton.test;

import dev.baton.Baton;
import dev.baton.internal.schedule.Scheduler;
import dev.baton.internal.testsupport.TestSupport;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * A clock for a node's recurring schedules that a test moves by hand: each move fires what is due as of
 * the clock's new instant, as the node's scheduler would in a pass at that instant (misfire policies judge
 * lateness against it), and returns the jobs that firing enqueued. The jobs' run time is the database
 * clock's now, so they are due at once (run them with {@link InlineWorker}). Only the schedules' firing
 * sees this clock; everything else keeps the database clock.
 *
 * <pre>{@code
 * ScheduleClock clock = ScheduleClock.of(baton);        // declares the node's schedules if it is not started
 * assertThat(clock.advanceBy(Duration.ofMinutes(59))).isEmpty();
 * List<EnqueuedJob> fired = clock.advanceToNextDue();   // the hourly schedule's instant
 * assertThat(fired).hasSize(1);
 * }</pre>
 *
 * <p>The clock starts at the database clock's now and never moves back. Use it on a node that is not
 * started: a started node's own scheduler fires on the database clock as well (harmless for schedules
 * due later than the test runs, since firing is a compare-and-set on the next run). Not thread-safe.
 */
public final class ScheduleClock {
    private final Baton baton;
    private final DataSource dataSource;
    private final Scheduler scheduler;
    private final EnqueuedJobs jobs;
    private Instant now;

    private ScheduleClock(Baton baton) {
        this.baton = baton;
        TestSupport.Access access = TestSupport.access();
        this.dataSource = access.dataSource(baton);
        this.scheduler = access.scheduler(baton);
        this.jobs = EnqueuedJobs.of(baton);
        this.now = SqlNames.read(dataSource, "reading the database clock", c -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT clock_timestamp()");
                    ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getTimestamp(1).toInstant();
            }
        });
    }

    /**
     * A clock for {@code baton}'s schedules, starting at the database clock's now. If the node is not
     * started, its declared schedules are stored first, as its start would (the schema must be migrated).
     */
    public static ScheduleClock of(Baton baton) {
        return new ScheduleClock(Objects.requireNonNull(baton, "baton"));
    }

    /** The clock's instant: where the last move left it. */
    public Instant now() {
        return now;
    }

    /**
     * The earliest next run of the schema's enabled, unpaused schedules (of any application); empty if
     * there is none.
     */
    public Optional<Instant> nextDue() {
        return SqlNames.read(dataSource, "reading the next due schedule", c -> {
            try (PreparedStatement ps = c.prepareStatement("SELECT min(next_run_at) FROM "
                            + SqlNames.table(baton.schema(), "schedule") + " WHERE enabled AND NOT paused");
                    ResultSet rs = ps.executeQuery()) {
                rs.next();
                Timestamp t = rs.getTimestamp(1);
                return Optional.ofNullable(t).map(Timestamp::toInstant);
            }
        });
    }

    /**
     * Moves the clock to the next due instant of the schema's schedules (if it is later than the clock)
     * and fires as of it; returns the jobs enqueued, in id order.
     *
     * @throws IllegalStateException if no enabled, unpaused schedule exists
     */
    public List<EnqueuedJob> advanceToNextDue() {
        Instant next = nextDue()
                .orElseThrow(() -> new IllegalStateException(
                        "no enabled, unpaused schedule in schema '" + baton.schema() + "' to advance to"));
        return advanceTo(next.isAfter(now) ? next : now);
    }

    /**
     * Moves the clock forward by {@code step} and fires as of the new instant; returns the jobs enqueued.
     * A step over several due instants fires them as one late pass would: per the schedule's misfire
     * policy. To see each instant fire, step with {@link #advanceToNextDue()}.
     */
    public List<EnqueuedJob> advanceBy(Duration step) {
        Objects.requireNonNull(step, "step");
        if (step.isNegative()) {
            throw new IllegalArgumentException(
                    "step must not be negative (the clock never moves back), but was " + step);
        }
        return advanceTo(now.plus(step));
    }

    /**
     * Moves the clock to {@code instant} and fires as of it; returns the jobs enqueued, in id order.
     *
     * @throws IllegalArgumentException if {@code instant} is before the clock's instant
     */
    public List<EnqueuedJob> advanceTo(Instant instant) {
        Objects.requireNonNull(instant, "instant");
        if (instant.isBefore(now)) {
            throw new IllegalArgumentException(
                    "the clock never moves back: " + instant + " is before its instant " + now);
        }
        long mark = jobs.lastId();
        try {
            scheduler.fireDueAsOf(instant);
        } catch (SQLException e) {
            throw new IllegalStateException("firing schedules as of " + instant + " failed: " + e.getMessage(), e);
        }
        now = instant;
        return jobs.listAfter(mark);
    }
}
