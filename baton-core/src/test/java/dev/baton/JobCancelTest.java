package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.internal.service.Hooks;
import dev.baton.testkit.PausePoints;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * J11: cancellation requested while a job runs: the handler sees it (delivered by the next
 * heartbeat), the job ends CANCELLED and is not retried. An available job is cancelled at once and
 * never runs.
 */
class JobCancelTest extends JobBehaviourTestBase {

    /**
     * Protections removed and seen failing: delivering the flag (the heartbeat's
     * {@code if (cancel) a.stop(CANCEL_REQUESTED)}): the handler never saw cancellation and the job
     * never ended; recording the attempt as cancelled: with the CANCEL_REQUESTED outcome mapped to
     * retryOrFail and the fail statement's {@code cancel_requested} rule (added with this test class)
     * removed too, the job went back to available and ran again. (Either of those two alone is enough:
     * with only the Worker mapping changed the SQL still ends the job cancelled.)
     */
    @Test
    void J11_cancelWhileRunning_handlerSeesIt_jobEndsCancelledNotRetried() throws Exception {
        CountDownLatch started = new CountDownLatch(1);
        AtomicBoolean sawCancellation = new AtomicBoolean();
        AtomicInteger calls = new AtomicInteger();
        Baton node = start(nodeBuilder("j11-node")
                .worker(fastWorker("default", 2).build())
                .handle(
                        "long",
                        Item.class,
                        (item, ctx) -> {
                            calls.incrementAndGet();
                            started.countDown();
                            long giveUp = System.nanoTime() + handlerWait().toNanos();
                            while (!ctx.isCancelled() && System.nanoTime() - giveUp < 0) {
                                ctx.awaitCancellation(Duration.ofMillis(50));
                            }
                            sawCancellation.set(ctx.isCancelled());
                            // returns normally: a cancelled attempt still ends cancelled
                        },
                        RetryPolicy.immediate())
                .handle("marker", Item.class, (item, ctx) -> {}));
        Jobs jobs = node.jobs();
        long id = jobs.enqueue(JobRequest.of("long", new Item("l")).maxAttempts(5))
                .id();
        assertThat(started.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();

        assertThat(jobs.cancel(id)).contains(JobState.RUNNING);
        assertThat(jobs.get(id).orElseThrow().cancelRequested()).isTrue();
        JobInfo cancelled = awaitState(jobs, id, JobState.CANCELLED);
        assertThat(sawCancellation).isTrue();
        assertThat(cancelled.attempt()).isEqualTo(1);
        assertThat(cancelled.finishedAt()).isPresent();
        assertThat(cancelled.errors()).singleElement().satisfies(e -> {
            assertThat(e.errorClass()).isEqualTo("Cancelled");
            assertThat(e.message()).contains("cancellation requested");
        });
        // Not retried: a later job has run and the cancelled one stayed as it was.
        awaitState(jobs, jobs.enqueue(JobRequest.of("marker", new Item("m"))).id(), JobState.SUCCEEDED);
        assertThat(calls.get()).isEqualTo(1);
        assertThat(jobs.get(id).orElseThrow().state()).isEqualTo(JobState.CANCELLED);
        assertThat(jobs.cancel(id)).as("already finished").isEmpty();
    }

    /**
     * A handler that reacts to cancellation by throwing (the usual InterruptedException from a
     * blocking call) still ends CANCELLED, not retried.
     *
     * <p>Protection removed and seen failing: the stop reason taking precedence over the handler's
     * outcome in Worker.execute (the handler's retry outcome kept when it threw after the stop): the
     * error recorded was the handler's, not "Cancelled"; with the fail statement's
     * {@code cancel_requested} rule removed as well, the job was retried and never ended cancelled.
     */
    @Test
    void J11_handlerThatThrowsOnCancellationEndsCancelledNotRetried() throws Exception {
        CountDownLatch started = new CountDownLatch(1);
        List<Integer> attempts = new CopyOnWriteArrayList<>();
        Baton node = start(nodeBuilder("j11-node")
                .worker(fastWorker("default", 2).build())
                .handle(
                        "blocking",
                        Item.class,
                        (item, ctx) -> {
                            attempts.add(ctx.attempt());
                            started.countDown();
                            new CountDownLatch(1).await(handlerWait().toMillis(), TimeUnit.MILLISECONDS); // interrupted
                            throw new IllegalStateException("not interrupted");
                        },
                        RetryPolicy.immediate())
                .handle("marker", Item.class, (item, ctx) -> {}));
        Jobs jobs = node.jobs();
        long id = jobs.enqueue(JobRequest.of("blocking", new Item("b")).maxAttempts(5))
                .id();
        assertThat(started.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
        assertThat(jobs.cancel(id)).contains(JobState.RUNNING);
        JobInfo cancelled = awaitState(jobs, id, JobState.CANCELLED);
        assertThat(cancelled.attempt()).isEqualTo(1);
        assertThat(cancelled.errors())
                .singleElement()
                .satisfies(e -> assertThat(e.errorClass()).isEqualTo("Cancelled"));
        awaitState(jobs, jobs.enqueue(JobRequest.of("marker", new Item("m"))).id(), JobState.SUCCEEDED);
        assertThat(attempts).containsExactly(1);
    }

    /**
     * Cancellation requested while the handler runs, but before any heartbeat delivers it (the
     * heartbeater is held at its pause point), the handler fails: the job still ends CANCELLED, with
     * the handler's error kept, and is not retried.
     *
     * <p>Protection checked: the fail statement honours {@code cancel_requested} for a retryable
     * failure. Before the fix in job.sql this test failed: the failed attempt was recorded as a retry,
     * the job went back to available (cancel_requested still set) and ran a second attempt.
     */
    @Test
    void J11_cancelRequestedThenHandlerFailsBeforeDelivery_endsCancelledNotRetried() throws Exception {
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch proceed = new CountDownLatch(1);
        closeLater(proceed::countDown);
        List<Integer> attempts = new CopyOnWriteArrayList<>();
        Baton node = start(nodeBuilder("j11-node")
                .worker(fastWorker("default", 2).build())
                .handle(
                        "fragile",
                        Item.class,
                        (item, ctx) -> {
                            attempts.add(ctx.attempt());
                            if (ctx.attempt() > 1) {
                                return;
                            }
                            started.countDown();
                            proceed.await(handlerWait().toMillis(), TimeUnit.MILLISECONDS);
                            throw new IllegalStateException("downstream refused");
                        },
                        RetryPolicy.immediate())
                .handle("marker", Item.class, (item, ctx) -> {}));
        Jobs jobs = node.jobs();
        long id = jobs.enqueue(JobRequest.of("fragile", new Item("f")).maxAttempts(5))
                .id();
        assertThat(started.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
        PausePoints.Pause heartbeats = points.armAll(Hooks.Points.JOB_HEARTBEAT_BEFORE_SEND);
        heartbeats.awaitReached(WAIT);

        assertThat(jobs.cancel(id)).contains(JobState.RUNNING);
        proceed.countDown(); // the handler fails before it can learn of the cancellation
        Awaitility.await()
                .atMost(WAIT)
                .pollInterval(Duration.ofMillis(20))
                .until(() -> jobs.get(id).orElseThrow().finishedAt().isPresent());
        heartbeats.release();
        JobInfo info = jobs.get(id).orElseThrow();
        assertThat(info.state()).as("ends cancelled, not retried").isEqualTo(JobState.CANCELLED);
        assertThat(info.attempt()).isEqualTo(1);
        assertThat(info.finishedAt()).isPresent();
        assertThat(info.errors()).singleElement().satisfies(e -> {
            assertThat(e.errorClass()).isEqualTo(IllegalStateException.class.getName());
            assertThat(e.message()).isEqualTo("downstream refused");
        });
        awaitState(jobs, jobs.enqueue(JobRequest.of("marker", new Item("m"))).id(), JobState.SUCCEEDED);
        assertThat(attempts).containsExactly(1);
        assertThat(jobs.get(id).orElseThrow().state()).isEqualTo(JobState.CANCELLED);
    }

    /**
     * A delayed (available) job is cancelled at once and never runs: a job due after it, on a queue
     * worked one job at a time in due order, has run, and the cancelled one has not.
     *
     * <p>Protection removed and seen failing: the state change for available jobs in the cancel
     * statement (only cancel_requested set): cancel returned AVAILABLE, and the job ran when due.
     */
    @Test
    void J11_cancelAvailableDelayedJobEndsItAtOnceAndItNeverRuns() throws Exception {
        List<String> ran = new CopyOnWriteArrayList<>();
        Baton node = start(nodeBuilder("j11-node")
                .worker(fastWorker("default", 1).build())
                .handle("send", Item.class, (item, ctx) -> ran.add(item.name())));
        Jobs jobs = node.jobs();
        long delayed = jobs.enqueue(JobRequest.of("send", new Item("delayed")).delay(Duration.ofMillis(300)))
                .id();
        assertThat(jobs.cancel(delayed)).contains(JobState.CANCELLED);
        JobInfo info = jobs.get(delayed).orElseThrow();
        assertThat(info.state()).isEqualTo(JobState.CANCELLED);
        assertThat(info.finishedAt()).isPresent();
        assertThat(info.attempt()).isZero();

        long later = jobs.enqueue(JobRequest.of("send", new Item("later")).delay(Duration.ofMillis(600)))
                .id();
        awaitState(jobs, later, JobState.SUCCEEDED);
        assertThat(ran).containsExactly("later");
        assertThat(jobs.get(delayed).orElseThrow().state()).isEqualTo(JobState.CANCELLED);
        assertThat(jobs.get(delayed).orElseThrow().attempt()).isZero();
        assertThat(jobs.cancel(delayed)).as("already cancelled").isEmpty();
        assertThat(jobs.cancel(Long.MAX_VALUE)).as("unknown job").isEmpty();
    }
}
