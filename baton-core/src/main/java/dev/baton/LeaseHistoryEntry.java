package dev.baton;

import java.time.Instant;
import java.util.Optional;

/**
 * One generation of a lease: who held it and how it ended. {@code endedAt} is empty while the
 * generation is current, or when it has expired but no one has taken the lease over yet.
 *
 * @param endReason {@code released} or {@code expired} (taken over after expiry)
 */
public record LeaseHistoryEntry(
        String name,
        long generation,
        String owner,
        Instant acquiredAt,
        Optional<Instant> endedAt,
        Optional<String> endReason) {}
