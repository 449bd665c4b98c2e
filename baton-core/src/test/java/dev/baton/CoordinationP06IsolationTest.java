package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.baton.internal.service.Hooks;
import dev.baton.testkit.PausePoints;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * P06: the pool's default isolation is REPEATABLE READ or SERIALIZABLE, and a cap holder pauses inside
 * its admission transaction. The cap is never exceeded, and other claimers give up after a bounded wait,
 * not forever.
 */
class CoordinationP06IsolationTest extends DbTest {

    /**
     * Protection removed and seen failing: READ COMMITTED for the admission transaction (the
     * {@code SET TRANSACTION ISOLATION LEVEL READ COMMITTED} prefix in ConcurrencyCap and in Db): under
     * REPEATABLE READ the second admission counted on the snapshot taken before the first one committed
     * and was admitted too: two holders at a cap of 1 ("refused" failed). Under SERIALIZABLE it failed with
     * a serialization error instead.
     */
    @ParameterizedTest(name = "P06 cap of 1 under {0}")
    @ValueSource(strings = {"TRANSACTION_REPEATABLE_READ", "TRANSACTION_SERIALIZABLE"})
    void P06_capIsNeverExceededUnderTheDefaultIsolationOfThePool(String isolation) throws Exception {
        Coordination coordination = coordination(pool(isolation));
        ConcurrencyCap cap =
                coordination.concurrencyCap("reports", 1, Duration.ofMinutes(1), 0, Duration.ofSeconds(20));
        PausePoints.Pause firstBeforeCommit = points.arm(Hooks.Points.CAP_BEFORE_COMMIT);
        CompletableFuture<Optional<ConcurrencyCap.Permit>> first =
                CompletableFuture.supplyAsync(() -> cap.tryAcquire("acct"));
        firstBeforeCommit.awaitReached(WAIT); // its slot is inserted, not committed; it holds the key's lock
        CompletableFuture<Optional<ConcurrencyCap.Permit>> second =
                CompletableFuture.supplyAsync(() -> cap.tryAcquire("acct"));
        org.awaitility.Awaitility.await()
                .atMost(WAIT)
                .until(() -> count("SELECT count(*) FROM pg_stat_activity "
                                + "WHERE wait_event_type = 'Lock' AND query LIKE '%pg_advisory_xact_lock%'")
                        >= 1);
        firstBeforeCommit.release();

        assertThat(first.get(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isPresent();
        assertThat(second.get(WAIT.toMillis(), TimeUnit.MILLISECONDS))
                .as("refused: the cap is 1")
                .isEmpty();
        assertThat(slots("reports")).isEqualTo(1);
        assertThat(coordination.fallbacks()).isZero();
    }

    /**
     * Protection removed and seen failing: the bounds of the admission ({@code cap_lock}: lock_timeout,
     * statement_timeout and idle timeout set for the transaction): the second admission waited on the key's
     * lock for as long as the paused one held it, and the bounded get of its result timed out.
     */
    @ParameterizedTest(name = "P06 paused admission under {0}")
    @ValueSource(strings = {"TRANSACTION_REPEATABLE_READ", "TRANSACTION_SERIALIZABLE"})
    void P06_aHolderPausedInsideItsAdmissionDoesNotBlockOthersForever(String isolation) throws Exception {
        Coordination coordination = coordination(pool(isolation));
        ConcurrencyCap cap =
                coordination.concurrencyCap("reports", 1, Duration.ofMinutes(1), 0, Duration.ofMillis(600));
        PausePoints.Pause paused = points.arm(Hooks.Points.CAP_BEFORE_COMMIT);
        CompletableFuture<Optional<ConcurrencyCap.Permit>> first =
                CompletableFuture.supplyAsync(() -> cap.tryAcquire("acct"));
        paused.awaitReached(WAIT);

        Optional<ConcurrencyCap.Permit> second =
                CompletableFuture.supplyAsync(() -> cap.tryAcquire("acct")).get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        assertThat(second)
                .as("gave up after a bounded wait: the key stayed locked")
                .isEmpty();
        // The paused caller stopped waiting at its own bound: no answer counts as unreachable, and the local
        // ceiling of 0 refuses.
        assertThat(first.get(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isEmpty();
        paused.release();
        // The abandoned admission does not commit a slot nobody will use (or the server ended it first).
        org.awaitility.Awaitility.await()
                .atMost(WAIT)
                .until(() -> slots("reports") == 0
                        && count("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                        + "AND query LIKE '%pg_advisory_xact_lock%'")
                                == 0);
        assertThat(cap.tryAcquire("acct")).as("the key is free again").isPresent();
    }

    private HikariDataSource pool(String isolation) {
        HikariConfig c = new HikariConfig();
        c.setJdbcUrl(PG.jdbcUrl());
        c.setPoolName("p06-" + isolation);
        c.setMaximumPoolSize(6);
        c.setMinimumIdle(0);
        if (!PG.pooled()) {
            // A session default set through a transaction pooler would leak to every client of the server
            // session (Hikari sends SET SESSION CHARACTERISTICS): there the admission runs in the default.
            c.setTransactionIsolation(isolation);
        }
        c.setAutoCommit(false);
        return closeLater(new HikariDataSource(c));
    }

    private Coordination coordination(HikariDataSource ds) {
        return new Coordination(ds, schema, leases, "p06-node", System::nanoTime).hooks(points::reach);
    }

    private long slots(String cap) throws Exception {
        return count("SELECT count(*) FROM " + schema + ".concurrency_slot WHERE cap = '" + cap
                + "' AND expires_at > clock_timestamp()");
    }
}
