package dev.baton.internal.lease;

import dev.baton.LeaseGrant;
import dev.baton.LeaseHistoryEntry;
import dev.baton.LeaseInfo;
import dev.baton.LeaseLostException;
import dev.baton.internal.db.Identifiers;
import dev.baton.internal.db.Jdbc;
import dev.baton.internal.db.Sql;
import dev.baton.internal.db.SqlCall;
import dev.baton.internal.service.Hooks;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.LongSupplier;

/**
 * The statements on {@code lease} and {@code lease_history} ({@code sql/lease.sql}). Every method runs on
 * the caller's connection, in the caller's transaction if one is open; a positive {@code timeoutMs} bounds
 * the statement on the server too ({@link Sql#prepareBounded}), for Baton's own transactions only.
 * Validation of names and TTLs is the facade's; this class only talks to the database.
 */
public final class LeaseStore {
    private final Sql sql;
    private final String channel;
    private final Hooks hooks;
    private final LongSupplier ticker;

    public LeaseStore(String schema, Hooks hooks, LongSupplier ticker) {
        this.sql = Sql.load("lease.sql", Identifiers.schema(schema));
        this.channel = channel(schema);
        this.hooks = hooks;
        this.ticker = ticker;
    }

    /** The notification channel on which releases of the schema's leases are announced. */
    public static String channel(String schema) {
        return Identifiers.channel(schema, "lease");
    }

    public String channel() {
        return channel;
    }

    /**
     * The result of one acquisition attempt: the grant if it was taken, else the holder (if any) and how
     * long its grant has left on the database clock.
     */
    public record Attempt(Optional<LeaseGrant> grant, Optional<String> holder, long expiresInNanos) {}

    /** One acquisition attempt (see {@code acquire} in lease.sql). */
    public Attempt acquire(
            Connection c, String name, String owner, Duration ttl, String ownerMeta, String acquisition, long timeoutMs)
            throws SQLException {
        long sent = ticker.getAsLong();
        try (SqlCall q = sql.prepareBounded(c, "acquire", timeoutMs)
                .setString("name", name)
                .setString("owner_id", owner)
                .setLong("ttl_ms", ttl.toMillis())
                .setString("owner_meta", ownerMeta)
                .setString("acquisition", acquisition)) {
            ResultSet rs = q.query();
            if (!rs.next()) {
                // Someone else inserted the row after our snapshot; try again soon.
                return new Attempt(Optional.empty(), Optional.empty(), 0);
            }
            Instant expiresAt = Jdbc.instant(rs, "expires_at");
            Instant dbNow = Jdbc.instant(rs, "db_now");
            if (rs.getBoolean("acquired")) {
                LeaseGrant grant = new LeaseGrant(
                        name, owner, rs.getLong("generation"), Jdbc.instant(rs, "acquired_at"), expiresAt, ttl, sent);
                closeEarlierHistory(c, grant);
                return new Attempt(Optional.of(grant), Optional.of(owner), ttl.toNanos());
            }
            long expiresIn = Math.max(0, Duration.between(dbNow, expiresAt).toNanos());
            return new Attempt(Optional.empty(), Optional.ofNullable(rs.getString("owner_id")), expiresIn);
        }
    }

    /**
     * Closes history rows of generations before {@code grant}'s that are still open. The acquire
     * statement closes them too, but on its own snapshot: when two acquisitions queue for the row,
     * the later one cannot see the history row the earlier one inserted. Runs only on acquisition.
     */
    private void closeEarlierHistory(Connection c, LeaseGrant grant) throws SQLException {
        if (grant.generation() <= 1) {
            return;
        }
        try (SqlCall q = sql.prepare(c, "close_history")
                .setString("name", grant.name())
                .setLong("generation", grant.generation())) {
            q.update();
        }
    }

    /**
     * Extends the grant's lease by {@code ttl} from now on the database clock.
     *
     * @throws LeaseLostException if the grant is no longer current
     */
    public LeaseGrant renew(Connection c, LeaseGrant grant, Duration ttl, long timeoutMs) throws SQLException {
        long sent = ticker.getAsLong();
        try (SqlCall q = sql.prepareBounded(c, "renew", timeoutMs)
                .setLong("ttl_ms", ttl.toMillis())
                .setString("name", grant.name())
                .setString("owner_id", grant.owner())
                .setLong("generation", grant.generation())) {
            ResultSet rs = q.query();
            hooks.reach(Hooks.Points.RENEW_ANSWERED);
            if (!rs.next()) {
                throw new LeaseLostException(
                        grant, "cannot renew " + grant + ": the lease expired, was released or was taken over");
            }
            // The database extended the lease no earlier than the send time: the holder's local
            // deadline counts from there, never from when the answer arrived.
            return new LeaseGrant(
                    grant.name(),
                    grant.owner(),
                    grant.generation(),
                    grant.acquiredAt(),
                    Jdbc.instant(rs, "expires_at"),
                    ttl,
                    sent);
        }
    }

    /** Releases the lease if {@code grant} is its latest generation, and notifies waiting candidates. */
    public boolean release(Connection c, LeaseGrant grant, long timeoutMs) throws SQLException {
        try (SqlCall q = sql.prepareBounded(c, "release", timeoutMs)
                .setString("name", grant.name())
                .setString("owner_id", grant.owner())
                .setLong("generation", grant.generation())
                .setString("channel", channel)) {
            return q.query().next();
        }
    }

    /**
     * The fence, inside the caller's open transaction: true if {@code grant} is current and unexpired, and
     * then its lease row stays locked ({@code FOR SHARE}) until the transaction ends.
     */
    public boolean fence(Connection transaction, LeaseGrant grant) throws SQLException {
        try (SqlCall q = sql.prepare(transaction, "fence")
                .setString("name", grant.name())
                .setString("owner_id", grant.owner())
                .setLong("generation", grant.generation())) {
            return q.query().next();
        }
    }

    public Optional<LeaseInfo> inspect(Connection c, String name) throws SQLException {
        try (SqlCall q = sql.prepare(c, "inspect").setString("name", name)) {
            ResultSet rs = q.query();
            return rs.next() ? Optional.of(info(rs)) : Optional.empty();
        }
    }

    /** Up to {@code limit} leases in name order after {@code after} ({@code ""} for the first). */
    public List<LeaseInfo> list(Connection c, String after, int limit) throws SQLException {
        try (SqlCall q = sql.prepare(c, "list").setString("after", after).setInt("limit", limit)) {
            return infos(q.query());
        }
    }

    /** The leases held right now (unexpired, with an owner), by name; at most {@code limit}. */
    public List<LeaseInfo> held(Connection c, int limit) throws SQLException {
        try (SqlCall q = sql.prepare(c, "held").setInt("limit", limit)) {
            return infos(q.query());
        }
    }

    /** Deletes up to {@code limit} lease rows idle longer than {@code retention} (see lease.sql); returns how many. */
    public int pruneIdle(Connection c, Duration retention, int limit) throws SQLException {
        return delete(c, "prune", retention, limit);
    }

    /**
     * Deletes up to {@code limit} history rows of terms that ended longer than {@code retention} ago, and up
     * to {@code limit} that were never closed and whose lease row is gone.
     */
    public int pruneHistory(Connection c, Duration retention, int limit) throws SQLException {
        int ended = delete(c, "prune_history", retention, limit);
        return ended + delete(c, "prune_open_history", retention, limit);
    }

    private int delete(Connection c, String statement, Duration retention, int limit) throws SQLException {
        try (SqlCall q = sql.prepare(c, statement)
                .setLong("retention_ms", retention.toMillis())
                .setInt("limit", limit)) {
            return q.update();
        }
    }

    /** The latest {@code limit} generations of a lease, newest first. */
    public List<LeaseHistoryEntry> history(Connection c, String name, int limit) throws SQLException {
        try (SqlCall q = sql.prepare(c, "history").setString("name", name).setInt("limit", limit)) {
            ResultSet rs = q.query();
            List<LeaseHistoryEntry> out = new ArrayList<>();
            while (rs.next()) {
                out.add(new LeaseHistoryEntry(
                        rs.getString("name"),
                        rs.getLong("generation"),
                        rs.getString("owner_id"),
                        Jdbc.instant(rs, "acquired_at"),
                        Optional.ofNullable(Jdbc.instantOrNull(rs, "ended_at")),
                        Optional.ofNullable(rs.getString("end_reason"))));
            }
            return out;
        }
    }

    private static List<LeaseInfo> infos(ResultSet rs) throws SQLException {
        List<LeaseInfo> out = new ArrayList<>();
        while (rs.next()) {
            out.add(info(rs));
        }
        return out;
    }

    private static LeaseInfo info(ResultSet rs) throws SQLException {
        return new LeaseInfo(
                rs.getString("name"),
                Optional.ofNullable(rs.getString("owner_id")),
                rs.getLong("generation"),
                Jdbc.instant(rs, "acquired_at"),
                Jdbc.instant(rs, "renewed_at"),
                Jdbc.instant(rs, "expires_at"),
                Optional.ofNullable(rs.getString("owner_meta")),
                Jdbc.instant(rs, "db_now"));
    }
}
