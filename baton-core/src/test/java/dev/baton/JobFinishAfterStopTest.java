package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/**
 * A handler that finishes just after a cancel request or its timeout. The rule: a handler that returns
 * normally without having seen the stop (it never found {@code isCancelled()} true nor
 * {@code awaitCancellation} returning early, and its interrupt is still pending) finished its work before
 * noticing: the attempt is recorded as succeeded and the job is not run again. One that saw the stop and
 * returned, or threw, ends as the stop says: cancelled, or a timeout failure retried by its policy (FAULTS.md
 * J11, the handler that sees the cancellation, is JobCancelTest's).
 */
class JobFinishAfterStopTest extends JobBehaviourTestBase {

    /** Works until its thread is interrupted, never asking Baton; then returns normally. */
    private static void workUntilInterrupted() {
        long giveUp = System.nanoTime() + handlerWait().toNanos();
        while (!Thread.currentThread().isInterrupted() && System.nanoTime() - giveUp < 0) {
            LockSupport.parkNanos(1_000_000); // keeps the interrupt flag set when it returns
        }
    }

    /**
     * Protection removed and seen failing: the "returned without seeing the stop" rule of
     * {@code Worker.execute} (every stopped attempt mapped by its stop reason, as before): the job that
     * finished just after its timeout was recorded as a timeout, retried and run again (attempt 2).
     */
    @Test
    void aHandlerThatFinishesJustAfterItsTimeoutSucceedsAndIsNotRunAgain() throws Exception {
        Baton node = start(nodeBuilder("t-node")
                .worker(fastWorker("default", 2).build())
                .handle("unaware", Item.class, (item, ctx) -> workUntilInterrupted())
                .handle("aware", Item.class, (item, ctx) -> ctx.awaitCancellation(handlerWait())));
        Jobs jobs = node.jobs();
        long unaware = jobs.enqueue(JobRequest.of("unaware", new Item("u")).timeout(Duration.ofMillis(300)))
                .id();
        long aware = jobs.enqueue(JobRequest.of("aware", new Item("a"))
                        .timeout(Duration.ofMillis(300))
                        .maxAttempts(1))
                .id();

        JobInfo done = awaitState(jobs, unaware, JobState.SUCCEEDED);
        assertThat(done.attempt()).as("not run again").isEqualTo(1);
        assertThat(done.errors()).isEmpty();
        JobInfo timedOut = awaitState(jobs, aware, JobState.FAILED);
        assertThat(timedOut.errors())
                .singleElement()
                .satisfies(e -> assertThat(e.errorClass()).isEqualTo("Timeout"));
    }

    /**
     * Protection removed and seen failing: the same rule; the job that finished just after a cancel request
     * it never looked at was recorded as cancelled although its work was done.
     */
    @Test
    void aHandlerThatFinishesJustAfterACancelRequestItDidNotSeeSucceeds() throws Exception {
        CountDownLatch started = new CountDownLatch(2);
        Baton node = start(nodeBuilder("c-node")
                .worker(fastWorker("default", 2).build())
                .handle("unaware", Item.class, (item, ctx) -> {
                    started.countDown();
                    workUntilInterrupted();
                })
                .handle("aware", Item.class, (item, ctx) -> {
                    started.countDown();
                    ctx.awaitCancellation(handlerWait());
                }));
        Jobs jobs = node.jobs();
        long unaware = jobs.enqueue(JobRequest.of("unaware", new Item("u"))).id();
        long aware = jobs.enqueue(JobRequest.of("aware", new Item("a"))).id();
        assertThat(started.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
        jobs.cancel(unaware);
        jobs.cancel(aware);

        JobInfo done = awaitState(jobs, unaware, JobState.SUCCEEDED);
        assertThat(done.attempt()).isEqualTo(1);
        JobInfo cancelled = awaitState(jobs, aware, JobState.CANCELLED);
        assertThat(cancelled.attempt()).isEqualTo(1);
        assertThat(cancelled.errors())
                .singleElement()
                .satisfies(e -> assertThat(e.errorClass()).isEqualTo("Cancelled"));
    }
}
