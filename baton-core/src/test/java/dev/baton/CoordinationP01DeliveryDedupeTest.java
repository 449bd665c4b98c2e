package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * FAULTS.md P01: the same inbound delivery posted to several nodes at once; exactly one claims it.
 * Runs unchanged through PgBouncer in transaction-pooling mode (E01).
 */
class CoordinationP01DeliveryDedupeTest extends CoordinationFaultSupport {

    private static final int NODES = 4;
    private static final int ROUNDS = 200;

    /**
     * P01: 200 distinct delivery ids, each raced by 2, 3 or 4 of four nodes released together by a
     * barrier: exactly one {@code firstDelivery} answers true per id.
     *
     * <p>Protection removed in a scratch copy and seen failing: the {@code WHERE d.expires_at <=
     * clock_timestamp()} guard of {@code first_delivery}'s {@code ON CONFLICT DO UPDATE} (every caller
     * got a row back: 2-4 winners per id); and, separately, a per-instance dedupe (the guard widened to
     * {@code OR d.receiver IS DISTINCT FROM excluded.receiver}, i.e. "first on this node"), which a
     * single-node test cannot see: several winners per id.
     */
    @Test
    void P01_sameDeliveryRacedOnSeveralNodesHasExactlyOneFirst() throws Exception {
        List<Baton> nodes = nodes("p01", NODES, 3);
        AtomicIntegerArray firsts = new AtomicIntegerArray(ROUNDS);
        AtomicIntegerArray racers = new AtomicIntegerArray(ROUNDS);
        CyclicBarrier barrier = new CyclicBarrier(NODES);
        List<Callable<Void>> tasks = new ArrayList<>();
        for (int t = 0; t < NODES; t++) {
            int me = t;
            Coordination coord = nodes.get(t).coordination();
            tasks.add(() -> {
                for (int round = 0; round < ROUNDS; round++) {
                    int k = 2 + round % 3; // 2, 3 or 4 racers
                    boolean racing = Math.floorMod(me - round, NODES) < k; // a different subset each round
                    barrier.await(WAIT.toMillis(), TimeUnit.MILLISECONDS);
                    if (racing) {
                        racers.incrementAndGet(round);
                        if (coord.firstDelivery("github", "delivery-" + round, Duration.ofMinutes(10))) {
                            firsts.incrementAndGet(round);
                        }
                    }
                }
                return null;
            });
        }
        runAll(tasks);

        for (int round = 0; round < ROUNDS; round++) {
            assertThat(racers.get(round)).as("racers of delivery-%d", round).isEqualTo(2 + round % 3);
            assertThat(firsts.get(round))
                    .as("nodes that saw delivery-%d as first", round)
                    .isEqualTo(1);
        }
        assertThat(count("SELECT count(*) FROM " + schema + ".inbound_delivery WHERE source = 'github'"))
                .isEqualTo(ROUNDS);
        // A later duplicate, on any node, is still a duplicate while the record lives.
        for (Baton n : nodes) {
            assertThat(n.coordination().firstDelivery("github", "delivery-0", Duration.ofMinutes(10)))
                    .isFalse();
        }
        // Deliveries are keyed by (source, id): the same id from another source is a different delivery.
        assertThat(nodes.get(0).coordination().firstDelivery("gitlab", "delivery-0", Duration.ofMinutes(10)))
                .isTrue();
    }

    /**
     * P01: once a record's ttl has passed on the database clock, the id counts as first again, for
     * exactly one of several nodes racing on it (the expired-row takeover is itself race-free), and
     * the new record is a duplicate again for everyone else.
     *
     * <p>Protection removed in a scratch copy and seen failing: the {@code expires_at} comparison in
     * {@code first_delivery}'s conflict guard replaced by {@code false} (an expired record stayed a
     * duplicate forever: zero winners after expiry).
     */
    @Test
    void P01_expiredDeliveryRecordCountsAsFirstAgainForExactlyOneNode() throws Exception {
        List<Baton> nodes = nodes("p01x", 3, 2);
        int ids = 20;
        Coordination first = nodes.get(0).coordination();
        for (int i = 0; i < ids; i++) {
            assertThat(first.firstDelivery("slack", "evt-" + i, Duration.ofMillis(50)))
                    .isTrue();
        }
        // Wait on the database clock (not a sleep) until every short-lived record has expired.
        awaitDb("SELECT bool_and(expires_at <= clock_timestamp()) AND count(*) = " + ids + " FROM " + schema
                + ".inbound_delivery WHERE source = 'slack'");

        AtomicIntegerArray firsts = new AtomicIntegerArray(ids);
        CyclicBarrier barrier = new CyclicBarrier(nodes.size());
        List<Callable<Void>> tasks = new ArrayList<>();
        for (Baton n : nodes) {
            tasks.add(() -> {
                for (int i = 0; i < ids; i++) {
                    barrier.await(WAIT.toMillis(), TimeUnit.MILLISECONDS);
                    if (n.coordination().firstDelivery("slack", "evt-" + i, Duration.ofMinutes(10))) {
                        firsts.incrementAndGet(i);
                    }
                }
                return null;
            });
        }
        runAll(tasks);
        for (int i = 0; i < ids; i++) {
            assertThat(firsts.get(i))
                    .as("nodes that saw expired evt-%d as first again", i)
                    .isEqualTo(1);
        }
        // The winner's record carries the new ttl: duplicates again, on every node.
        for (Baton n : nodes) {
            assertThat(n.coordination().firstDelivery("slack", "evt-0", Duration.ofMinutes(10)))
                    .isFalse();
        }
        assertThat(count("SELECT count(*) FROM " + schema + ".inbound_delivery WHERE source = 'slack' "
                        + "AND expires_at > clock_timestamp() + interval '5 minutes'"))
                .isEqualTo(ids);
    }

    /**
     * P01 timeout policy: another transaction inserted the same key and has not committed, so the
     * dedupe insert waits on its row lock. With a short bound, ACCEPT answers true, REJECT false and
     * THROW raises {@link BatonException}; the waiting statements are cancelled on the server (no
     * backend is left waiting), a small pool is not drained by repeated timeouts, only the fallbacks
     * are counted, and once the other transaction rolls back the id is first for exactly one caller.
     *
     * <p>Protection removed in a scratch copy and seen failing: the statement bound
     * ({@code Jdbc.queryTimeout} in {@code firstDelivery}): the call blocked on the row lock until the
     * holder went away, and the test's future timed out.
     */
    @Test
    void P01_timeoutPolicyAppliesWhileAnUncommittedInsertHoldsTheKey() throws Exception {
        Baton node = nodes("p01t", 1, 2).get(0);
        Coordination coord = node.coordination();
        Duration bound = Duration.ofMillis(200);
        try (Connection holder = PG.connect()) {
            holder.setAutoCommit(false);
            try (PreparedStatement ps = holder.prepareStatement("INSERT INTO " + schema + ".inbound_delivery "
                    + "(source, delivery_id, received_at, expires_at, receiver) "
                    + "VALUES ('stripe', 'evt_locked', now(), now() + interval '1 hour', 'other')")) {
                ps.executeUpdate();
            }
            long before = coord.fallbacks();

            List<Boolean> answers = call(() -> {
                List<Boolean> out = new ArrayList<>();
                out.add(coord.firstDelivery(
                        "stripe", "evt_locked", Duration.ofHours(1), bound, Coordination.OnTimeout.ACCEPT));
                out.add(coord.firstDelivery(
                        "stripe", "evt_locked", Duration.ofHours(1), bound, Coordination.OnTimeout.REJECT));
                return out;
            });
            assertThat(answers).containsExactly(true, false);
            assertThat(coord.fallbacks() - before)
                    .as("timed-out decisions counted")
                    .isEqualTo(2);

            Throwable thrown = call(() -> {
                try {
                    coord.firstDelivery(
                            "stripe", "evt_locked", Duration.ofHours(1), bound, Coordination.OnTimeout.THROW);
                    return null;
                } catch (RuntimeException e) {
                    return e;
                }
            });
            assertThat(thrown)
                    .isInstanceOf(BatonException.class)
                    .hasMessageContaining("evt_locked")
                    .hasMessageContaining("did not answer within");
            assertThat(coord.fallbacks() - before).as("THROW is not a fallback").isEqualTo(2);

            // No exception storm: many timeouts in a row on a 2-connection pool each answer by policy,
            // none leaks a connection or leaves a statement running on the server.
            List<Boolean> many = call(() -> {
                List<Boolean> out = new ArrayList<>();
                for (int i = 0; i < 8; i++) {
                    out.add(coord.firstDelivery(
                            "stripe",
                            "evt_locked",
                            Duration.ofHours(1),
                            bound,
                            i % 2 == 0 ? Coordination.OnTimeout.ACCEPT : Coordination.OnTimeout.REJECT));
                }
                return out;
            });
            assertThat(many).containsExactly(true, false, true, false, true, false, true, false);
            assertThat(coord.fallbacks() - before).isEqualTo(10);
            Awaitility.await()
                    .atMost(WAIT)
                    .pollInterval(Duration.ofMillis(10))
                    .until(() -> count(
                                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%"
                                            + schema + ".inbound_delivery%'")
                            == 0);
            // Other deliveries are not held up by the locked one.
            assertThat(coord.firstDelivery(
                            "stripe", "evt_free", Duration.ofHours(1), bound, Coordination.OnTimeout.THROW))
                    .isTrue();

            holder.rollback();
        }
        // The uncommitted insert rolled back: the id is first now, and then a duplicate.
        assertThat(coord.firstDelivery(
                        "stripe",
                        "evt_locked",
                        Duration.ofHours(1),
                        Duration.ofSeconds(5),
                        Coordination.OnTimeout.THROW))
                .isTrue();
        assertThat(coord.firstDelivery(
                        "stripe",
                        "evt_locked",
                        Duration.ofHours(1),
                        Duration.ofSeconds(5),
                        Coordination.OnTimeout.THROW))
                .isFalse();
    }
}
