package dev.baton;

import dev.baton.internal.db.Identifiers;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * At most {@code limit} requests per key per window across all instances (see
 * {@link Coordination#rateLimiter}), decided by GCRA in one statement on the database clock. If the
 * database is unreachable, an in-process GCRA with the local limit decides, and says so. Thread-safe.
 */
public final class RateLimiter {
    private static final Logger log = LoggerFactory.getLogger(RateLimiter.class);

    private final Coordination coord;
    private final String name;
    private final long windowUs;
    private final long emissionUs;
    private final long localWindowNanos;
    private final long localEmissionNanos;
    private final Duration timeout;
    private final Map<String, AtomicLong> localTat = new ConcurrentHashMap<>();
    private final AtomicLong lastFallbackLog = new AtomicLong();

    RateLimiter(Coordination coord, String name, int limit, Duration window, int localLimit, Duration timeout) {
        this.coord = coord;
        this.name = Identifiers.name("limiter name", name);
        if (limit < 1 || limit > 1_000_000) {
            throw new IllegalArgumentException("limit must be 1 to 1000000, but was " + limit);
        }
        if (localLimit < 0 || localLimit > limit) {
            throw new IllegalArgumentException("localLimit must be 0 to limit (" + limit + "), but was " + localLimit);
        }
        Checks.requirePositive("window", window, false);
        if (window.compareTo(Duration.ofMillis(1)) < 0 || window.compareTo(Duration.ofDays(1)) > 0) {
            throw new IllegalArgumentException("window must be between PT0.001S and PT24H, but was " + window);
        }
        Coordination.requireDecisionTimeout(timeout);
        this.timeout = timeout;
        this.windowUs = window.toNanos() / 1000;
        this.emissionUs = Math.max(1, windowUs / limit);
        this.localWindowNanos = window.toNanos();
        this.localEmissionNanos = localLimit == 0 ? Long.MAX_VALUE : Math.max(1, window.toNanos() / localLimit);
    }

    /**
     * Decides one request for {@code key} (e.g. a client IP), counting it if allowed. Answers within the
     * decision timeout, the wait for a pool connection included; without the database's answer by then,
     * the in-process fallback decides ({@link RateDecision#fallback()}).
     */
    public RateDecision tryAcquire(String key) {
        Identifiers.name("limiter key", key);
        long bound = Math.max(1, timeout.toMillis());
        Coordination.Decision<RateDecision> d = coord.decide(
                timeout,
                "rate limiter '" + name + "' for key '" + key + "'",
                c -> coord.store().acquireRate(c, name, key, emissionUs, windowUs, bound),
                null);
        if (d.answered()) {
            return d.value();
        }
        coord.countFallback("rate_limiter");
        long now = coord.ticker().getAsLong();
        long last = lastFallbackLog.get();
        if (now - last > 10_000_000_000L && lastFallbackLog.compareAndSet(last, now)) {
            log.warn(
                    "rate limiter '{}': the database did not answer within {} ({}); deciding with the in-process "
                            + "fallback limit",
                    name,
                    timeout,
                    d.failure() == null ? "timed out" : d.failure().getMessage());
        }
        return local(key);
    }

    private RateDecision local(String key) {
        if (localEmissionNanos == Long.MAX_VALUE) {
            return new RateDecision(false, Duration.ofNanos(localWindowNanos), true);
        }
        AtomicLong tat = localTat.computeIfAbsent(key, k -> new AtomicLong(Long.MIN_VALUE));
        while (true) {
            long current = tat.get();
            // Read the clock after the state: a successful compare-and-set then never uses an
            // earlier "now" than the one that set the state it replaces, so concurrent callers
            // are decided as if they came one after another.
            long now = coord.ticker().getAsLong();
            long next = (current == Long.MIN_VALUE ? now : Math.max(current, now)) + localEmissionNanos;
            if (next - now > localWindowNanos) {
                return new RateDecision(false, Duration.ofNanos(next - now - localWindowNanos), true);
            }
            if (tat.compareAndSet(current, next)) {
                return new RateDecision(true, Duration.ZERO, true);
            }
        }
    }
}
