package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * J12: graceful shutdown with jobs in flight. After drain starts the node claims nothing new; a job
 * that finishes within the drain timeout succeeds; jobs still running at the drain timeout are
 * released at once (available, attempt not counted, no stall) and another node completes them.
 */
class JobDrainTest extends JobBehaviourTestBase {
    /** Long enough that a released job is distinguishable from a rescued one (no stall, no error). */
    private static final Duration LONG_LEASE = Duration.ofSeconds(20);

    /**
     * Protections removed and seen failing: stopClaiming on drain (Baton.drain not stopping the
     * worker's claimers): node A claimed and ran the job enqueued after drain (found succeeded, not
     * available); the release at the drain timeout (Worker.stop not queuing Outcome.release): the
     * stuck jobs stayed running until their 20 s lease expired and "released at once" failed; the
     * attempt not being counted (release statement without {@code attempt = attempt - 1}): "attempt
     * count not increased" failed.
     */
    @Test
    void J12_drainClaimsNothingNew_finishesInFlight_releasesStuckJobsForOthers() throws Exception {
        CountDownLatch quickStarted = new CountDownLatch(1);
        CountDownLatch stubbornStarted = new CountDownLatch(1);
        CountDownLatch cooperativeStarted = new CountDownLatch(1);
        CountDownLatch finishQuick = new CountDownLatch(1);
        CountDownLatch freeStubborn = new CountDownLatch(1);
        closeLater(freeStubborn::countDown); // never leave the stubborn handler's thread behind
        Map<String, String> ranOn = new ConcurrentHashMap<>();

        Baton a = start(nodeBuilder("node-a").worker(WorkerConfig.builder().queue("default", 4).jobLease(LONG_LEASE)
                        .heartbeatInterval(Duration.ofMillis(200)).pollInterval(POLL)
                        .drainTimeout(Duration.ofSeconds(1)).build())
                .handle("quick", Item.class, (item, ctx) -> {
                    ranOn.put(item.name(), "node-a");
                    quickStarted.countDown();
                    finishQuick.await(handlerWait().toMillis(), TimeUnit.MILLISECONDS);
                })
                .handle("stubborn", Item.class, (item, ctx) -> {
                    // Ignores cancellation and interrupts: still running at the drain timeout.
                    stubbornStarted.countDown();
                    long giveUp = System.nanoTime() + handlerWait().toNanos();
                    while (freeStubborn.getCount() > 0 && System.nanoTime() - giveUp < 0) {
                        try {
                            freeStubborn.await(50, TimeUnit.MILLISECONDS);
                        } catch (InterruptedException ignored) {
                            // ignored on purpose
                        }
                    }
                })
                .handle("cooperative", Item.class, (item, ctx) -> {
                    // Honours cancellation, but would run far longer than the drain timeout.
                    cooperativeStarted.countDown();
                    ctx.awaitCancellation(handlerWait());
                }));
        Jobs jobs = a.jobs();
        long quick = jobs.enqueue(JobRequest.of("quick", new Item("quick"))).id();
        long stubborn = jobs.enqueue(JobRequest.of("stubborn", new Item("stubborn"))).id();
        long cooperative = jobs.enqueue(JobRequest.of("cooperative", new Item("cooperative"))).id();
        for (CountDownLatch l : new CountDownLatch[] {quickStarted, stubbornStarted, cooperativeStarted}) {
            assertThat(l.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
        }

        a.drain();
        // Enqueued after drain started, while node A still has a free slot and polls every 50 ms.
        long late = jobs.enqueue(JobRequest.of("quick", new Item("late"))).id();
        CompletableFuture<Void> closing = CompletableFuture.runAsync(a::close);
        finishQuick.countDown(); // the quick job finishes within the drain timeout (1 s)
        closing.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);

        assertThat(awaitState(jobs, quick, JobState.SUCCEEDED).attempt()).isEqualTo(1);
        for (long id : new long[] {stubborn, cooperative}) {
            Row r = row(id);
            assertThat(r.state()).as("job %d released at once on close", id).isEqualTo("available");
            assertThat(r.attempt()).as("attempt count not increased").isZero();
            assertThat(r.stallCount()).as("released, not rescued").isZero();
            assertThat(r.errorsJson()).isEqualTo("[]");
            assertThat(r.token()).isNull();
            assertThat(r.claimedBy()).isNull();
        }
        Row lateRow = row(late);
        assertThat(lateRow.state()).isEqualTo("available");
        assertThat(lateRow.attemptedAt()).as("never claimed by the draining node").isNull();
        assertThat(ranOn).doesNotContainKey("late");

        // Another node picks them up at once and completes them.
        Map<String, Integer> ranOnB = new ConcurrentHashMap<>();
        start(nodeBuilder("node-b").worker(fastWorker("default", 4).build())
                .handle("quick", Item.class, (item, ctx) -> ranOnB.put(item.name(), ctx.attempt()))
                .handle("stubborn", Item.class, (item, ctx) -> ranOnB.put(item.name(), ctx.attempt()))
                .handle("cooperative", Item.class, (item, ctx) -> ranOnB.put(item.name(), ctx.attempt())));
        for (long id : new long[] {stubborn, cooperative, late}) {
            JobInfo done = awaitState(jobs, id, JobState.SUCCEEDED);
            assertThat(done.attempt()).isEqualTo(1);
            assertThat(done.claimedBy()).contains("node-b");
            assertThat(done.errors()).isEmpty();
        }
        assertThat(ranOnB).containsOnly(Map.entry("stubborn", 1), Map.entry("cooperative", 1), Map.entry("late", 1));

        // The stubborn handler on A finally returns: its stale attempt records nothing.
        freeStubborn.countDown();
        assertThat(jobs.get(stubborn).orElseThrow().state()).isEqualTo(JobState.SUCCEEDED);
        assertThat(jobs.get(quick).orElseThrow().claimedBy()).contains("node-a");
    }
}
