package dev.baton;

import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Backoff between attempts: {@code base × factor^(attempt-1)}, capped at {@code max}, with ±{@code jitter}
 * random variance so retries of many jobs failing together spread out.
 */
public record RetryPolicy(Duration base, double factor, Duration max, double jitter) {
    /** 1 s, doubling, capped at 1 h, ±20 %: the 24 waits between 25 attempts add up to about 13 hours. */
    public static final RetryPolicy DEFAULT = new RetryPolicy(Duration.ofSeconds(1), 2.0, Duration.ofHours(1), 0.2);

    /** Checks the policy's values. */
    public RetryPolicy {
        Checks.requirePositive("base", base, true);
        Checks.requirePositive("max", max, true);
        if (!(factor >= 1.0) || factor > 100) {
            throw new IllegalArgumentException("factor must be between 1 and 100, but was " + factor);
        }
        if (!(jitter >= 0.0) || jitter >= 1.0) {
            throw new IllegalArgumentException("jitter must be at least 0 and below 1, but was " + jitter);
        }
        if (max.compareTo(base) < 0) {
            throw new IllegalArgumentException("max (" + max + ") must not be below base (" + base + ")");
        }
    }

    /** Retries at once, for tests and for work that should not wait. */
    public static RetryPolicy immediate() {
        return new RetryPolicy(Duration.ZERO, 1.0, Duration.ZERO, 0.0);
    }

    /** Exponential backoff from {@code base}, doubling per attempt, capped at {@code max}, ±20 % jitter. */
    public static RetryPolicy exponential(Duration base, Duration max) {
        return new RetryPolicy(base, 2.0, max, 0.2);
    }

    /** The delay before the attempt after {@code attempt} (1-based). */
    public Duration delayAfter(int attempt) {
        double raw = base.toMillis() * Math.pow(factor, Math.max(0, attempt - 1));
        double capped = Math.min(raw, max.toMillis());
        double spread = capped * jitter * (2 * ThreadLocalRandom.current().nextDouble() - 1);
        return Duration.ofMillis(Math.max(0, Math.round(capped + spread)));
    }
}
