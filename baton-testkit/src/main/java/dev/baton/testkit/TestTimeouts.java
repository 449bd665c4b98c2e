package dev.baton.testkit;

import java.time.Duration;
import java.util.Objects;

/**
 * Scales test wait timeouts so that a slow machine (CI) can stretch every wait at once.
 *
 * <p>The multiplier is the system property {@value #SCALE_PROPERTY} (a positive decimal, default
 * {@code 1}); for example {@code mvn -Dbaton.test.timeoutScale=3 verify}. Surefire passes Maven
 * user properties on to the forked test JVM, so the flag reaches the tests.
 *
 * <p>Scale only <em>upper bounds on waiting</em> (how long to wait for something that should
 * happen). Never scale a duration that a test asserts as a lower bound, or one that is part of the
 * behaviour under test (a lease TTL, an injected latency): stretching those changes the test.
 *
 * <p>The property is read on every call, so a test may set it programmatically.
 */
public final class TestTimeouts {

    /** Name of the system property holding the multiplier. */
    public static final String SCALE_PROPERTY = "baton.test.timeoutScale";

    private TestTimeouts() {}

    /**
     * Returns the current multiplier.
     *
     * @return the value of {@value #SCALE_PROPERTY}, or {@code 1.0} when it is unset or blank
     * @throws IllegalArgumentException if the property is not a finite number greater than zero; the
     *     message names the bad value
     */
    public static double scale() {
        String raw = System.getProperty(SCALE_PROPERTY);
        if (raw == null || raw.isBlank()) {
            return 1.0;
        }
        double scale;
        try {
            scale = Double.parseDouble(raw.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(SCALE_PROPERTY + " must be a positive number, was '" + raw + "'", e);
        }
        if (!(scale > 0) || Double.isInfinite(scale)) {
            throw new IllegalArgumentException(
                    SCALE_PROPERTY + " must be a finite number greater than 0, was '" + raw + "'");
        }
        return scale;
    }

    /**
     * Returns {@code timeout} multiplied by {@link #scale()}, rounded up to whole milliseconds.
     *
     * @param timeout a non-negative upper bound on a wait
     * @return the scaled duration; {@code Duration.ZERO} stays zero
     * @throws NullPointerException if {@code timeout} is null
     * @throws IllegalArgumentException if {@code timeout} is negative, or the scale property is bad
     */
    public static Duration scaled(Duration timeout) {
        Objects.requireNonNull(timeout, "timeout");
        if (timeout.isNegative()) {
            throw new IllegalArgumentException("timeout must not be negative, was " + timeout);
        }
        double scale = scale();
        if (scale == 1.0) {
            return timeout;
        }
        // Work in (double) millis: sub-millisecond precision is meaningless for a wait bound, and
        // doubles cannot overflow the way toNanos() would for very long durations.
        double millis = Math.ceil((timeout.getSeconds() * 1000.0 + timeout.getNano() / 1e6) * scale);
        return Duration.ofMillis((long) Math.min(millis, (double) Long.MAX_VALUE / 2));
    }
}
