package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.baton.internal.service.Hooks;
import dev.baton.testkit.FencedMutexChecker;
import dev.baton.testkit.HistoryRecorder;
import dev.baton.testkit.PausePoints;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * L02: the leader is paused (its renewals and its task, as a stop-the-world pause would) past its
 * lease; another node takes over; the old leader resumes.
 */
class PausedOwnerTest extends DbTest {

    /**
     * Protection checked: the fence in {@code fenced}. With Leases.check made a no-op, A's resumed
     * write committed with generation g after B's g+1 rows and the checker (and the rejection
     * assertion) failed. With the renew statement's owner/generation match removed, A's renewal
     * "succeeded" after the takeover and the LeaseLostException assertion on renew failed.
     */
    @Test
    void L02_pausedOwnerResumesAfterTakeoverAndCanNeitherWriteNorRenew() throws Exception {
        createLedger();
        HistoryRecorder history = new HistoryRecorder();
        AtomicLong commits = new AtomicLong();
        CountDownLatch elected = new CountDownLatch(1);
        CompletableFuture<RevocationReason> revoked = new CompletableFuture<>();
        AtomicReference<Throwable> rejected = new AtomicReference<>();
        CountDownLatch wroteOnce = new CountDownLatch(1);

        Baton a = node("node-a");
        Leadership leaderA = a.leadership(
                        "lead",
                        fastLeadership(),
                        ctx -> {
                            while (!ctx.isCancelled()) {
                                try {
                                    ctx.fenced(tx -> insertLedger(tx, ctx.grant()));
                                    history.write(
                                            commits.incrementAndGet(),
                                            "lead",
                                            ctx.grant().generation(),
                                            "node-a");
                                    wroteOnce.countDown();
                                } catch (LeaseLostException e) {
                                    rejected.set(e);
                                    return;
                                }
                                ctx.awaitCancellation(Duration.ofMillis(20));
                            }
                        },
                        new LeadershipListener() {
                            @Override
                            public void onElected(LeaseGrant grant) {
                                history.grant(grant.name(), grant.generation(), grant.owner());
                                elected.countDown();
                            }

                            @Override
                            public void onRevoked(LeaseGrant grant, RevocationReason reason) {
                                revoked.complete(reason);
                            }
                        })
                .start();
        assertThat(elected.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
        assertThat(wroteOnce.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
        LeaseGrant g = leaderA.currentGrant().orElseThrow();

        // Pause A everywhere: its next write (before the fence) and its next renewal.
        PausePoints.Pause write = points.arm(Hooks.Points.FENCE_BEFORE_CHECK);
        PausePoints.Pause renew = points.arm(Hooks.Points.RENEW_BEFORE_SEND);
        write.awaitReached(WAIT);
        renew.awaitReached(WAIT);

        // B takes over once A's lease has expired on the database clock.
        LeaseGrant b = leases.acquire("lead", "node-b", Duration.ofSeconds(5), WAIT, Duration.ofMillis(20))
                .orElseThrow();
        assertThat(b.generation()).isGreaterThan(g.generation());
        history.grant(b.name(), b.generation(), b.owner());
        leases.fenced(b, tx -> insertLedger(tx, b));
        history.write(commits.incrementAndGet(), b.name(), b.generation(), b.owner());
        LeaseHistoryEntry aTerm = leases.history("lead", 2).get(1);
        assertThat(aTerm.endReason()).contains("expired");

        long resumed = System.nanoTime();
        write.release();
        renew.release();

        assertThat(revoked.get(WAIT.toMillis(), TimeUnit.MILLISECONDS))
                .isIn(RevocationReason.LOST, RevocationReason.DEADLINE);
        System.out.printf("L02: A's work cancelled %d ms after resuming%n", (System.nanoTime() - resumed) / 1_000_000);
        org.awaitility.Awaitility.await().atMost(WAIT).until(() -> rejected.get() != null);
        assertThat(rejected.get()).isInstanceOf(LeaseLostException.class);
        assertThatThrownBy(() -> leases.renew(g)).isInstanceOf(LeaseLostException.class);
        assertThat(leases.release(g)).as("A cannot clear B's lease").isFalse();
        assertThat(leases.inspect("lead").orElseThrow().owner()).contains("node-b");

        FencedMutexChecker.check(history.grants(), history.writes()).assertOk();
        assertThat(ledgerGenerations()).extracting(r -> r[1]).isSorted().last().isEqualTo(b.generation());
        leaderA.stop();
    }
}
