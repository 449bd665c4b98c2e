package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.internal.service.Hooks;
import dev.baton.testkit.PausePoints;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * J14: the drain timeout expires while a handler ignores interruption. No node runs that job, or another
 * job of its concurrency key, while the handler still runs here: until it returns or its attempt lease
 * expires on the database clock. A job whose cancellation was requested is not made available again.
 */
class JobDrainStubbornTest extends JobBehaviourTestBase {

    /**
     * Protection removed and seen failing: releasing at the drain timeout whatever the handler does
     * (Worker.stop queuing {@code Outcome.release(a)} for every attempt still running, the code before
     * J14): node B claimed the stubborn job at once and ran it while A's handler still ran; the count of
     * key-K handlers running at once reached 2 and the test failed.
     */
    @Test
    void J14_stubbornHandlerKeepsItsAttemptAndKeyUntilItReturnsOrItsLeaseExpires() throws Exception {
        AtomicInteger runningOfKeyK = new AtomicInteger();
        AtomicInteger mostOfKeyK = new AtomicInteger();
        CountDownLatch stubbornStarted = new CountDownLatch(1);
        CountDownLatch freeStubborn = new CountDownLatch(1);
        CountDownLatch stubbornReturned = new CountDownLatch(1);
        closeLater(freeStubborn::countDown);
        Baton a = start(nodeBuilder("node-a")
                .worker(fastWorker("default", 2)
                        .drainTimeout(Duration.ofMillis(300))
                        .build())
                .handle("stubborn", Item.class, (item, ctx) -> {
                    enter(runningOfKeyK, mostOfKeyK);
                    stubbornStarted.countDown();
                    try {
                        // Ignores interrupts and cancellation: still running when the drain timeout expires.
                        long giveUp = System.nanoTime() + handlerWait().toNanos();
                        while (freeStubborn.getCount() > 0 && System.nanoTime() - giveUp < 0) {
                            try {
                                freeStubborn.await(20, TimeUnit.MILLISECONDS);
                            } catch (InterruptedException ignored) {
                                // ignored on purpose
                            }
                        }
                    } finally {
                        runningOfKeyK.decrementAndGet();
                        stubbornReturned.countDown();
                    }
                }));
        Jobs jobs = a.jobs();
        long stubborn = jobs.enqueue(JobRequest.of("stubborn", new Item("s")).concurrencyKey("K"))
                .id();
        assertThat(stubbornStarted.await(WAIT.toMillis(), TimeUnit.MILLISECONDS))
                .isTrue();

        CompletableFuture.runAsync(a::close).get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        Row held = row(stubborn);
        assertThat(held.state()).as("not released while its handler runs").isEqualTo("running");
        assertThat(held.claimedBy()).isEqualTo("node-a");
        assertThat(stubbornReturned.getCount()).as("the handler still runs").isEqualTo(1);

        // Node B works the same queue: another job of key K and a keyless probe wait for it.
        long second = jobs.enqueue(JobRequest.of("stubborn", new Item("k2")).concurrencyKey("K"))
                .id();
        long probe = jobs.enqueue(JobRequest.of("probe", new Item("p"))).id();
        Baton b = start(nodeBuilder("node-b")
                .worker(fastWorker("default", 4).build())
                .handle("stubborn", Item.class, (item, ctx) -> {
                    enter(runningOfKeyK, mostOfKeyK);
                    runningOfKeyK.decrementAndGet();
                })
                .handle("probe", Item.class, (item, ctx) -> {}));
        awaitState(b.jobs(), probe, JobState.SUCCEEDED); // B has claimed since; key K was not free
        assertThat(row(stubborn).state()).isEqualTo("running");
        assertThat(row(second).state()).isEqualTo("available");
        assertThat(row(second).attemptedAt()).isNull();

        // The handler returns; A is stopped, so the attempt is left to expire on the database clock and
        // be rescued (a stall), then both jobs of K run on B, one after the other.
        freeStubborn.countDown();
        assertThat(stubbornReturned.await(WAIT.toMillis(), TimeUnit.MILLISECONDS))
                .isTrue();
        JobInfo rescued = awaitState(b.jobs(), stubborn, JobState.SUCCEEDED);
        assertThat(rescued.stallCount()).isEqualTo(1);
        assertThat(rescued.claimedBy()).contains("node-b");
        awaitState(b.jobs(), second, JobState.SUCCEEDED);
        assertThat(mostOfKeyK.get())
                .as("handlers of key K running at once, across both nodes")
                .isEqualTo(1);
    }

    /**
     * Protection removed and seen failing: the release statement's {@code CASE WHEN j.cancel_requested THEN
     * 'cancelled'} (back to {@code state = 'available'}): the job cancelled while draining came back as
     * available and "not made available again" failed.
     */
    @Test
    void J14_aJobCancelledWhileDrainingIsNotMadeAvailableAgain() throws Exception {
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch returned = new CountDownLatch(1);
        Baton a = start(nodeBuilder("node-a")
                .worker(fastWorker("default", 1)
                        .drainTimeout(Duration.ofMillis(300))
                        .build())
                .handle("work", Item.class, (item, ctx) -> {
                    started.countDown();
                    try {
                        ctx.awaitCancellation(handlerWait()); // stops when told to
                    } finally {
                        returned.countDown();
                    }
                }));
        Jobs jobs = a.jobs();
        long id = jobs.enqueue(JobRequest.of("work", new Item("w"))).id();
        assertThat(started.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
        // Hold the heartbeat, so the cancel request does not reach the handler before the drain does.
        PausePoints.Pause beat = points.arm(Hooks.Points.JOB_HEARTBEAT_BEFORE_SEND);
        beat.awaitReached(WAIT);
        assertThat(jobs.cancel(id)).contains(JobState.RUNNING);

        CompletableFuture<Void> closing = CompletableFuture.runAsync(a::close);
        assertThat(returned.await(WAIT.toMillis(), TimeUnit.MILLISECONDS))
                .as("stopped by the drain")
                .isTrue();
        beat.release();
        closing.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);

        Row r = row(id);
        assertThat(r.state()).as("not made available again").isEqualTo("cancelled");
        assertThat(r.finishedAt()).isNotNull();
        assertThat(r.attempt()).as("the released attempt is not counted").isZero();
    }

    private static void enter(AtomicInteger running, AtomicInteger most) {
        most.accumulateAndGet(running.incrementAndGet(), Math::max);
    }
}
