package dev.baton.internal.coord;

import dev.baton.RateDecision;
import dev.baton.internal.db.Identifiers;
import dev.baton.internal.db.Sql;
import dev.baton.internal.db.SqlCall;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.SortedSet;

/**
 * The statements of the coordination primitives ({@code sql/coord.sql}): delivery dedupe, single-use
 * tokens, claim locks, concurrency-cap slots, rate limits, revocation epochs and grant redemptions. Every
 * method runs on the caller's connection, in the caller's transaction if one is open; a positive
 * {@code timeoutMs} bounds the statement on the server too ({@link Sql#prepareBounded}), for Baton's own
 * transactions only. Validation, timeouts of the wait and fallbacks are the facades'; this class only talks
 * to the database.
 */
public final class CoordinationStore {
    private final Sql sql;

    public CoordinationStore(String schema) {
        this.sql = Sql.load("coord.sql", Identifiers.schema(schema));
    }

    // ---------------------------------------------------------------- delivery dedupe

    /**
     * Records delivery {@code deliveryId} of {@code source} for {@code ttl}: true if this caller is the first
     * (no unexpired record existed), false for a duplicate.
     */
    public boolean firstDelivery(
            Connection c, String source, String deliveryId, Duration ttl, String receiver, long timeoutMs)
            throws SQLException {
        try (SqlCall q = sql.prepareBounded(c, "first_delivery", timeoutMs)
                .setString("source", source)
                .setString("delivery_id", deliveryId)
                .setLong("ttl_ms", ttl.toMillis())
                .setString("receiver", receiver)) {
            return q.query().next();
        }
    }

    // ---------------------------------------------------------------- single-use tokens

    /**
     * Stores a token by its hash, valid for {@code ttl} on the database clock; {@code subject} may be null.
     * Returns the row count (1).
     */
    public int mintToken(Connection c, byte[] tokenHash, String purpose, String subject, Duration ttl)
            throws SQLException {
        try (SqlCall q = sql.prepare(c, "mint_token")
                .setBytes("token_hash", tokenHash)
                .setString("purpose", purpose)
                .setString("subject", subject)
                .setLong("ttl_ms", ttl.toMillis())) {
            return q.update();
        }
    }

    /**
     * Deletes the token with this hash and purpose if it has not expired, and returns its subject ({@code ""}
     * if it had none); empty if there was no such token. Two concurrent consumers cannot both get it.
     */
    public Optional<String> consumeToken(Connection c, byte[] tokenHash, String purpose) throws SQLException {
        try (SqlCall q = sql.prepare(c, "consume_token")
                .setBytes("token_hash", tokenHash)
                .setString("purpose", purpose)) {
            ResultSet rs = q.query();
            return rs.next() ? Optional.of(rs.getString(1)) : Optional.empty();
        }
    }

    // ---------------------------------------------------------------- claim locks

    /**
     * In the caller's open transaction: sets its lock timeout to {@code lockTimeout} (at least 1 ms), then
     * takes the transaction-scoped advisory lock of each key in the set's order (sorted, so that two claimers
     * cannot deadlock). A lock not granted in time fails with SQLSTATE 55P03 (lock_not_available).
     */
    public void lockClaim(Connection transaction, SortedSet<String> keys, Duration lockTimeout) throws SQLException {
        try (SqlCall q = sql.prepare(transaction, "lock_timeout")
                .setString("timeout", Math.max(1, lockTimeout.toMillis()) + "ms")) {
            q.execute();
        }
        try (SqlCall q = sql.prepare(transaction, "advisory_xact_lock")) {
            for (String k : keys) {
                q.setString("key", k).execute();
            }
        }
    }

    // ---------------------------------------------------------------- concurrency caps

    /**
     * One admission to cap {@code cap} for {@code key}, in the caller's open Read Committed transaction:
     * bounds the transaction (the key's lock is waited for {@code timeoutMs / 2}, so a held key fails with
     * SQLSTATE 55P03 before the caller stops waiting; statements and idleness {@code timeoutMs}), takes the
     * key's advisory lock in the same round trip, counts the live slots in a new statement (which sees every
     * holder committed before the lock was granted) and, if fewer than {@code limit}, inserts a slot for
     * {@code holder} expiring after {@code slotTtl}. True if the slot was inserted; it counts once the
     * transaction commits, and the lock is held until then.
     */
    public boolean admit(
            Connection transaction, String cap, String key, String holder, int limit, Duration slotTtl, long timeoutMs)
            throws SQLException {
        // The lock gives up first, so a held key reads as "refused", not as "no answer".
        try (SqlCall q = sql.prepare(transaction, "cap_lock")
                .setString("lock_timeout", Math.max(1, timeoutMs / 2) + "ms")
                .setString("statement_timeout", timeoutMs + "ms")
                .setString("idle_timeout", timeoutMs + "ms")
                .setString("lock_key", "baton.cap:" + cap + ":" + key)) {
            q.execute();
        }
        long held;
        try (SqlCall q =
                sql.prepare(transaction, "cap_count").setString("cap", cap).setString("key", key)) {
            ResultSet rs = q.query();
            rs.next();
            held = rs.getLong(1);
        }
        if (held >= limit) {
            return false;
        }
        try (SqlCall q = sql.prepare(transaction, "cap_insert")
                .setString("cap", cap)
                .setString("key", key)
                .setString("holder", holder)
                .setLong("ttl_ms", slotTtl.toMillis())) {
            q.update();
        }
        return true;
    }

    /** Extends {@code holder}'s slot by {@code slotTtl}; false if it already expired or is gone. */
    public boolean renewSlot(Connection c, String cap, String key, String holder, Duration slotTtl)
            throws SQLException {
        try (SqlCall q = sql.prepare(c, "cap_renew")
                .setLong("ttl_ms", slotTtl.toMillis())
                .setString("cap", cap)
                .setString("key", key)
                .setString("holder", holder)) {
            return q.update() == 1;
        }
    }

    /** Deletes {@code holder}'s slot, expired or not; returns how many rows went (0 or 1). */
    public int releaseSlot(Connection c, String cap, String key, String holder) throws SQLException {
        try (SqlCall q = sql.prepare(c, "cap_release")
                .setString("cap", cap)
                .setString("key", key)
                .setString("holder", holder)) {
            return q.update();
        }
    }

    // ---------------------------------------------------------------- rate limits

    /**
     * One GCRA decision of limiter {@code limiter} for {@code key} (see {@code rate_acquire} in coord.sql),
     * counting the request if allowed. A racing first request for the key makes it deny, with a retry after
     * one emission interval.
     */
    public RateDecision acquireRate(
            Connection c, String limiter, String key, long emissionUs, long windowUs, long timeoutMs)
            throws SQLException {
        try (SqlCall q = sql.prepareBounded(c, "rate_acquire", timeoutMs)
                .setString("limiter", limiter)
                .setString("key", key)
                .setLong("emission_us", emissionUs)
                .setLong("window_us", windowUs)) {
            ResultSet rs = q.query();
            if (!rs.next()) {
                // A racing first request inserted the key after our snapshot: deny briefly, retry soon.
                return new RateDecision(false, Duration.ofNanos(emissionUs * 1000), false);
            }
            boolean allowed = rs.getBoolean(1);
            return new RateDecision(allowed, allowed ? Duration.ZERO : Duration.ofNanos(rs.getLong(2) * 1000), false);
        }
    }

    // ---------------------------------------------------------------- revocations and grants

    /** The subject's current revocation epoch in {@code scope} (0 when never revoked). */
    public long epoch(Connection c, String scope, String subject) throws SQLException {
        return epochBy(c, "epoch", scope, subject);
    }

    /** Bumps the subject's revocation epoch in {@code scope} and returns the new one. */
    public long revokeAll(Connection c, String scope, String subject) throws SQLException {
        return epochBy(c, "revoke_all", scope, subject);
    }

    private long epochBy(Connection c, String statement, String scope, String subject) throws SQLException {
        try (SqlCall q = sql.prepare(c, statement).setString("scope", scope).setString("subject", subject)) {
            ResultSet rs = q.query();
            rs.next();
            return rs.getLong(1);
        }
    }

    /** The database clock ({@code clock_timestamp()}). */
    public Instant dbNow(Connection c) throws SQLException {
        try (SqlCall q = sql.prepare(c, "db_now")) {
            ResultSet rs = q.query();
            rs.next();
            return rs.getTimestamp(1).toInstant();
        }
    }

    /**
     * Records the redemption of grant {@code grantId} for {@code purpose}: true for the one caller, across
     * all instances, that records it while it has not expired on the database clock; false if it expired or
     * was redeemed before.
     */
    public boolean redeemGrant(
            Connection c, String purpose, String grantId, String subject, Instant expiresAt, String redeemedBy)
            throws SQLException {
        try (SqlCall q = sql.prepare(c, "redeem_grant")
                .setString("purpose", purpose)
                .setString("grant_id", grantId)
                .setString("subject", subject)
                .setInstant("expires_at", expiresAt)
                .setString("redeemed_by", redeemedBy)) {
            return q.query().next();
        }
    }

    // ---------------------------------------------------------------- purge

    /** The expired rows the maintenance leader purges, one statement each, in this order. */
    public enum Purge {
        DELIVERIES("purge_deliveries"),
        TOKENS("purge_tokens"),
        SLOTS("purge_slots"),
        RATES("purge_rates"),
        REDEMPTIONS("purge_redemptions");

        private final String statement;

        Purge(String statement) {
            this.statement = statement;
        }
    }

    /** Deletes up to {@code limit} expired rows of one kind; returns how many. */
    public int purge(Connection c, Purge what, int limit) throws SQLException {
        try (SqlCall q = sql.prepare(c, what.statement).setInt("limit", limit)) {
            return q.update();
        }
    }
}
