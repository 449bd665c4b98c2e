package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * P04's bound: while the application's pool is exhausted (its own connection timeout 30 s, Hikari's
 * default), a concurrency cap, a rate limiter and delivery dedupe answer by their fallback after their
 * decision timeout (1 s by default), instead of waiting for the pool to give up. The test checks the
 * answer comes well before the pool's timeout (it allows 10 s), not how fast: speed is not asserted here.
 */
class CoordinationBoundedFallbackTest extends DbTest {

    /**
     * Protection removed and seen failing: the bounded wait of {@code Coordination.decide} (the database
     * call made on the caller's thread, as before): each call waited for the pool's 30 s connection
     * timeout, and the bounded get of its result (10 s) timed out.
     */
    @Test
    void P04_fallbacksAnswerWithoutWaitingForAnExhaustedPoolsConnectionTimeout() throws Exception {
        HikariConfig cfg = new HikariConfig();
        cfg.setJdbcUrl(PG.jdbcUrl());
        cfg.setPoolName("p04-exhausted-" + schema);
        cfg.setMaximumPoolSize(2);
        cfg.setMinimumIdle(0);
        cfg.setConnectionTimeout(30_000);
        HikariDataSource app = closeLater(new HikariDataSource(cfg));
        Coordination c = new Coordination(app, schema, leases, "p04-bound", System::nanoTime);
        ConcurrencyCap cap = c.concurrencyCap("reports", 5, Duration.ofMinutes(1), 1);
        RateLimiter limiter = c.rateLimiter("login", 5, Duration.ofMinutes(1), 1);
        Connection held1 = closeLater(app.getConnection());
        Connection held2 = closeLater(app.getConnection());
        assertThat(held1).isNotSameAs(held2);

        Optional<ConcurrencyCap.Permit> permit =
                CompletableFuture.supplyAsync(() -> cap.tryAcquire("acct")).get(10, TimeUnit.SECONDS);
        assertThat(permit).hasValueSatisfying(p -> assertThat(p.local()).isTrue());
        RateDecision decision = CompletableFuture.supplyAsync(() -> limiter.tryAcquire("10.0.0.1"))
                .get(10, TimeUnit.SECONDS);
        assertThat(decision.fallback()).isTrue();
        assertThat(decision.allowed()).isTrue();
        boolean first = CompletableFuture.supplyAsync(() -> c.firstDelivery("hook", "d1", Duration.ofHours(1)))
                .get(10, TimeUnit.SECONDS);
        assertThat(first).as("ACCEPT: treated as first").isTrue();
        assertThat(c.fallbacks()).isEqualTo(3);

        held1.close();
        held2.close();
        permit.orElseThrow().close();
        assertThat(cap.tryAcquire("acct"))
                .hasValueSatisfying(p -> assertThat(p.local()).isFalse());
        assertThat(limiter.tryAcquire("10.0.0.2").fallback()).isFalse();
    }
}
