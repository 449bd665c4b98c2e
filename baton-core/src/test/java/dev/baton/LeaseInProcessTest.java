package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.internal.service.Hooks;
import dev.baton.testkit.PausePoints;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * L18: two threads or two runners of one process ask for the same lease name. At most one of them holds
 * it at a time; the others wait or get nothing, exactly as a caller on another node would, although they
 * share the node id as their owner id.
 *
 * <p>Protection removed and seen failing (all three tests): the per-acquisition re-grant. With the acquire
 * statement's re-grant condition back to {@code l.owner_id = p.owner_id} (any caller with the owner id),
 * the five bounded waiters each got the lease at once and ran their work beside the first holder (six
 * holders; "gets nothing" failed), the second runner was elected at its first attempt (the pause at
 * CAMPAIGN_LOST was never reached) and both concurrent tryAcquire calls got a grant.
 */
class LeaseInProcessTest extends LeadershipDbTest {
    private static final String NAME = "refresh:user-42";
    private static final Duration TTL = Duration.ofSeconds(30);

    @Test
    void L18_withLeaseFromSixThreadsOfOneNodeAdmitsOneHolderAtATime() throws Exception {
        createLedger();
        Baton node = start(nodeBuilder("l18-node", appPoolOf("l18", 8))); // six threads and the node's services
        Coordination coordination = node.coordination();
        AtomicInteger holders = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        closeLater(release::countDown);
        ExecutorService threads = Executors.newFixedThreadPool(6);
        closeLater(threads::shutdownNow);

        Future<Optional<Long>> first =
                threads.submit(() -> coordination.withLease(NAME, TTL, WAIT, Duration.ofMillis(50), g -> {
                    enter(holders, most);
                    inside.countDown();
                    release.await(WAIT.toMillis(), TimeUnit.MILLISECONDS);
                    holders.decrementAndGet();
                    return g.generation();
                }));
        assertThat(inside.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();

        // Five more threads of the same node (same owner id: the node id) wait a bounded 300 ms: nothing.
        List<Future<Optional<Long>>> bounded = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            bounded.add(threads.submit(
                    () -> coordination.withLease(NAME, TTL, Duration.ofMillis(300), Duration.ofMillis(50), g -> {
                        enter(holders, most);
                        holders.decrementAndGet();
                        return g.generation();
                    })));
        }
        for (Future<Optional<Long>> f : bounded) {
            assertThat(f.get(WAIT.toMillis(), TimeUnit.MILLISECONDS))
                    .as("gets nothing while the first holds it")
                    .isEmpty();
        }
        assertThat(most.get()).isEqualTo(1);
        release.countDown();
        long firstGeneration = first.get(WAIT.toMillis(), TimeUnit.MILLISECONDS).orElseThrow();

        // Waiting long enough, they take turns: every one runs, never two at once, each under a newer generation.
        List<Future<Optional<Long>>> patient = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            patient.add(threads.submit(() -> coordination.withLease(NAME, TTL, WAIT, Duration.ofMillis(50), g -> {
                enter(holders, most);
                try {
                    return leases.fenced(g, tx -> insertLedger(tx, g)) > 0 ? g.generation() : -1L;
                } finally {
                    holders.decrementAndGet();
                }
            })));
        }
        for (Future<Optional<Long>> f : patient) {
            assertThat(f.get(WAIT.toMillis(), TimeUnit.MILLISECONDS))
                    .hasValueSatisfying(g -> assertThat(g).isGreaterThan(firstGeneration));
        }
        assertThat(most.get()).as("holders at once").isEqualTo(1);
        assertThat(ledgerGenerations())
                .hasSize(5)
                .extracting(r -> r[1])
                .doesNotHaveDuplicates()
                .isSorted();
    }

    @Test
    void L18_twoLeadershipRunnersOfOneNameInOneProcessLeadOneAtATime() throws Exception {
        Baton node = start(nodeBuilder("l18-runners", appPool));
        Recorder ra = new Recorder();
        Recorder rb = new Recorder();
        Leadership a =
                node.leadership("sweeper", fastLeadership(), idleTask(), ra).start();
        LeaseGrant ga = ra.awaitElected().grant();

        PausePoints.Pause lost = points.arm(Hooks.Points.CAMPAIGN_LOST);
        Leadership b =
                node.leadership("sweeper", fastLeadership(), idleTask(), rb).start();
        lost.awaitReached(WAIT); // B's first attempt found the lease held, although by its own node id
        lost.release();
        assertThat(rb.elections()).isEmpty();
        assertThat(b.isLeader()).isFalse();
        assertThat(a.isLeader()).isTrue();

        a.stop();
        Recorder.Event elected = rb.awaitElected();
        assertThat(ra.awaitRevoked().reason()).isEqualTo(RevocationReason.STOPPED);
        assertThat(elected.grant().generation()).isGreaterThan(ga.generation());
        assertThat(elected.grant().owner()).isEqualTo("l18-runners");
    }

    @Test
    void L18_concurrentTryAcquireWithOneOwnerIdGrantsOne() throws Exception {
        ExecutorService two = Executors.newFixedThreadPool(2);
        closeLater(two::shutdownNow);
        for (int round = 0; round < 20; round++) {
            String name = "round-" + round;
            CountDownLatch go = new CountDownLatch(1);
            List<Future<Optional<LeaseGrant>>> results = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                results.add(two.submit(() -> {
                    go.await();
                    return leases.tryAcquire(name, "node-a", TTL);
                }));
            }
            go.countDown();
            int granted = 0;
            for (Future<Optional<LeaseGrant>> f : results) {
                granted += f.get(WAIT.toMillis(), TimeUnit.MILLISECONDS).isPresent() ? 1 : 0;
            }
            assertThat(granted).as("grants in round %d", round).isEqualTo(1);
            assertThat(leases.tryAcquire(name, "node-a", TTL))
                    .as("a third call, later: nothing")
                    .isEmpty();
        }
    }

    private static void enter(AtomicInteger holders, AtomicInteger most) {
        int now = holders.incrementAndGet();
        most.accumulateAndGet(now, Math::max);
    }
}
