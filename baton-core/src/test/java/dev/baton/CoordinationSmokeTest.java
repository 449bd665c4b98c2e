package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class CoordinationSmokeTest extends DbTest {

    @Test
    void primitivesWorkOnOneNode() throws Exception {
        Coordination c = node("n1").coordination();
        assertThat(c.firstDelivery("stripe", "evt_1", Duration.ofMinutes(5))).isTrue();
        assertThat(c.firstDelivery("stripe", "evt_1", Duration.ofMinutes(5))).isFalse();

        String token = c.tokens().mint("ws", "user-7", Duration.ofSeconds(30));
        assertThat(token).matches("[A-Za-z0-9_-]{43}");
        assertThat(count("SELECT count(*) FROM " + schema + ".single_use_token WHERE token_hash = decode('"
                        + java.util.HexFormat.of().formatHex(Coordination.sha256(token)) + "', 'hex')"))
                .isEqualTo(1);
        assertThat(c.tokens().consume("ws", token)).contains("user-7");
        assertThat(c.tokens().consume("ws", token)).isEmpty();

        List<String> after = new java.util.ArrayList<>();
        Optional<Integer> r = c.withClaimLock(List.of("claim:tasks"), Duration.ofSeconds(1), claim -> {
            claim.afterCommit(() -> after.add("announced"));
            assertThat(after).isEmpty();
            return 42;
        });
        assertThat(r).contains(42);
        assertThat(after).containsExactly("announced");

        ConcurrencyCap cap = c.concurrencyCap("reports", 2, Duration.ofSeconds(30), 1);
        var p1 = cap.tryAcquire("acct").orElseThrow();
        var p2 = cap.tryAcquire("acct").orElseThrow();
        assertThat(cap.tryAcquire("acct")).isEmpty();
        p1.close();
        assertThat(cap.tryAcquire("acct")).isPresent();
        p2.close();

        RateLimiter rl = c.rateLimiter("login", 3, Duration.ofMinutes(1), 1);
        assertThat(rl.tryAcquire("1.2.3.4").allowed()).isTrue();
        assertThat(rl.tryAcquire("1.2.3.4").allowed()).isTrue();
        assertThat(rl.tryAcquire("1.2.3.4").allowed()).isTrue();
        RateDecision denied = rl.tryAcquire("1.2.3.4");
        assertThat(denied.allowed()).isFalse();
        assertThat(denied.retryAfter()).isPositive().isLessThanOrEqualTo(Duration.ofSeconds(20));
        assertThat(rl.tryAcquire("5.6.7.8").allowed()).isTrue();

        assertThat(c.withLease(
                        "refresh:u1",
                        Duration.ofSeconds(5),
                        Duration.ofSeconds(1),
                        Duration.ofMillis(50),
                        grant -> grant.generation()))
                .hasValueSatisfying(g -> assertThat(g).isPositive());
    }
}
