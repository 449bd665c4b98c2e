package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.baton.internal.service.Hooks;
import dev.baton.testkit.CheckResult;
import dev.baton.testkit.FaultProxy;
import dev.baton.testkit.FencedMutexChecker;
import dev.baton.testkit.HistoryRecorder;
import dev.baton.testkit.PausePoints;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

class FencingTest extends DbTest {

    @Test
    void fencedWriteCommitsWithCurrentGrantAndCheckNeedsATransaction() throws Exception {
        createLedger();
        LeaseGrant g =
                leases.tryAcquire("writer", "node-a", Duration.ofSeconds(5)).orElseThrow();
        long seq = leases.fenced(g, tx -> insertLedger(tx, g));
        assertThat(seq).isPositive();
        try (Connection c = pool.getConnection()) {
            assertThatThrownBy(() -> leases.check(c, g))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("auto-commit");
        }
        assertThatThrownBy(() -> leases.fenced(g, tx -> {
                    insertLedger(tx, g);
                    throw new IllegalStateException("business rule failed");
                }))
                .hasMessage("business rule failed");
        assertThat(count("SELECT count(*) FROM " + schema + ".ledger"))
                .as("failed work rolled back")
                .isEqualTo(1);
    }

    /**
     * L03: A checks locally that it is still the owner (its local deadline has not passed), is paused
     * before its write, B takes over, A resumes and writes. Protection checked: the database fence
     * in {@code check}. With check() made a no-op, A's stale row committed and the test failed.
     */
    @Test
    void L03_pauseBetweenLocalCheckAndWriteIsCaughtByTheFence() throws Exception {
        createLedger();
        LeaseGrant a =
                leases.tryAcquire("lead", "node-a", Duration.ofMillis(400)).orElseThrow();
        PausePoints.Pause paused = points.arm(Hooks.Points.FENCE_BEFORE_CHECK);
        CompletableFuture<Long> aWrite = CompletableFuture.supplyAsync(() -> {
            if (System.nanoTime() >= a.localDeadlineNanos()) {
                throw new AssertionError("test precondition: local check should pass");
            }
            return leases.fenced(a, tx -> insertLedger(tx, a));
        });
        paused.awaitReached(WAIT);

        LeaseGrant b = leases.acquire("lead", "node-b", Duration.ofSeconds(5), WAIT, Duration.ofMillis(20))
                .orElseThrow();
        leases.fenced(b, tx -> insertLedger(tx, b));
        paused.release();

        assertThatThrownByFuture(aWrite).isInstanceOf(LeaseLostException.class);
        assertThat(ledgerGenerations()).extracting(r -> r[1]).containsExactly(b.generation());
    }

    /**
     * L04: A's fenced write is delayed in the network (fault proxy latency above 2L) while B takes over
     * and writes; when A's statements reach the server, the fence rejects them. Protection checked:
     * the fence runs in the database, inside A's transaction, when A's statements arrive. With
     * Leases.check made a no-op, A's delayed row committed after B's generation and the test failed.
     */
    @Test
    void L04_writeDelayedPastTakeoverIsRejectedWhenItArrives() throws Exception {
        createLedger();
        Duration ttl = Duration.ofMillis(300);
        try (FaultProxy proxy = FaultProxy.start(PG.host(), PG.port());
                HikariDataSource viaProxy = proxied(proxy)) {
            try (Connection warm = viaProxy.getConnection()) {
                warm.isValid(1); // a pooled connection is ready before the latency starts
            }
            LeaseGrant a = leases.tryAcquire("lead", "node-a", ttl).orElseThrow();
            proxy.latency(ttl.multipliedBy(2).plusMillis(200));
            CompletableFuture<Long> delayed =
                    CompletableFuture.supplyAsync(() -> leases.fenced(viaProxy, a, tx -> insertLedger(tx, a)));
            LeaseGrant b = leases.acquire("lead", "node-b", Duration.ofSeconds(30), WAIT, Duration.ofMillis(20))
                    .orElseThrow();
            leases.fenced(b, tx -> insertLedger(tx, b));
            assertThatThrownByFuture(delayed).isInstanceOf(LeaseLostException.class);
            proxy.latency(Duration.ZERO);
            assertThat(ledgerGenerations()).extracting(r -> r[1]).containsExactly(b.generation());
        }
    }

    /**
     * L05: a takeover attempted while A's fenced write is in flight waits for A's commit, so no write
     * of generation g commits after g+1 exists. Protection checked: FOR SHARE in the fence. With the
     * lock clause removed, B's takeover did not block (the pg_stat_activity wait assertion failed) and
     * A's commit landed after g+1 (see the control test below for what the checker then reports).
     */
    @Test
    void L05_takeoverWaitsForInFlightFencedWrite() throws Exception {
        createLedger();
        HistoryRecorder history = new HistoryRecorder();
        AtomicLong commitOrder = new AtomicLong();
        LeaseGrant a =
                leases.tryAcquire("lead", "node-a", Duration.ofSeconds(2)).orElseThrow();
        history.grant(a.name(), a.generation(), a.owner());

        PausePoints.Pause beforeCommit = points.arm(Hooks.Points.FENCE_BEFORE_COMMIT);
        CompletableFuture<Long> aWrite = CompletableFuture.supplyAsync(() -> leases.fenced(a, tx -> {
            // Run statements until shortly before expiry, so the paused transaction is young when the
            // lease expires (the fence bounds idle time in the transaction to one TTL).
            awaitRemainingBelow(tx, a, Duration.ofMillis(300));
            return insertLedger(tx, a);
        }));
        beforeCommit.awaitReached(WAIT);

        CompletableFuture<Optional<LeaseGrant>> takeover = CompletableFuture.supplyAsync(
                () -> leases.acquire("lead", "node-b", Duration.ofSeconds(5), WAIT, Duration.ofMillis(20)));
        awaitTakeoverBlockedOnLock();
        awaitExpired("lead");
        assertThat(takeover)
                .as("takeover must wait for the in-flight fenced write")
                .isNotDone();

        beforeCommit.release();
        aWrite.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        history.write(commitOrder.incrementAndGet(), a.name(), a.generation(), a.owner());

        LeaseGrant b = takeover.get(WAIT.toMillis(), TimeUnit.MILLISECONDS).orElseThrow();
        assertThat(b.generation()).isGreaterThan(a.generation());
        history.grant(b.name(), b.generation(), b.owner());
        leases.fenced(b, tx -> insertLedger(tx, b));
        history.write(commitOrder.incrementAndGet(), b.name(), b.generation(), b.owner());

        FencedMutexChecker.check(history.grants(), history.writes()).assertOk();
    }

    /**
     * L05 control: the same interleaving with a plain subquery check (no row lock) lets a write of
     * generation g commit after g+1 exists, and the checker reports it. This is why the fence locks.
     */
    @Test
    void L05_control_plainSubqueryCheckLetsStaleWriteThrough() throws Exception {
        createLedger();
        HistoryRecorder history = new HistoryRecorder();
        LeaseGrant a =
                leases.tryAcquire("lead", "node-a", Duration.ofMillis(300)).orElseThrow();
        history.grant(a.name(), a.generation(), a.owner());
        try (Connection c = pool.getConnection()) {
            c.setAutoCommit(false);
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + schema + ".ledger (lease_name, generation, "
                    + "owner_id) SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM " + schema + ".lease WHERE name = ? AND "
                    + "owner_id = ? AND generation = ? AND expires_at > clock_timestamp())")) {
                ps.setString(1, a.name());
                ps.setLong(2, a.generation());
                ps.setString(3, a.owner());
                ps.setString(4, a.name());
                ps.setString(5, a.owner());
                ps.setLong(6, a.generation());
                assertThat(ps.executeUpdate())
                        .as("plain check passes while valid")
                        .isEqualTo(1);
            }
            // A's write is in flight (not committed). B takes over without waiting and writes.
            LeaseGrant b = leases.acquire("lead", "node-b", Duration.ofSeconds(5), WAIT, Duration.ofMillis(20))
                    .orElseThrow();
            history.grant(b.name(), b.generation(), b.owner());
            leases.fenced(b, tx -> insertLedger(tx, b));
            history.write(1, b.name(), b.generation(), b.owner());
            c.commit(); // the stale write commits after g+1 exists
            history.write(2, a.name(), a.generation(), a.owner());
        }
        CheckResult result = FencedMutexChecker.check(history.grants(), history.writes());
        assertThat(result.ok()).as("the checker must flag the stale write").isFalse();
    }

    /**
     * A writer paused while holding the fence cannot block a takeover for ever: the fence bounds the
     * transaction's idle time to the grant's TTL. Protection checked: the set_config of
     * idle_in_transaction_session_timeout in the fence statement; without it the takeover never
     * happened while A stayed paused and the test timed out.
     */
    @Test
    void L05_pausedFencedWriterCannotBlockTakeoverForever() throws Exception {
        createLedger();
        LeaseGrant a =
                leases.tryAcquire("lead", "node-a", Duration.ofMillis(300)).orElseThrow();
        PausePoints.Pause beforeCommit = points.arm(Hooks.Points.FENCE_BEFORE_COMMIT);
        CompletableFuture<Long> aWrite =
                CompletableFuture.supplyAsync(() -> leases.fenced(a, tx -> insertLedger(tx, a)));
        beforeCommit.awaitReached(WAIT);
        LeaseGrant b = leases.acquire("lead", "node-b", Duration.ofSeconds(5), WAIT, Duration.ofMillis(20))
                .orElseThrow();
        assertThat(b.generation()).isGreaterThan(a.generation());
        beforeCommit.release();
        // The server ended A's idle transaction before its COMMIT arrived: definitely rolled back.
        assertThatThrownByFuture(aWrite).isInstanceOf(LeaseLostException.class).hasMessageContaining("sat idle");
        assertThat(count("SELECT count(*) FROM " + schema + ".ledger")).isZero();
    }

    /**
     * L17: the acknowledgement of a fenced COMMIT is lost (the proxy drops server-to-client bytes).
     * Protection checked: commit failures on a broken connection are reported as
     * UnknownOutcomeException. With that mapping removed, the failure surfaced as a plain
     * BatonException ("failed") and the assertion on the type failed, although the row had committed.
     */
    @Test
    void L17_lostCommitAckIsUnknownOutcomeAndRetryWithKeyIsSafe() throws Exception {
        createLedger();
        LeaseGrant a =
                leases.tryAcquire("lead", "node-a", Duration.ofSeconds(30)).orElseThrow();
        try (FaultProxy proxy = FaultProxy.start(PG.host(), PG.port());
                HikariDataSource viaProxy = proxied(proxy)) {
            PausePoints.Pause beforeCommit = points.arm(Hooks.Points.FENCE_BEFORE_COMMIT);
            CompletableFuture<Long> write = CompletableFuture.supplyAsync(
                    () -> leases.fenced(viaProxy, a, tx -> insertLedger(tx, a, "payment-42")));
            beforeCommit.awaitReached(WAIT);
            proxy.blackHoleServerToClient();
            beforeCommit.release();
            assertThatThrownByFuture(write)
                    .isInstanceOf(UnknownOutcomeException.class)
                    .hasMessageContaining("may or may not have committed");
            proxy.heal();
        }
        // It did commit; a retry with the same idempotency key is safe and adds nothing.
        assertThat(count("SELECT count(*) FROM " + schema + ".ledger WHERE idempotency_key = 'payment-42'"))
                .isEqualTo(1);
        long retried = leases.fenced(a, tx -> insertLedger(tx, a, "payment-42"));
        assertThat(retried).as("retry found the committed row").isEqualTo(-1);
        assertThat(count("SELECT count(*) FROM " + schema + ".ledger")).isEqualTo(1);
    }

    private HikariDataSource proxied(FaultProxy proxy) {
        HikariConfig cfg = new HikariConfig();
        String url = PG.jdbcUrlVia("127.0.0.1", proxy.port());
        cfg.setJdbcUrl(url + (url.contains("?") ? "&" : "?") + "socketTimeout=2");
        cfg.setMaximumPoolSize(2);
        cfg.setPoolName("l17-proxy");
        return new HikariDataSource(cfg);
    }

    private static void awaitRemainingBelow(Connection tx, LeaseGrant g, Duration left) {
        Awaitility.await()
                .atMost(WAIT)
                .pollInterval(Duration.ofMillis(20))
                .until(() -> remaining(tx, g) < left.toMillis());
    }

    private static long remaining(Connection tx, LeaseGrant g) throws SQLException {
        try (ResultSet rs = tx.createStatement()
                .executeQuery("SELECT extract(epoch FROM (timestamptz '" + g.expiresAt()
                        + "' - clock_timestamp())) * 1000")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private void awaitTakeoverBlockedOnLock() {
        Awaitility.await()
                .atMost(WAIT)
                .pollInterval(Duration.ofMillis(10))
                .until(() ->
                        count("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND position('\""
                                        + schema + "\".lease l' in query) > 0")
                                >= 1);
    }

    private static org.assertj.core.api.AbstractThrowableAssert<?, ? extends Throwable> assertThatThrownByFuture(
            CompletableFuture<?> f) {
        return assertThatThrownBy(() -> {
            try {
                f.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
            } catch (java.util.concurrent.ExecutionException e) {
                throw e.getCause();
            }
        });
    }
}
