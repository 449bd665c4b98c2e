package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.baton.internal.db.Jdbc;
import dev.baton.internal.notify.Notifier;
import dev.baton.internal.service.Hooks;
import dev.baton.testkit.FencedMutexChecker;
import dev.baton.testkit.HistoryRecorder;
import java.sql.Connection;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

class LeasesTest extends DbTest {
    private static final Duration TTL = Duration.ofMillis(500);

    @Test
    void acquireRenewReleaseAndHistory() {
        LeaseGrant a = leases.tryAcquire("job-poller", "node-a", TTL).orElseThrow();
        assertThat(a.generation()).isEqualTo(1);
        assertThat(leases.tryAcquire("job-poller", "node-b", TTL)).isEmpty();

        LeaseGrant renewed = leases.renew(a);
        assertThat(renewed.generation()).isEqualTo(1);
        assertThat(renewed.expiresAt()).isAfterOrEqualTo(a.expiresAt());

        LeaseInfo info = leases.inspect("job-poller").orElseThrow();
        assertThat(info.held()).isTrue();
        assertThat(info.owner()).contains("node-a");

        assertThat(leases.release(renewed)).isTrue();
        assertThat(leases.release(renewed)).as("second release changes nothing").isFalse();
        LeaseGrant b = leases.tryAcquire("job-poller", "node-b", TTL).orElseThrow();
        assertThat(b.generation()).isEqualTo(2);

        List<LeaseHistoryEntry> history = leases.history("job-poller", 10);
        assertThat(history).extracting(LeaseHistoryEntry::generation).containsExactly(2L, 1L);
        assertThat(history.get(1).endReason()).contains("released");
        assertThat(history.get(0).owner()).isEqualTo("node-b");
        assertThat(history.get(0).endedAt()).isEmpty();
        assertThat(leases.list(null, 100).items()).extracting(LeaseInfo::name).containsExactly("job-poller");
    }

    @Test
    void badInputIsRefusedWithClearMessagesAndChangesNothing() {
        assertThatThrownBy(() -> leases.tryAcquire("", "a", TTL)).hasMessageContaining("lease name must be 1 to 200");
        assertThatThrownBy(() -> leases.tryAcquire("x".repeat(201), "a", TTL)).hasMessageContaining("201 characters");
        assertThatThrownBy(() -> leases.tryAcquire("n", null, TTL)).hasMessageContaining("owner id");
        assertThatThrownBy(() -> leases.tryAcquire("n\n", "a", TTL)).hasMessageContaining("control characters");
        assertThatThrownBy(() -> leases.tryAcquire("n", "a", Duration.ofMillis(-1)))
                .hasMessageContaining("PT-0.001S");
        assertThatThrownBy(() -> leases.tryAcquire("n", "a", Duration.ofDays(2)))
                .hasMessageContaining("between");
        assertThatThrownBy(() -> leases.history("n", 0)).hasMessageContaining("limit must be 1 to 10000, but was 0");
        assertThatThrownBy(() -> Baton.builder(pool).schema("Bad-Name")).hasMessageContaining("'Bad-Name'");
        assertThat(leases.list(null, 100).items()).isEmpty();
    }

    /**
     * L01. Protection checked: the conditional upsert (ON CONFLICT ... WHERE expired or free). Removing
     * the WHERE clause of the DO UPDATE in lease.sql made every racer "win" and the test failed.
     */
    @Test
    @DisplayName("L01 50 racers on separate connections: one winner per round, generations strictly increase")
    void L01_racingAcquirersHaveOneWinnerPerRound() throws Exception {
        int racers = 50;
        int rounds = 20;
        HistoryRecorder history = new HistoryRecorder();
        var bigPool = closeLater(PG.newPool("l01", racers));
        Leases racing = new Leases(bigPool, schema, Hooks.NONE, System::nanoTime, Notifier.polling());
        // Warm up all connections so each racer has its own.
        List<Connection> conns = new ArrayList<>();
        for (int i = 0; i < racers; i++) {
            conns.add(bigPool.getConnection());
        }
        ExecutorService pool = Executors.newFixedThreadPool(racers);
        try {
            long lastGeneration = 0;
            for (int round = 0; round < rounds; round++) {
                CyclicBarrier start = new CyclicBarrier(racers);
                List<Future<Optional<LeaseGrant>>> results = new ArrayList<>();
                for (int i = 0; i < racers; i++) {
                    Connection c = conns.get(i);
                    String owner = "racer-" + i;
                    results.add(pool.submit(() -> {
                        start.await();
                        return racing.tryAcquire(c, "contended", owner, Duration.ofSeconds(30));
                    }));
                }
                List<LeaseGrant> winners = new ArrayList<>();
                for (Future<Optional<LeaseGrant>> f : results) {
                    f.get(WAIT.toMillis(), TimeUnit.MILLISECONDS).ifPresent(winners::add);
                }
                assertThat(winners).as("winners of round %d", round).hasSize(1);
                LeaseGrant winner = winners.get(0);
                assertThat(winner.generation()).isGreaterThan(lastGeneration);
                lastGeneration = winner.generation();
                history.grant(winner.name(), winner.generation(), winner.owner());
                leases.fenced(winner, tx -> 0); // a committed fenced write per round
                history.write(round, winner.name(), winner.generation(), winner.owner());
                assertThat(leases.release(winner)).isTrue();
            }
        } finally {
            pool.shutdownNow();
            conns.forEach(Jdbc::closeQuietly);
        }
        FencedMutexChecker.check(history.grants(), history.writes()).assertOk();
        assertThat(leases.history("contended", 100)).hasSize(rounds);
    }

    /**
     * L10. Protection checked: the generation bump on re-acquisition by the same owner. With
     * {@code generation = l.generation + 1} replaced by {@code generation = l.generation} the old
     * grant's write was accepted and the test failed.
     */
    @Test
    void L10_sameOwnerReacquiringGetsNewGenerationAndOldWritesAreRejected() throws Exception {
        createLedger();
        LeaseGrant first =
                leases.tryAcquire("poller", "node-a", Duration.ofMillis(100)).orElseThrow();
        awaitExpired("poller");
        LeaseGrant second = leases.tryAcquire("poller", "node-a", TTL).orElseThrow();
        assertThat(second.generation()).isGreaterThan(first.generation());

        assertThatThrownBy(() -> leases.fenced(first, tx -> insertLedger(tx, first)))
                .isInstanceOf(LeaseLostException.class);
        assertThatThrownBy(() -> leases.renew(first)).isInstanceOf(LeaseLostException.class);
        assertThat(leases.release(first))
                .as("old grant cannot release the new one")
                .isFalse();
        leases.fenced(second, tx -> insertLedger(tx, second));
        assertThat(ledgerGenerations()).extracting(r -> r[1]).containsExactly(second.generation());
    }

    /**
     * An acquisition whose statement committed although its answer was lost (the caller timed out) takes
     * the lease again at once when it retries (leadership runners and {@code acquire} retry within one
     * acquisition), under a new generation that voids the unknown one; another acquisition by the same
     * owner id does not (L18). Protection checked: the generation bump; with it removed the earlier
     * grant's write was accepted.
     */
    @Test
    void sameAcquisitionRecoversItsOwnLeaseUnderANewGeneration() throws Exception {
        createLedger();
        String acquisition = Leases.newAcquisition();
        LeaseGrant lostAnswer = leases.attempt("poller", "node-a", Duration.ofSeconds(30), null, acquisition)
                .grant()
                .orElseThrow();
        assertThat(leases.tryAcquire("poller", "node-b", TTL))
                .as("others still wait")
                .isEmpty();
        assertThat(leases.tryAcquire("poller", "node-a", TTL))
                .as("so does another acquisition of the same owner")
                .isEmpty();
        LeaseGrant recovered = leases.attempt("poller", "node-a", Duration.ofSeconds(30), null, acquisition)
                .grant()
                .orElseThrow();
        assertThat(recovered.generation()).isGreaterThan(lostAnswer.generation());
        assertThatThrownBy(() -> leases.fenced(lostAnswer, tx -> insertLedger(tx, lostAnswer)))
                .isInstanceOf(LeaseLostException.class);
        leases.fenced(recovered, tx -> insertLedger(tx, recovered));
        assertThat(leases.history("poller", 5))
                .extracting(LeaseHistoryEntry::generation)
                .containsExactly(recovered.generation(), lostAnswer.generation());
    }

    /**
     * L11. A renewal queues behind a third transaction's row lock before expiry; the takeover is sent
     * after expiry (and queues too) or before it (and takes nothing at once: an acquisition waits for a
     * row lock only when the lease looks free or expired). The lock is then released. Note: an UPDATE
     * evaluates its WHERE (including expiry) before waiting for a row lock and re-evaluates only if the
     * row was changed meanwhile, so a renewal queued before expiry behind a mere lock may complete just
     * after it; that is safe (no one else was granted in between: the takeover re-checks expiry on the
     * newest row version after its own wait). Protection checked: the owner/generation match and the
     * conditional takeover. With the takeover's {@code expires_at <= clock_timestamp()} removed, both won
     * and the test failed.
     */
    @Test
    void L11_renewRacingTakeoverAtExpiryHasOneWinner() throws Exception {
        for (boolean releaseAfterExpiry : new boolean[] {true, false}) {
            String name = "race-" + releaseAfterExpiry;
            // Short when the race is at expiry; long otherwise, so the lease is surely held when the takeover runs.
            Duration ttl = releaseAfterExpiry ? Duration.ofMillis(300) : Duration.ofSeconds(30);
            LeaseGrant a = leases.tryAcquire(name, "node-a", ttl).orElseThrow();
            CompletableFuture<Object> renew;
            CompletableFuture<Optional<LeaseGrant>> takeover;
            try (Connection blocker = pool.getConnection()) {
                blocker.setAutoCommit(false);
                Jdbc.execute(blocker, "SELECT 1 FROM " + schema + ".lease WHERE name = '" + name + "' FOR UPDATE");
                renew = CompletableFuture.supplyAsync(() -> {
                    try {
                        // A long renewal: if it wins, the takeover queued behind it must fail.
                        return leases.renew(a, Duration.ofSeconds(10));
                    } catch (LeaseLostException e) {
                        return e;
                    }
                });
                awaitBlockedOnLock(1);
                if (releaseAfterExpiry) {
                    awaitExpiredOnDbClock(blocker, name);
                }
                takeover = CompletableFuture.supplyAsync(() -> leases.tryAcquire(name, "node-b", TTL));
                if (releaseAfterExpiry) {
                    awaitBlockedOnLock(2);
                } else {
                    assertThat(takeover.get(WAIT.toMillis(), TimeUnit.MILLISECONDS))
                            .as("held: nothing, at once")
                            .isEmpty();
                }
                blocker.rollback();
            }
            Object renewed = renew.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
            Optional<LeaseGrant> took = takeover.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
            boolean renewWon = renewed instanceof LeaseGrant;
            assertThat(renewWon ^ took.isPresent())
                    .as(
                            "exactly one of renew/takeover wins (after expiry: %s; " + "renew: %s; takeover: %s)",
                            releaseAfterExpiry, renewed, took)
                    .isTrue();
            LeaseInfo info = leases.inspect(name).orElseThrow();
            if (renewWon) {
                assertThat(((LeaseGrant) renewed).generation()).isEqualTo(a.generation());
                assertThat(info.generation()).as("renew keeps the generation").isEqualTo(a.generation());
            } else {
                assertThat(took.get().generation()).as("takeover increments").isGreaterThan(a.generation());
                assertThat(info.owner()).contains("node-b");
            }
        }
    }

    /** L12. Protection checked: release clears the owner at once (removing it left the name taken). */
    @Test
    void L12_manyRenewsThenOneReleaseFreesTheNameAtOnce() {
        LeaseGrant g =
                leases.tryAcquire("stacked", "node-a", Duration.ofSeconds(30)).orElseThrow();
        for (int i = 0; i < 100; i++) {
            g = leases.renew(g);
        }
        assertThat(leases.release(g)).isTrue();
        LeaseGrant b = leases.tryAcquire("stacked", "node-b", TTL).orElseThrow();
        assertThat(b.generation()).isEqualTo(2);
    }

    /**
     * L13. Protection checked: expiry from clock_timestamp(). With now() in the acquire statement the
     * lease acquired in a transaction that started more than a TTL earlier was born expired and the
     * assertion on {@code held()} failed.
     */
    @Test
    void L13_acquireAndRenewInsideOldTransactionUseStatementClock() throws Exception {
        Duration ttl = Duration.ofMillis(300);
        try (Connection c = pool.getConnection()) {
            c.setAutoCommit(false);
            Jdbc.execute(c, "SELECT now()");
            Awaitility.await().atMost(WAIT).pollInterval(Duration.ofMillis(20)).until(() -> {
                try (ResultSet rs =
                        c.createStatement().executeQuery("SELECT clock_timestamp() - now() > interval '1 second'")) {
                    rs.next();
                    return rs.getBoolean(1);
                }
            });
            LeaseGrant g = leases.tryAcquire(c, "old-tx", "node-a", ttl).orElseThrow();
            LeaseGrant renewed = leases.renew(c, g, ttl);
            c.commit();
            LeaseInfo info = leases.inspect("old-tx").orElseThrow();
            assertThat(info.held())
                    .as("lease valid right after commit: %s", info)
                    .isTrue();
            assertThat(renewed.expiresAt()).isAfter(info.dbNow().minus(ttl));
        }
    }

    private void awaitBlockedOnLock(int waiters) {
        Awaitility.await()
                .atMost(WAIT)
                .pollInterval(Duration.ofMillis(10))
                .until(() ->
                        count("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%"
                                        + schema + "%lease%'")
                                >= waiters);
    }

    private void awaitExpiredOnDbClock(Connection c, String name) {
        Awaitility.await().atMost(WAIT).pollInterval(Duration.ofMillis(10)).until(() -> {
            try (ResultSet rs = c.createStatement()
                    .executeQuery("SELECT expires_at <= clock_timestamp() FROM " + schema + ".lease WHERE name = '"
                            + name + "'")) {
                rs.next();
                return rs.getBoolean(1);
            }
        });
    }
}
