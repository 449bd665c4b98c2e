package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.baton.testkit.FaultProxy;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * FAULTS.md P04: the database is unreachable while a cap or rate limiter is asked: the cap falls back
 * to this instance's local ceiling, the limiter to its in-process limit, and both are counted (and
 * logged); once the database is back, decisions are made on it again. The node reaches the database
 * through a {@link FaultProxy}; runs through PgBouncer too (E01).
 */
class CoordinationP04DatabaseUnreachableTest extends CoordinationFaultSupport {

    private FaultProxy proxy;
    private HikariDataSource faulty;
    private Coordination coord;

    /** A node whose pool goes through a fault proxy, gives up on a connection after 250 ms and on a socket after 1 s. */
    private void startProxiedNode() throws Exception {
        proxy = closeLater(FaultProxy.start(PG.host(), PG.port()));
        HikariConfig cfg = new HikariConfig();
        String url = PG.jdbcUrlVia("127.0.0.1", proxy.port());
        cfg.setJdbcUrl(url + (url.contains("?") ? "&" : "?") + "socketTimeout=1&connectTimeout=1&loginTimeout=1");
        cfg.setPoolName("p04-proxied");
        cfg.setMaximumPoolSize(4);
        cfg.setMinimumIdle(0);
        cfg.setConnectionTimeout(250);
        cfg.setValidationTimeout(250);
        faulty = closeLater(new HikariDataSource(cfg));
        Baton node = closeLater(Baton.builder(faulty)
                        .schema(schema)
                        .nodeId("p04-proxied")
                        .notifications(NotificationMode.POLL)
                        .migrateOnStart(false)
                        .nodeHeartbeat(Duration.ofSeconds(1))
                        .build())
                .start();
        coord = node.coordination();
    }

    /** The database becomes unreachable: nothing flows, open connections are reset, the pool's idle ones dropped. */
    private void cutOff() {
        proxy.blackHole();
        proxy.resetAll();
        faulty.getHikariPoolMXBean().softEvictConnections();
    }

    /**
     * P04: with the database unreachable, 6 concurrent cap requests get exactly localCeiling (2)
     * local permits, 8 concurrent rate-limiter requests get exactly localLimit (3) fallback
     * allowances, every decision is counted in {@code fallbacks()}, and a released local permit can
     * be taken again. After the proxy heals, the cap hands out database slots and the limiter decides
     * on the database again.
     *
     * <p>Protections removed in a scratch copy and seen failing: the local ceiling of the cap's
     * fallback ({@code new Semaphore(localCeiling)} made {@code new Semaphore(limit)}: 5 local permits
     * at once), and the in-process limit of the rate limiter's fallback (emission interval computed
     * from {@code limit} instead of {@code localLimit}: 8 allowed).
     */
    @Test
    void P04_unreachableDatabaseFallsBackToLocalCeilingAndInProcessLimiter() throws Exception {
        startProxiedNode();
        ConcurrencyCap cap = coord.concurrencyCap("exports", 5, Duration.ofMinutes(1), 2);
        RateLimiter limiter = coord.rateLimiter("login", 100, Duration.ofMinutes(1), 3);
        // Healthy: decided on the database.
        try (ConcurrencyCap.Permit p = cap.tryAcquire("acct").orElseThrow()) {
            assertThat(p.local()).isFalse();
        }
        RateDecision healthy = limiter.tryAcquire("10.0.0.1");
        assertThat(healthy.allowed()).isTrue();
        assertThat(healthy.fallback()).isFalse();
        assertThat(coord.fallbacks()).isZero();

        cutOff();

        List<Optional<ConcurrencyCap.Permit>> permits = concurrently(6, () -> cap.tryAcquire("acct"));
        List<ConcurrencyCap.Permit> local =
                permits.stream().flatMap(Optional::stream).toList();
        assertThat(local)
                .as("local permits at once")
                .hasSize(2)
                .allSatisfy(p -> assertThat(p.local()).isTrue());

        List<RateDecision> decisions = concurrently(8, () -> limiter.tryAcquire("10.0.0.2"));
        assertThat(decisions).allSatisfy(d -> assertThat(d.fallback()).isTrue());
        assertThat(decisions)
                .filteredOn(RateDecision::allowed)
                .as("allowed by the in-process limiter")
                .hasSize(3);
        assertThat(decisions)
                .filteredOn(d -> !d.allowed())
                .allSatisfy(d -> assertThat(d.retryAfter()).isPositive());
        assertThat(coord.fallbacks())
                .as("every decision without the database counted")
                .isEqualTo(14);

        local.get(0).close();
        ConcurrencyCap.Permit again = cap.tryAcquire("acct").orElseThrow();
        assertThat(again.local()).isTrue();
        assertThat(cap.tryAcquire("acct")).as("ceiling still 2").isEmpty();
        assertThat(coord.fallbacks()).isEqualTo(16);
        assertThat(count("SELECT count(*) FROM " + schema + ".concurrency_slot"))
                .as("nothing reached the database")
                .isZero();

        proxy.heal();
        AtomicReference<ConcurrencyCap.Permit> onDb = new AtomicReference<>();
        Awaitility.await().atMost(WAIT).pollInterval(Duration.ofMillis(50)).until(() -> {
            Optional<ConcurrencyCap.Permit> p = cap.tryAcquire("acct");
            if (p.isPresent() && !p.get().local()) {
                onDb.set(p.get());
                return true;
            }
            p.ifPresent(ConcurrencyCap.Permit::close);
            return false;
        });
        assertThat(count("SELECT count(*) FROM " + schema + ".concurrency_slot WHERE holder LIKE 'p04-proxied/%'"))
                .isEqualTo(1);
        onDb.get().close();
        assertThat(count("SELECT count(*) FROM " + schema + ".concurrency_slot"))
                .isZero();
        RateDecision back = limiter.tryAcquire("10.0.0.2");
        assertThat(back.fallback()).as("decided on the database again").isFalse();
        assertThat(back.allowed()).isTrue();
        long fallbacksAfterHeal = coord.fallbacks();
        assertThat(limiter.tryAcquire("10.0.0.3").fallback()).isFalse();
        assertThat(coord.fallbacks()).isEqualTo(fallbacksAfterHeal);
        again.close();
        local.get(1).close();
    }

    /**
     * P04 (and P01's policy): delivery dedupe asked while the database is unreachable applies its
     * policy (ACCEPT: first, REJECT: duplicate) and counts the fallback, THROW raises; back on the
     * database after the heal.
     */
    @Test
    void P04_unreachableDatabaseAppliesTheDedupePolicy() throws Exception {
        startProxiedNode();
        assertThat(coord.firstDelivery("github", "d-1", Duration.ofMinutes(5))).isTrue();
        cutOff();

        assertThat(coord.firstDelivery(
                        "github", "d-1", Duration.ofMinutes(5), Duration.ofSeconds(1), Coordination.OnTimeout.ACCEPT))
                .isTrue();
        assertThat(coord.firstDelivery(
                        "github", "d-2", Duration.ofMinutes(5), Duration.ofSeconds(1), Coordination.OnTimeout.REJECT))
                .isFalse();
        assertThat(coord.fallbacks()).isEqualTo(2);
        try {
            coord.firstDelivery(
                    "github", "d-3", Duration.ofMinutes(5), Duration.ofSeconds(1), Coordination.OnTimeout.THROW);
            throw new AssertionError("THROW should have thrown");
        } catch (BatonException expected) {
            assertThat(expected).hasMessageContaining("d-3");
        }

        proxy.heal();
        Awaitility.await()
                .atMost(WAIT)
                .pollInterval(Duration.ofMillis(50))
                .ignoreException(BatonException.class)
                .until(() -> coord.firstDelivery(
                        "github", "d-2", Duration.ofMinutes(5), Duration.ofSeconds(1), Coordination.OnTimeout.THROW));
        assertThat(coord.firstDelivery("github", "d-1", Duration.ofMinutes(5))).isFalse();
    }

    /** Runs {@code n} copies of {@code call} released together by a barrier; their results. */
    private <T> List<T> concurrently(int n, Callable<T> call) throws Exception {
        CyclicBarrier barrier = new CyclicBarrier(n);
        List<Callable<T>> tasks = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            tasks.add(() -> {
                barrier.await(WAIT.toMillis(), TimeUnit.MILLISECONDS);
                return call.call();
            });
        }
        return runAll(tasks);
    }
}
