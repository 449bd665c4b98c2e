package dev.baton.examples.audit.auth;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.springframework.stereotype.Service;

/**
 * Step-up grants gate privileged account operations: a grant is single-use, and a logout revokes
 * every grant issued before it. Both are remembered in this process only, so with N instances a
 * grant is redeemable once per instance and a logout is invisible to the other instances.
 */
@Service
public class StepUpGrantRegistry {
    private static final Duration GRANT_TTL = Duration.ofMinutes(5);

    private final Clock clock;
    /** Replay protection: grant id to the time it was redeemed. */
    private final ConcurrentHashMap<String, Instant> redeemedGrants = new ConcurrentHashMap<>();
    /** Logout epochs: subject to the number of logouts; a grant carries the epoch it was issued in. */
    private final ConcurrentHashMap<String, Long> logoutEpochs = new ConcurrentHashMap<>();

    public StepUpGrantRegistry() {
        this.clock = Clock.systemUTC();
    }

    public String issue(String subject) {
        long epoch = logoutEpochs.getOrDefault(subject, 0L);
        String raw = UUID.randomUUID() + "|" + subject + "|" + epoch + "|"
                + clock.instant().plus(GRANT_TTL).toEpochMilli();
        return Base64.getUrlEncoder()
                .withoutPadding()
                .encodeToString(raw.getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    public boolean redeem(String grant) {
        String[] parts =
                new String(Base64.getUrlDecoder().decode(grant), java.nio.charset.StandardCharsets.UTF_8).split("\\|");
        String subject = parts[1];
        long epoch = Long.parseLong(parts[2]);
        boolean live = Instant.ofEpochMilli(Long.parseLong(parts[3])).isAfter(clock.instant());
        return live
                && epoch == logoutEpochs.getOrDefault(subject, 0L)
                && redeemedGrants.putIfAbsent(parts[0], clock.instant()) == null;
    }

    public void logout(String subject) {
        logoutEpochs.merge(subject, 1L, Long::sum);
    }
}
