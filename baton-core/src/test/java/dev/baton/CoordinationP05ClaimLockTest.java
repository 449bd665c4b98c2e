package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.internal.db.Jdbc;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * FAULTS.md P05: a claim-lock holder that never commits: a waiter gives up after its lock timeout
 * without running; after-commit hooks run only after a commit; overlapping claims never deadlock.
 * Runs through PgBouncer too (E01): the locks and the lock timeout are transaction-scoped.
 */
class CoordinationP05ClaimLockTest extends CoordinationFaultSupport {

    /**
     * P05: node A holds the claim lock on "k" inside its body and does not return (a latch keeps its
     * transaction open). Node B, with a 300 ms lock timeout, gets {@code Optional.empty()} without
     * running its body and without an exception, and its lock timeout does not outlive its
     * transaction. Once A commits, B claims normally.
     *
     * <p>Protection removed in a scratch copy and seen failing: the {@code LOCK_NOT_AVAILABLE}
     * (55P03) branch that turns the lock timeout into an empty result (B's call then threw
     * BatonException); and, separately, the {@code lock_timeout} statement (B waited on A's lock for
     * as long as A held it, then ran its body); and {@code set_config(..., true)} made session-wide
     * (the 300 ms lock timeout stayed on B's connection after its claim committed).
     */
    @Test
    void P05_waiterGivesUpAfterLockTimeoutWithoutRunningWhileHolderNeverCommits() throws Exception {
        List<Baton> nodes = nodes("p05", 2, 1);
        Coordination a = nodes.get(0).coordination();
        Coordination b = nodes.get(1).coordination();
        ExecutorService exec = threads(1);
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch letGo = new CountDownLatch(1);
        Future<Optional<String>> holder =
                exec.submit(() -> a.withClaimLock(List.of("k"), Duration.ofSeconds(10), claim -> {
                    inside.countDown();
                    if (!letGo.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)) {
                        throw new AssertionError("holder was never let go");
                    }
                    return "holder";
                }));
        try {
            assertThat(inside.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();

            AtomicBoolean waiterRan = new AtomicBoolean();
            for (int attempt = 0; attempt < 3; attempt++) {
                Optional<String> waited = call(() -> b.withClaimLock(List.of("k"), Duration.ofMillis(300), claim -> {
                    waiterRan.set(true);
                    return "waiter";
                }));
                assertThat(waited).as("claim while the holder never commits").isEmpty();
            }
            assertThat(waiterRan).as("waiter's body ran").isFalse();
            // The same key set in another order and with other keys is still the same lock on "k".
            assertThat(call(() -> b.withClaimLock(List.of("z", "k"), Duration.ofMillis(300), claim -> "waiter")))
                    .isEmpty();
            // Other keys are not blocked.
            assertThat(b.withClaimLock(List.of("other"), Duration.ofMillis(300), claim -> "free"))
                    .contains("free");
            // The lock timeout is transaction-local: after a committed claim, B's pool (one connection)
            // carries no 300 ms timeout on into unrelated work.
            try (Connection c = b.dataSource().getConnection();
                    ResultSet rs = c.createStatement().executeQuery("SHOW lock_timeout")) {
                rs.next();
                assertThat(rs.getString(1)).isNotEqualTo("300ms");
            }
        } finally {
            letGo.countDown();
        }
        assertThat(holder.get(WAIT.toMillis(), TimeUnit.MILLISECONDS)).contains("holder");
        assertThat(b.withClaimLock(List.of("k"), Duration.ofMillis(300), claim -> "waiter"))
                .contains("waiter");
    }

    /**
     * P05: after-commit hooks. A body that registers a hook and then throws rolls back: the hook
     * never runs and its write is gone. A body that returns: inside the body the hook has not run;
     * when it runs, another connection already sees the body's row (so it ran after the commit);
     * hooks run in registration order, and a failing hook neither stops the next nor the result.
     *
     * <p>Protections removed in a scratch copy and seen failing: running the after-commit steps
     * before {@code c.commit()} (the hook did not see the row from another connection), and running
     * them on rollback too (the thrown body's hook ran).
     */
    @Test
    void P05_afterCommitHooksRunOnlyAfterACommit() throws Exception {
        Coordination coord = nodes("p05h", 1, 2).get(0).coordination();
        try (Connection c = pool.getConnection()) {
            Jdbc.execute(c, "CREATE TABLE " + schema + ".p05_claims (id text PRIMARY KEY)");
        }

        AtomicBoolean rolledBackHookRan = new AtomicBoolean();
        RuntimeException boom = new IllegalStateException("business rule failed");
        try {
            coord.withClaimLock(List.of("claim:tasks"), Duration.ofSeconds(5), claim -> {
                insertClaim(claim.connection(), "rolled-back");
                claim.afterCommit(() -> rolledBackHookRan.set(true));
                throw boom;
            });
            throw new AssertionError("the body's exception should have propagated");
        } catch (IllegalStateException e) {
            assertThat(e).isSameAs(boom);
        }
        assertThat(rolledBackHookRan).as("hook of a rolled-back claim ran").isFalse();
        assertThat(count("SELECT count(*) FROM " + schema + ".p05_claims")).isZero();

        List<String> order = Collections.synchronizedList(new ArrayList<>());
        AtomicReference<Boolean> visibleToOthers = new AtomicReference<>();
        AtomicBoolean ranInsideBody = new AtomicBoolean(true);
        Optional<String> result = coord.withClaimLock(List.of("claim:tasks"), Duration.ofSeconds(5), claim -> {
            insertClaim(claim.connection(), "task-1");
            claim.afterCommit(() -> {
                order.add("announce");
                try {
                    visibleToOthers.set(
                            count("SELECT count(*) FROM " + schema + ".p05_claims WHERE id = 'task-1'") == 1);
                } catch (SQLException e) {
                    throw new IllegalStateException(e);
                }
            });
            claim.afterCommit(() -> {
                order.add("failing");
                throw new IllegalStateException("a failing announcement");
            });
            claim.afterCommit(() -> order.add("after-failing"));
            ranInsideBody.set(!order.isEmpty());
            return "claimed";
        });
        assertThat(result).contains("claimed");
        assertThat(ranInsideBody).as("a hook ran inside the body").isFalse();
        assertThat(order).containsExactly("announce", "failing", "after-failing");
        assertThat(visibleToOthers.get())
                .as("the body's row was committed when the hook ran")
                .isTrue();

        // A claim that cannot get its lock runs neither body nor hooks.
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch letGo = new CountDownLatch(1);
        ExecutorService exec = threads(1);
        Future<Optional<String>> holder =
                exec.submit(() -> coord.withClaimLock(List.of("claim:tasks"), Duration.ofSeconds(5), claim -> {
                    inside.countDown();
                    letGo.await(WAIT.toMillis(), TimeUnit.MILLISECONDS);
                    return "held";
                }));
        assertThat(inside.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
        AtomicBoolean contendedHookRan = new AtomicBoolean();
        try {
            assertThat(call(() -> coord.withClaimLock(List.of("claim:tasks"), Duration.ofMillis(200), claim -> {
                        claim.afterCommit(() -> contendedHookRan.set(true));
                        return "never";
                    })))
                    .isEmpty();
        } finally {
            letGo.countDown();
        }
        assertThat(holder.get(WAIT.toMillis(), TimeUnit.MILLISECONDS)).contains("held");
        assertThat(contendedHookRan).isFalse();
    }

    private void insertClaim(Connection tx, String id) throws SQLException {
        try (PreparedStatement ps = tx.prepareStatement("INSERT INTO " + schema + ".p05_claims (id) VALUES (?)")) {
            ps.setString(1, id);
            ps.executeUpdate();
        }
    }

    /**
     * P05: four claimers on four nodes lock overlapping key sets given in different orders, released
     * together by a barrier for 100 rounds: no deadlock (every claim runs, none raises), and since
     * every set shares key "b", no two bodies ever run at once.
     *
     * <p>Protection removed in a scratch copy and seen failing: sorting the keys ({@code TreeSet}
     * made a {@code LinkedHashSet} in {@code withClaimLock}): PostgreSQL detected deadlocks
     * (40P01) and claims failed with BatonException.
     */
    @Test
    void P05_overlappingClaimsInDifferentOrdersNeverDeadlock() throws Exception {
        List<List<String>> keySets =
                List.of(List.of("a", "b", "c"), List.of("c", "b", "a"), List.of("b", "d", "a"), List.of("d", "c", "b"));
        List<Baton> nodes = nodes("p05d", keySets.size(), 1);
        int rounds = 100;
        CyclicBarrier barrier = new CyclicBarrier(keySets.size());
        AtomicInteger running = new AtomicInteger();
        AtomicInteger maxRunning = new AtomicInteger();
        List<Callable<Integer>> tasks = new ArrayList<>();
        for (int i = 0; i < keySets.size(); i++) {
            Coordination coord = nodes.get(i).coordination();
            List<String> keys = keySets.get(i);
            tasks.add(() -> {
                int claimed = 0;
                for (int r = 0; r < rounds; r++) {
                    barrier.await(WAIT.toMillis(), TimeUnit.MILLISECONDS);
                    Optional<Boolean> ran = coord.withClaimLock(keys, Duration.ofSeconds(10), claim -> {
                        maxRunning.accumulateAndGet(running.incrementAndGet(), Math::max);
                        try (ResultSet rs = claim.connection().createStatement().executeQuery("SELECT 1")) {
                            rs.next();
                        }
                        running.decrementAndGet();
                        return true;
                    });
                    if (ran.isPresent()) {
                        claimed++;
                    }
                }
                return claimed;
            });
        }
        assertThat(runAll(tasks)).as("claims that ran, per claimer").containsOnly(rounds);
        assertThat(maxRunning.get())
                .as("bodies running at once under a shared key")
                .isEqualTo(1);
    }
}
