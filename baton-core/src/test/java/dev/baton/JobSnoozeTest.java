package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * {@link JobHandler.Snooze}: the job waits and runs again, its attempt given back, so snoozing never uses
 * up max attempts; the delay is counted on the database clock; reported as SNOOZED.
 */
class JobSnoozeTest extends JobBehaviourTestBase {
    static final class Outcomes implements BatonMetrics {
        final List<JobOutcome> seen = new CopyOnWriteArrayList<>();

        @Override
        public void jobFinished(String queue, String kind, JobOutcome outcome, Duration ran) {
            seen.add(outcome);
        }
    }

    /**
     * A job of two attempts snoozed five times still runs, every run as attempt 1, and ends succeeded with
     * no error; each snooze is reported as SNOOZED.
     *
     * <p>Protection removed and seen failing: giving the attempt back ({@code attempt = greatest(j.attempt
     * - 1, 0)} in the snooze statement replaced by {@code attempt = j.attempt}): the runs saw attempts
     * [1, 2, 3, 4, 5, 6] for a job of two attempts.
     */
    @Test
    void aJobSnoozedMoreTimesThanItsMaxAttemptsStillRuns() throws Exception {
        List<Integer> attempts = new CopyOnWriteArrayList<>();
        AtomicInteger runs = new AtomicInteger();
        Outcomes metrics = new Outcomes();
        Baton node = start(nodeBuilder("snooze-node")
                .metrics(metrics)
                .worker(fastWorker("default", 1).build())
                .handle("poll", Item.class, (item, ctx) -> {
                    attempts.add(ctx.attempt());
                    if (runs.incrementAndGet() <= 5) {
                        throw new JobHandler.Snooze(Duration.ZERO);
                    }
                }));
        long id = node.jobs()
                .enqueue(JobRequest.of("poll", new Item("p")).maxAttempts(2))
                .id();
        JobInfo done = awaitState(node.jobs(), id, JobState.SUCCEEDED);
        assertThat(attempts).containsExactly(1, 1, 1, 1, 1, 1);
        assertThat(done.attempt()).isEqualTo(1);
        assertThat(done.errors()).as("a snooze is not an error").isEmpty();
        Awaitility.await().atMost(WAIT).until(() -> metrics.seen.size() >= 6);
        assertThat(metrics.seen)
                .containsExactly(
                        BatonMetrics.JobOutcome.SNOOZED,
                        BatonMetrics.JobOutcome.SNOOZED,
                        BatonMetrics.JobOutcome.SNOOZED,
                        BatonMetrics.JobOutcome.SNOOZED,
                        BatonMetrics.JobOutcome.SNOOZED,
                        BatonMetrics.JobOutcome.SUCCEEDED);
    }

    /**
     * The snoozed job is due again no sooner than the delay after its attempt started, on the database
     * clock; it waits available with its attempt given back.
     *
     * <p>Protection removed and seen failing: the delay ({@code + t.delay_ms * interval '1 millisecond'} in
     * the snooze statement): the job was due at once, before attempted_at + 1 h.
     */
    @Test
    void theSnoozeDelayIsCountedOnTheDatabaseClock() throws Exception {
        Baton node = start(nodeBuilder("snooze-delay")
                .worker(fastWorker("default", 1).build())
                .handle("poll", Item.class, (item, ctx) -> {
                    throw new JobHandler.Snooze(Duration.ofHours(1));
                }));
        long id = node.jobs().enqueue(JobRequest.of("poll", new Item("p"))).id();
        Awaitility.await().atMost(WAIT).pollInterval(Duration.ofMillis(20)).until(() -> {
            Row seen = row(id); // one read: available again after an attempt, not yet claimed
            return seen.state().equals("available") && seen.attemptedAt() != null;
        });
        Row r = row(id);
        assertThat(r.attempt()).isZero();
        assertThat(r.token()).isNull();
        assertThat(r.runAt()).isAfterOrEqualTo(r.attemptedAt().plus(Duration.ofHours(1)));
    }

    /** A snooze asked for while cancellation was requested ends the job cancelled, not waiting. */
    @Test
    void aSnoozeOfAJobWhoseCancellationWasRequestedEndsCancelled() throws Exception {
        java.util.concurrent.CountDownLatch started = new java.util.concurrent.CountDownLatch(1);
        java.util.concurrent.CountDownLatch cancelled = new java.util.concurrent.CountDownLatch(1);
        Baton node = start(nodeBuilder("snooze-cancel")
                .worker(fastWorker("default", 1).build())
                .handle("poll", Item.class, (item, ctx) -> {
                    started.countDown();
                    cancelled.await();
                    throw new JobHandler.Snooze(Duration.ZERO);
                }));
        long id = node.jobs().enqueue(JobRequest.of("poll", new Item("p"))).id();
        assertThat(started.await(WAIT.toMillis(), java.util.concurrent.TimeUnit.MILLISECONDS))
                .isTrue();
        node.jobs().cancel(id);
        cancelled.countDown();
        awaitState(node.jobs(), id, JobState.CANCELLED);
    }

    /** A snooze delay out of range is refused, naming the range. */
    @Test
    void badDelaysAreRefused() {
        for (Duration bad : new Duration[] {null, Duration.ofMillis(-1), Duration.ofDays(31)}) {
            assertThatThrownBy(() -> new JobHandler.Snooze(bad))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("snooze delay must be between zero and PT720H (JobHandler.MAX_DELAY), but was " + bad);
        }
        assertThat(new JobHandler.Snooze(Duration.ofSeconds(3)).delay()).isEqualTo(Duration.ofSeconds(3));
    }
}
