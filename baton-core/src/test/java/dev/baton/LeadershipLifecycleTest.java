package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.baton.internal.service.Hooks;
import dev.baton.testkit.PausePoints;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Start, stop and the end of a term: idempotence, thread safety, task completion and failure, stubborn tasks. */
class LeadershipLifecycleTest extends LeadershipDbTest {

    private void assertReleasedAndNoThreads(String name) {
        await().atMost(WAIT)
                .pollInterval(Duration.ofMillis(10))
                .untilAsserted(() -> assertThat(leadershipThreads(name))
                        .as("threads of the runner for " + name)
                        .isEmpty());
        leases.inspect(name)
                .ifPresent(l ->
                        assertThat(l.owner()).as("lease " + name + " released").isEmpty());
        leases.history(name, 1000)
                .forEach(h -> assertThat(h.endReason()).as(h.toString()).contains("released"));
    }

    @Test
    void startAndStopAreIdempotentAndSafeFromManyThreads() throws Exception {
        Baton node = start(nodeBuilder("life-threads", nodePool("life-threads")));
        ExecutorService threads = Executors.newFixedThreadPool(8);
        try {
            for (int round = 0; round < 6; round++) {
                String name = "life-" + round;
                Recorder r = new Recorder();
                Leadership runner = node.leadership(name, fastLeadership(), idleTask(), r);
                if (round % 2 == 0) {
                    runner.start(); // the storm also hits a runner that already leads
                    r.awaitElected();
                }
                CyclicBarrier barrier = new CyclicBarrier(8);
                List<Future<?>> done = new ArrayList<>();
                for (int t = 0; t < 8; t++) {
                    done.add(threads.submit(() -> {
                        barrier.await();
                        for (int i = 0; i < 20; i++) {
                            if (ThreadLocalRandom.current().nextBoolean()) {
                                runner.start();
                            }
                            runner.start();
                            runner.stop();
                            if (ThreadLocalRandom.current().nextBoolean()) {
                                runner.stop();
                            }
                        }
                        return null;
                    }));
                }
                for (Future<?> f : done) {
                    f.get();
                }
                runner.stop();
                assertReleasedAndNoThreads(name);
                assertThat(runner.isLeader()).isFalse();
                assertThat(runner.currentGrant()).isEmpty();
                // Every term that began also ended, as STOPPED; never two elections without a revocation between.
                assertThat(r.revocations()).hasSameSizeAs(r.elections());
                r.revocations().forEach(e -> assertThat(e.reason()).isEqualTo(RevocationReason.STOPPED));
                System.out.printf(
                        "lifecycle round %d: %d term(s)%n", round, r.elections().size());
            }
        } finally {
            threads.shutdownNow();
        }
    }

    @Test
    void stopBeforeStartIsANoOp() {
        Baton node = start(nodeBuilder("life-early", nodePool("life-early")));
        Recorder r = new Recorder();
        Leadership runner = node.leadership("life-early", fastLeadership(), idleTask(), r);
        runner.stop();
        runner.close();
        assertThat(leadershipThreads("life-early")).isEmpty();
        assertThat(leases.inspect("life-early")).isEmpty();
        assertThat(r.elections()).isEmpty();
        runner.start();
        r.awaitElected();
        runner.stop();
        assertThat(r.awaitRevoked().reason()).isEqualTo(RevocationReason.STOPPED);
        assertReleasedAndNoThreads("life-early");
    }

    @Test
    void taskThatReturnsEndsTheTermAsCompletedAndReleasesTheLease() {
        Baton node = start(nodeBuilder("life-done", nodePool("life-done")));
        Recorder r = new Recorder();
        AtomicInteger runs = new AtomicInteger();
        node.leadership(
                        "life-done",
                        fastLeadership(),
                        ctx -> {
                            if (runs.incrementAndGet() == 1) {
                                return; // the first term's work is done
                            }
                            idleTask().run(ctx);
                        },
                        r)
                .start();
        LeaseGrant g = r.awaitElected().grant();
        Recorder.Event revoked = r.awaitRevoked();
        assertThat(revoked.reason()).isEqualTo(RevocationReason.TASK_COMPLETED);
        assertThat(revoked.grant().generation()).isEqualTo(g.generation());
        await().atMost(WAIT)
                .untilAsserted(
                        () -> assertThat(historyOf("life-done", g.generation()).endReason())
                                .contains("released"));
        System.out.println("task completed: the runner campaigned again and was elected with generation "
                + r.awaitElected(2).grant().generation());
    }

    @Test
    void taskThatThrowsEndsTheTermAsFailedAndReleasesTheLease() {
        Baton node = start(nodeBuilder("life-fail", nodePool("life-fail")));
        Recorder r = new Recorder();
        AtomicInteger runs = new AtomicInteger();
        node.leadership(
                        "life-fail",
                        fastLeadership(),
                        ctx -> {
                            if (runs.incrementAndGet() == 1) {
                                throw new IllegalStateException("test: the leader task fails");
                            }
                            idleTask().run(ctx);
                        },
                        r)
                .start();
        LeaseGrant g = r.awaitElected().grant();
        Recorder.Event revoked = r.awaitRevoked();
        assertThat(revoked.reason()).isEqualTo(RevocationReason.TASK_FAILED);
        assertThat(revoked.grant().generation()).isEqualTo(g.generation());
        await().atMost(WAIT)
                .untilAsserted(
                        () -> assertThat(historyOf("life-fail", g.generation()).endReason())
                                .contains("released"));
    }

    /**
     * A task that ignores cancellation (and interrupts) and keeps calling {@code ctx.fenced} never gets a
     * write through after its term was revoked, even while the database would still accept the grant: the
     * runner's deadline passed (renewals held at a pause point) while the lease row is still valid.
     *
     * <p>Protection removed to see it fail: the local refusal in {@code Leadership.Term.fenced}
     * ({@code if (isCancelled()) throw new LeaseLostException(...)}); writes started after onRevoked then
     * committed (the database lease was still valid) and the test failed.
     */
    @Test
    void stubbornTaskGetsNoFencedWriteAfterRevocation() throws Exception {
        createLedger();
        Baton node = start(nodeBuilder("life-stubborn", nodePool("life-stubborn")));
        Recorder r = new Recorder();
        List<LeaseInfo> rowAtRevocation = new CopyOnWriteArrayList<>();
        r.alsoOnRevoke(() -> rowAtRevocation.add(lease("life-stubborn")));
        List<long[]> successes = new CopyOnWriteArrayList<>(); // {attempt start nanos, seq}
        AtomicInteger refusedAfterCancel = new AtomicInteger();
        AtomicBoolean firstTerm = new AtomicBoolean(true);
        Leadership runner = node.leadership(
                        "life-stubborn",
                        fastLeadership(),
                        ctx -> {
                            if (!firstTerm.getAndSet(false)) {
                                idleTask().run(ctx);
                                return;
                            }
                            while (refusedAfterCancel.get() < 5) {
                                Thread.interrupted(); // ignores interrupts as well as the flag
                                long start = System.nanoTime();
                                try {
                                    long seq = ctx.fenced(tx -> insertLedger(tx, ctx.grant()));
                                    successes.add(new long[] {start, seq});
                                } catch (LeaseLostException e) {
                                    if (ctx.isCancelled()) {
                                        refusedAfterCancel.incrementAndGet();
                                    }
                                } catch (BatonException e) {
                                    // e.g. an interrupted connection borrow; try again
                                }
                            }
                        },
                        r)
                .start();
        LeaseGrant g = r.awaitElected().grant();
        await().atMost(WAIT).until(() -> successes.size() >= 3);

        PausePoints.Pause pause = points.arm(Hooks.Points.RENEW_BEFORE_SEND);
        pause.awaitReached(WAIT);
        long deadline = runner.currentGrant().orElseThrow().localDeadlineNanos();
        await().atMost(WAIT).pollInterval(Duration.ofMillis(2)).until(() -> System.nanoTime() - deadline > 0);
        pause.release();
        Recorder.Event revoked = r.awaitRevoked();
        await().atMost(WAIT).until(() -> refusedAfterCancel.get() >= 5);

        assertThat(revoked.reason()).isEqualTo(RevocationReason.DEADLINE);
        assertThat(rowAtRevocation.get(0).held())
                .as("the database still accepted the grant at revocation")
                .isTrue();
        assertThat(rowAtRevocation.get(0).generation()).isEqualTo(g.generation());
        List<long[]> late = new ArrayList<>();
        for (long[] s : successes) {
            if (s[0] - revoked.nanos() > 0) {
                late.add(s);
            }
        }
        assertThat(late)
                .as("fenced writes started after the revocation and committed")
                .isEmpty();
        assertThat(ledgerCount(g.generation())).isEqualTo(successes.size());
        System.out.printf(
                "stubborn task: %d writes before the deadline, %d refused after it%n",
                successes.size(), refusedAfterCancel.get());
    }

    /**
     * stop() of a runner that is only a candidate ends its thread before returning ("returns when done"),
     * even with a poll interval far longer than stopTimeout + 3R: stop() must wake the campaign loop, which
     * otherwise sleeps on the release-notification subscription until the next poll or the holder's expiry
     * (and Baton.close() would wait that long for each such runner).
     *
     * <p>Protection removed to see it fail: the {@code wakeup.signal()} in {@code Leadership.stop()} (this
     * test was written against the version without it, where it failed: the thread was still alive).
     */
    @Test
    void stopOfAWaitingCandidateEndsItsThread() {
        Baton holderNode = start(nodeBuilder("life-holder", nodePool("life-holder")));
        Baton candidateNode = start(nodeBuilder("life-candidate", nodePool("life-candidate")));
        Recorder holder = new Recorder();
        holderNode
                .leadership(
                        "life-wait",
                        LeadershipConfig.builder()
                                .leaseTtl(Duration.ofSeconds(30))
                                .renewInterval(Duration.ofSeconds(5))
                                .build(),
                        idleTask(),
                        holder)
                .start();
        holder.awaitElected();
        Set<Thread> before = new HashSet<>(liveThreads("baton-leadership-life-wait"));
        Leadership candidate = candidateNode
                .leadership(
                        "life-wait",
                        LeadershipConfig.builder()
                                .leaseTtl(Duration.ofSeconds(1))
                                .renewInterval(Duration.ofMillis(200))
                                .pollInterval(Duration.ofHours(1))
                                .stopTimeout(Duration.ofMillis(100))
                                .build(),
                        idleTask())
                .start();
        List<Thread> mine = new ArrayList<>();
        await().atMost(WAIT).until(() -> {
            mine.clear();
            liveThreads("baton-leadership-life-wait").stream()
                    .filter(t -> !before.contains(t))
                    .forEach(mine::add);
            return !mine.isEmpty();
        });
        // Wait until its first attempt lost and it sleeps on the notification subscription.
        await().atMost(WAIT)
                .pollInterval(Duration.ofMillis(2))
                .until(() -> java.util.Arrays.stream(mine.get(0).getStackTrace())
                        .anyMatch(f -> f.getClassName().endsWith("$Subscription")
                                && f.getMethodName().equals("await")));
        candidate.stop();
        assertThat(mine).as("candidate's control thread after stop() returned").noneMatch(Thread::isAlive);
    }
}
