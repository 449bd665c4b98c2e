package dev.baton.internal.node;

import dev.baton.ControlAction;
import dev.baton.ControlRecord;
import dev.baton.internal.db.Identifiers;
import dev.baton.internal.db.Jdbc;
import dev.baton.internal.db.Sql;
import dev.baton.internal.db.SqlCall;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/** The statements on {@code control} ({@code sql/control.sql}): operators' controls and their record. */
public final class ControlStore {
    /**
     * What the standing controls ask of one node: to be drained (by a drain of the node or a retirement of
     * its version; {@code drainedBy} says which control), and which job kinds not to claim.
     */
    public record ForNode(Optional<ControlRecord> drainedBy, Set<String> disabledKinds) {
        public static final ForNode NONE = new ForNode(Optional.empty(), Set.of());

        public boolean drained() {
            return drainedBy.isPresent();
        }

        /** What {@code controls} (those of one node, as for_node reads them) ask: a retirement wins over a drain. */
        static ForNode of(List<Standing> controls) {
            ControlRecord drain = null;
            Set<String> disabled = new TreeSet<>();
            for (Standing s : controls) {
                if (s.action() == ControlAction.DISABLE_KIND) {
                    disabled.add(s.target());
                } else if (drain == null || s.action() == ControlAction.RETIRE_VERSION) {
                    drain = new ControlRecord(
                            0,
                            s.action(),
                            s.target(),
                            true,
                            Optional.ofNullable(s.reason()),
                            Optional.empty(),
                            s.createdBy(),
                            s.createdAt(),
                            Optional.empty(),
                            Optional.empty());
                }
            }
            return drain == null && disabled.isEmpty()
                    ? NONE
                    : new ForNode(Optional.ofNullable(drain), Collections.unmodifiableSet(disabled));
        }
    }

    /** A standing control as a node reads it (columns action, target, reason, created_by, created_at). */
    record Standing(ControlAction action, String target, String reason, String createdBy, Instant createdAt) {
        static Standing of(ResultSet rs) throws SQLException {
            return new Standing(
                    ControlStore.action(rs.getString("action")),
                    rs.getString("target"),
                    rs.getString("reason"),
                    rs.getString("created_by"),
                    Jdbc.instant(rs, "created_at"));
        }
    }

    private final Sql sql;
    private final String channel;

    /** @param leaseChannel the lease release channel, told when an operator expires a lease */
    public ControlStore(String schema, String leaseChannel) {
        this.sql = Sql.load("control.sql", Identifiers.schema(schema));
        this.channel = leaseChannel;
    }

    /** The target a retirement of {@code app} version {@code version} is recorded under. */
    public static String versionTarget(String app, String version) {
        return app + "@" + version;
    }

    /** Issues a standing control; empty if the same control is already in force (see {@link #findStanding}). */
    public Optional<ControlRecord> issue(Connection c, ControlAction action, String target, String reason, String actor)
            throws SQLException {
        try (SqlCall q = sql.prepare(c, "issue")
                .setString("action", dbValue(action))
                .setString("target", target)
                .setString("reason", reason)
                .setString("actor", actor)) {
            return one(q.query());
        }
    }

    public Optional<ControlRecord> findStanding(Connection c, ControlAction action, String target) throws SQLException {
        try (SqlCall q = sql.prepare(c, "find_standing")
                .setString("action", dbValue(action))
                .setString("target", target)) {
            return one(q.query());
        }
    }

    /** Lifts a standing control; empty if none was in force. */
    public Optional<ControlRecord> lift(Connection c, ControlAction action, String target, String actor)
            throws SQLException {
        try (SqlCall q = sql.prepare(c, "lift")
                .setString("action", dbValue(action))
                .setString("target", target)
                .setString("actor", actor)) {
            return one(q.query());
        }
    }

    /** Records a one-shot action as done. */
    public ControlRecord record(
            Connection c, ControlAction action, String target, String reason, String detail, String actor)
            throws SQLException {
        try (SqlCall q = sql.prepare(c, "record")
                .setString("action", dbValue(action))
                .setString("target", target)
                .setString("reason", reason)
                .setString("detail", detail)
                .setString("actor", actor)) {
            return one(q.query()).orElseThrow();
        }
    }

    /** The standing controls node {@code nodeId} of {@code versionTarget} obeys. */
    public ForNode forNode(Connection c, String nodeId, String versionTarget) throws SQLException {
        List<Standing> rows = new ArrayList<>();
        try (SqlCall q =
                sql.prepare(c, "for_node").setString("node_id", nodeId).setString("version_target", versionTarget)) {
            ResultSet rs = q.query();
            while (rs.next()) {
                rows.add(Standing.of(rs));
            }
        }
        return ForNode.of(rows);
    }

    public List<ControlRecord> standing(Connection c) throws SQLException {
        try (SqlCall q = sql.prepare(c, "standing")) {
            return all(q.query());
        }
    }

    /** Up to {@code limit} records with an id below {@code before}, newest first. */
    public List<ControlRecord> audit(Connection c, long before, int limit) throws SQLException {
        try (SqlCall q = sql.prepare(c, "audit").setLong("before", before).setInt("limit", limit)) {
            return all(q.query());
        }
    }

    /** Deletes up to {@code limit} records of controls that ended longer than {@code retention} ago. */
    public int prune(Connection c, Duration retention, int limit) throws SQLException {
        try (SqlCall q = sql.prepare(c, "prune")
                .setLong("retention_ms", retention.toMillis())
                .setInt("limit", limit)) {
            return q.update();
        }
    }

    /** The term a lease expiry ended: its holder and generation. */
    public record ExpiredTerm(String owner, long generation) {}

    /** Ends lease {@code name}'s term {@code generation} now; empty if that term is no longer current. */
    public Optional<ExpiredTerm> expireLease(Connection c, String name, long generation) throws SQLException {
        try (SqlCall q = sql.prepare(c, "expire_lease")
                .setString("name", name)
                .setLong("generation", generation)
                .setString("channel", channel)) {
            ResultSet rs = q.query();
            return rs.next()
                    ? Optional.of(new ExpiredTerm(rs.getString("owner_id"), rs.getLong("generation")))
                    : Optional.empty();
        }
    }

    private static Optional<ControlRecord> one(ResultSet rs) throws SQLException {
        return rs.next() ? Optional.of(row(rs)) : Optional.empty();
    }

    private static List<ControlRecord> all(ResultSet rs) throws SQLException {
        List<ControlRecord> out = new ArrayList<>();
        while (rs.next()) {
            out.add(row(rs));
        }
        return out;
    }

    private static ControlRecord row(ResultSet rs) throws SQLException {
        return new ControlRecord(
                rs.getLong("id"),
                action(rs.getString("action")),
                rs.getString("target"),
                rs.getBoolean("active"),
                Optional.ofNullable(rs.getString("reason")),
                Optional.ofNullable(rs.getString("detail")),
                rs.getString("created_by"),
                Jdbc.instant(rs, "created_at"),
                Optional.ofNullable(rs.getString("lifted_by")),
                Optional.ofNullable(Jdbc.instantOrNull(rs, "lifted_at")));
    }

    static String dbValue(ControlAction a) {
        return a.name().toLowerCase(Locale.ROOT);
    }

    static ControlAction action(String dbValue) {
        return ControlAction.valueOf(dbValue.toUpperCase(Locale.ROOT));
    }
}
