package dev.baton;

import dev.baton.internal.db.Db;
import dev.baton.internal.db.Identifiers;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Revocation epochs: "log out everywhere" that holds across instances (see
 * {@link Coordination#revocations}). Each subject has an epoch per scope, 0 until first revoked;
 * {@link #revokeAll} bumps it. Whatever was issued under an earlier epoch (a session, a grant, a
 * remember-me token) is refused once {@link #isCurrent} sees the new one.
 *
 * <p><b>Staleness bound.</b> To spare the database a read per check, each node caches what it read for at
 * most {@code maxStaleness}, counted from when that read was sent. So a revocation committed on any node
 * is honoured by every node at most {@code maxStaleness} later (at once on the node that revoked). A
 * {@code maxStaleness} of zero reads the database on every check. If the database cannot be read when the
 * cached value is too old, the check throws: it never answers from a value older than the bound.
 * Thread-safe.
 */
public final class Revocations {
    /** The longest staleness bound accepted. */
    public static final Duration MAX_STALENESS = Duration.ofHours(1);
    /** Cached subjects per instance, at most; past this the cache is emptied (and refilled by reads). */
    static final int MAX_CACHED = 100_000;

    private record Cached(long epoch, long readSentNanos) {}

    private final Coordination coord;
    private final String scope;
    private final Duration maxStaleness;
    private final Map<String, Cached> cache = new ConcurrentHashMap<>();

    Revocations(Coordination coord, String scope, Duration maxStaleness) {
        this.coord = coord;
        this.scope = Identifiers.name("revocation scope", scope);
        Checks.requirePositive("maxStaleness", maxStaleness, true);
        if (maxStaleness.compareTo(MAX_STALENESS) > 0) {
            throw new IllegalArgumentException(
                    "maxStaleness must be at most " + MAX_STALENESS + ", but was " + maxStaleness);
        }
        this.maxStaleness = maxStaleness;
    }

    /** How old a cached epoch may be when a check uses it. */
    public Duration maxStaleness() {
        return maxStaleness;
    }

    /**
     * Revokes everything the subject holds in this scope ("log out everywhere"): bumps its epoch and
     * returns the new one. Honoured on this node at once, on every node within {@link #maxStaleness()}.
     */
    public long revokeAll(String subject) {
        Identifiers.name("subject", subject);
        long sent = coord.ticker().getAsLong();
        try {
            long epoch = coord.db()
                    .call(
                            "revoking '" + subject + "' in scope '" + scope + "'",
                            c -> coord.store().revokeAll(c, scope, subject));
            remember(subject, epoch, sent);
            return epoch;
        } catch (SQLException e) {
            throw Db.failed("revoking '" + subject + "' in scope '" + scope + "'", e);
        }
    }

    /**
     * The subject's current epoch as this node knows it: read from the database, or from a read sent at most
     * {@link #maxStaleness()} ago. Issue new grants and sessions under this epoch.
     *
     * @throws BatonException if the cached value is too old and the database cannot be read
     */
    public long epoch(String subject) {
        Identifiers.name("subject", subject);
        long now = coord.ticker().getAsLong();
        Cached c = cache.get(subject);
        if (c != null && now - c.readSentNanos() < maxStaleness.toNanos()) {
            return c.epoch();
        }
        try {
            long epoch = coord.db()
                    .call(
                            "reading the revocation epoch of '" + subject + "'",
                            conn -> coord.store().epoch(conn, scope, subject));
            remember(subject, epoch, now);
            return epoch;
        } catch (SQLException e) {
            throw new BatonException(
                    "reading the revocation epoch of '" + subject + "' in scope '" + scope
                            + "' failed, and the value this node knows is older than " + maxStaleness + ": "
                            + e.getMessage(),
                    e);
        }
    }

    /** True while nothing issued under {@code epoch} for the subject has been revoked (see {@link #epoch}). */
    public boolean isCurrent(String subject, long epoch) {
        return epoch >= epoch(subject);
    }

    private void remember(String subject, long epoch, long sentNanos) {
        if (cache.size() >= MAX_CACHED) {
            cache.clear();
        }
        // Never replace a newer reading with an older one (two reads of one subject racing).
        cache.merge(subject, new Cached(epoch, sentNanos), (old, fresh) -> fresh.epoch() >= old.epoch() ? fresh : old);
    }
}
