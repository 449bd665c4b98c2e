package dev.baton;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * A lease as the database sees it at {@code dbNow}.
 *
 * @param owner      the owner id, empty when released
 * @param generation the latest generation granted (kept after release)
 * @param ownerMeta  JSON text the owner attached on acquisition, if any
 * @param dbNow      the database clock when this was read
 */
public record LeaseInfo(
        String name,
        Optional<String> owner,
        long generation,
        Instant acquiredAt,
        Instant renewedAt,
        Instant expiresAt,
        Optional<String> ownerMeta,
        Instant dbNow) {

    /** True when an owner holds the lease and it has not expired on the database clock. */
    public boolean held() {
        return owner.isPresent() && expiresAt.isAfter(dbNow);
    }

    /** Time left before expiry on the database clock; zero when expired or released. */
    public Duration remaining() {
        return held() ? Duration.between(dbNow, expiresAt) : Duration.ZERO;
    }
}
