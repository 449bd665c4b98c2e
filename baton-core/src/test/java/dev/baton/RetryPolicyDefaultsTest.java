package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The default retry settings the README states: 25 attempts, 1 s doubling to 1 h, ±20 %, about 13 hours in all. */
class RetryPolicyDefaultsTest {
    @Test
    void defaultsAreAsDocumented() {
        assertThat(JobRequest.DEFAULT_MAX_ATTEMPTS).isEqualTo(25);
        assertThat(JobRequest.of("x", null).encoded("null", null).maxAttempts()).isEqualTo(25);
        assertThat(RetryPolicy.DEFAULT)
                .isEqualTo(new RetryPolicy(Duration.ofSeconds(1), 2.0, Duration.ofHours(1), 0.2));
        RetryPolicy noJitter = new RetryPolicy(Duration.ofSeconds(1), 2.0, Duration.ofHours(1), 0.0);
        Duration total = Duration.ZERO;
        for (int attempt = 1; attempt < JobRequest.DEFAULT_MAX_ATTEMPTS; attempt++) {
            total = total.plus(noJitter.delayAfter(attempt));
        }
        // 1 + 2 + … + 2048 s, then 12 × 1 h: 47,295 s, about 13.1 hours.
        assertThat(total).isEqualTo(Duration.ofSeconds(47_295));
        for (int i = 0; i < 200; i++) {
            long ms = RetryPolicy.DEFAULT.delayAfter(30).toMillis();
            assertThat(ms).isBetween(2_880_000L, 4_320_000L); // 1 h ± 20 %
        }
    }
}
