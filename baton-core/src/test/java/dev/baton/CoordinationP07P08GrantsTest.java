package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * P07: a subject's revocation epoch is bumped on one node ("log out everywhere"): a grant issued before it
 * is refused on every node within the documented staleness bound. P08: one replay-protected grant
 * presented on several nodes at once, and after expiry: accepted once cluster-wide, never after expiry.
 */
class CoordinationP07P08GrantsTest extends DbTest {
    private static final byte[] KEY = "0123456789abcdef0123456789abcdef-test-key".getBytes(StandardCharsets.UTF_8);
    private static final Duration STALENESS = Duration.ofSeconds(5);

    /**
     * Protection removed and seen failing: the staleness bound of the cache in {@code Revocations.epoch}
     * (a cached epoch used whatever its age): node B went on accepting the revoked subject's grant after the
     * bound ("refused at the bound" failed).
     */
    @Test
    void P07_aRevocationOnOneNodeIsHonouredOnEveryNodeWithinTheStalenessBound() throws Exception {
        JobSelfStopTest.ManualTicker clockB = new JobSelfStopTest.ManualTicker();
        Baton a = node("p07-a");
        Baton b = node("p07-b", appPool, clockB);
        Revocations sessionsA = a.coordination().revocations("session", STALENESS);
        Revocations sessionsB = b.coordination().revocations("session", STALENESS);
        Grants stepUpA = a.coordination().grants("step-up", KEY, sessionsA);
        Grants stepUpB = b.coordination().grants("step-up", KEY, sessionsB);

        String before = stepUpA.issue("user-1", Duration.ofMinutes(5));
        long issuedUnder = stepUpA.verify(before).orElseThrow().epoch();
        assertThat(sessionsB.isCurrent("user-1", issuedUnder))
                .as("B reads, and caches, the epoch")
                .isTrue();
        long readAt = clockB.getAsLong();

        assertThat(sessionsA.revokeAll("user-1")).isGreaterThan(issuedUnder);
        assertThat(sessionsA.isCurrent("user-1", issuedUnder))
                .as("refused at once where it was revoked")
                .isFalse();
        assertThat(stepUpA.redeem(stepUpA.issue("user-1", Duration.ofMinutes(5))))
                .as("new grants work")
                .isPresent();

        clockB.set(readAt + STALENESS.toNanos() - 1);
        assertThat(sessionsB.isCurrent("user-1", issuedUnder))
                .as("B may still answer from its read, within the bound")
                .isTrue();
        clockB.set(readAt + STALENESS.toNanos());
        assertThat(sessionsB.isCurrent("user-1", issuedUnder))
                .as("refused at the bound")
                .isFalse();
        assertThat(stepUpB.redeem(before))
                .as("the grant issued before the revocation, on B")
                .isEmpty();
        assertThat(stepUpA.redeem(before)).as("and on A").isEmpty();
        assertThat(sessionsB.isCurrent("user-2", 0))
                .as("other subjects unaffected")
                .isTrue();
        assertThat(count("SELECT count(*) FROM " + schema + ".revocation_epoch"))
                .isEqualTo(1);
    }

    /**
     * Protections removed and seen failing: the single use ({@code ON CONFLICT (purpose, grant_id) DO NOTHING}
     * made {@code DO UPDATE SET redeemed_at = excluded.redeemed_at}, returning the row for every caller):
     * all 8 redemptions were accepted; the expiry check ({@code WHERE ?::timestamptz > clock_timestamp()}
     * dropped): the expired grant was accepted.
     */
    @Test
    void P08_oneGrantPresentedOnSeveralNodesAtOnceIsAcceptedOnceAndNeverAfterExpiry() throws Exception {
        List<Grants> nodes = new ArrayList<>();
        DataSource shared = appPoolOf("p08", 12); // eight redeeming threads and four nodes' services
        for (String id : List.of("p08-a", "p08-b", "p08-c", "p08-d")) {
            nodes.add(node(id, shared, System::nanoTime).coordination().grants("step-up", KEY, null));
        }
        ExecutorService pool8 = Executors.newFixedThreadPool(8);
        closeLater(pool8::shutdownNow);
        for (int round = 0; round < 10; round++) {
            String token = nodes.get(round % 4).issue("user-" + round, Duration.ofMinutes(5));
            CountDownLatch go = new CountDownLatch(1);
            List<Future<Optional<Grants.Grant>>> tries = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                Grants on = nodes.get(i % 4);
                tries.add(pool8.submit(() -> {
                    go.await();
                    return on.redeem(token);
                }));
            }
            go.countDown();
            int accepted = 0;
            for (Future<Optional<Grants.Grant>> f : tries) {
                accepted += f.get(WAIT.toMillis(), TimeUnit.MILLISECONDS).isPresent() ? 1 : 0;
            }
            assertThat(accepted).as("accepted in round %d", round).isEqualTo(1);
        }

        String shortLived = nodes.get(0).issue("user-x", Duration.ofMillis(300));
        Grants.Grant claims = nodes.get(1).verify(shortLived).orElseThrow();
        Awaitility.await()
                .atMost(WAIT)
                .pollInterval(Duration.ofMillis(20))
                .until(() -> count("SELECT count(*) FROM (SELECT clock_timestamp() > to_timestamp("
                                + claims.expiresAt().toEpochMilli() + " / 1000.0)) t(expired) WHERE expired")
                        == 1);
        for (Grants on : nodes) {
            assertThat(on.redeem(shortLived)).as("never after expiry").isEmpty();
        }
    }

    @Test
    void forgedOrForeignTokensAreRefusedAndBadSettingsNamed() {
        Grants stepUp = node("p08-f").coordination().grants("step-up", KEY, null);
        String token = stepUp.issue("user-1", Duration.ofMinutes(1));
        String[] parts = token.split("\\.");
        String otherSubject =
                new String(Base64.getUrlDecoder().decode(parts[0]), StandardCharsets.UTF_8).replace("user-1", "user-2");
        String forged =
                Base64.getUrlEncoder().withoutPadding().encodeToString(otherSubject.getBytes(StandardCharsets.UTF_8))
                        + "." + parts[1];
        assertThat(stepUp.redeem(forged)).as("payload changed, signature kept").isEmpty();
        byte[] otherKey = KEY.clone();
        otherKey[0] ^= 1;
        assertThat(node("p08-g")
                        .coordination()
                        .grants("step-up", otherKey, null)
                        .redeem(token))
                .as("other key")
                .isEmpty();
        assertThat(node("p08-h")
                        .coordination()
                        .grants("email-change", KEY, null)
                        .redeem(token))
                .as("other purpose")
                .isEmpty();
        assertThat(stepUp.redeem("not a token")).isEmpty();
        assertThat(stepUp.redeem(token)).isPresent();
        assertThatThrownBy(() -> node("p08-i").coordination().grants("step-up", new byte[16], null))
                .hasMessageContaining("at least 32 bytes")
                .hasMessageContaining("16");
        assertThatThrownBy(() -> stepUp.issue("u", Duration.ofDays(2))).hasMessageContaining("at most PT24H");
        assertThatThrownBy(() -> node("p08-j").coordination().revocations("session", Duration.ofHours(2)))
                .hasMessageContaining("maxStaleness must be at most PT1H");
    }
}
