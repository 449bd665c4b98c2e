package dev.baton.internal.node;

import dev.baton.NodeInfo;
import dev.baton.NodeState;
import dev.baton.internal.db.Identifiers;
import dev.baton.internal.db.Jdbc;
import dev.baton.internal.db.Sql;
import dev.baton.internal.db.SqlCall;
import dev.baton.internal.job.JobSettings;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * The statements on {@code node} ({@code sql/node.sql}), on the caller's connection; a positive
 * {@code timeoutMs} bounds a statement on the server too ({@link Sql#prepareBounded}).
 */
public final class NodeStore {
    /** What a node writes about itself when it registers and at every heartbeat. */
    public record Registration(
            String id, Duration heartbeatInterval, int protocolVersion, String host, long pid, String metaJson) {}

    /** Another live process registered under the same id. */
    public record Twin(String host, long pid, long heartbeatAgoMillis) {}

    private final Sql sql;

    public NodeStore(String schema) {
        this.sql = Sql.load("node.sql", Identifiers.schema(schema));
    }

    public void register(Connection c, Registration r) throws SQLException {
        try (SqlCall q = bind(sql.prepare(c, "register"), r)) {
            q.update();
        }
    }

    /**
     * What one heartbeat found: whether it was recorded (false if the node is recorded as stopped) and the
     * standing controls the node obeys.
     */
    public record Heartbeat(boolean recorded, ControlStore.ForNode controls) {}

    /**
     * Records a heartbeat (registering the node again if its row is gone) and reads the standing controls of
     * this node ({@code versionTarget}: its {@code app@version}), in one round trip.
     */
    public Heartbeat heartbeat(Connection c, Registration r, String versionTarget, long timeoutMs) throws SQLException {
        try (SqlCall q =
                bind(sql.prepareBounded(c, "heartbeat", timeoutMs), r).setString("version_target", versionTarget)) {
            ResultSet rs = q.query();
            boolean recorded = false;
            List<ControlStore.Standing> controls = new ArrayList<>();
            while (rs.next()) {
                if (rs.getString("kind").equals("beat")) {
                    recorded = true;
                } else {
                    controls.add(ControlStore.Standing.of(rs));
                }
            }
            return new Heartbeat(recorded, ControlStore.ForNode.of(controls));
        }
    }

    private static SqlCall bind(SqlCall q, Registration r) throws SQLException {
        return q.setString("id", r.id())
                .setLong("heartbeat_interval_ms", r.heartbeatInterval().toMillis())
                .setInt("protocol_version", r.protocolVersion())
                .setString("host", r.host())
                .setLong("pid", r.pid())
                .setString("meta", r.metaJson());
    }

    public void setState(Connection c, String id, NodeState state, long timeoutMs) throws SQLException {
        try (SqlCall q = sql.prepareBounded(c, "set_state", timeoutMs)
                .setString("state", dbValue(state))
                .setString("id", id)) {
            q.update();
        }
    }

    /** Another process that registered under {@code id}, still looks alive, and is not {@code instance}. */
    public Optional<Twin> liveTwin(Connection c, String id, String instance) throws SQLException {
        try (SqlCall q = sql.prepare(c, "live_twin").setString("id", id).setString("instance", instance)) {
            ResultSet rs = q.query();
            return rs.next()
                    ? Optional.of(new Twin(rs.getString("host"), rs.getLong("pid"), rs.getLong("ago_ms")))
                    : Optional.empty();
        }
    }

    /** Up to {@code limit} nodes in id order after {@code after} ({@code ""} for the first). */
    public List<NodeInfo> list(Connection c, String after, int limit) throws SQLException {
        try (SqlCall q = sql.prepare(c, "list").setString("after", after).setInt("limit", limit)) {
            return infos(q.query());
        }
    }

    public Optional<NodeInfo> get(Connection c, String id) throws SQLException {
        try (SqlCall q = sql.prepare(c, "get").setString("id", id)) {
            List<NodeInfo> rows = infos(q.query());
            return rows.isEmpty() ? Optional.empty() : Optional.of(rows.get(0));
        }
    }

    /** Every node not stopped, then the most recently stopped; {@code limit} at most. */
    public List<NodeInfo> recent(Connection c, int limit) throws SQLException {
        try (SqlCall q = sql.prepare(c, "recent").setInt("limit", limit)) {
            return infos(q.query());
        }
    }

    /** The job settings of the live workers, combined as maintenance applies them; empty with no worker live. */
    public Optional<JobSettings> jobSettings(Connection c) throws SQLException {
        try (SqlCall q = sql.prepare(c, "job_settings")) {
            ResultSet rs = q.query();
            rs.next();
            if (rs.getLong("workers") == 0) {
                return Optional.empty();
            }
            return Optional.of(new JobSettings(
                    Duration.ofMillis(rs.getLong("retention_ms")),
                    rs.getInt("max_stalls"),
                    Duration.ofMillis(rs.getLong("unhandled_kind_timeout_ms"))));
        }
    }

    /** Deletes up to {@code limit} nodes silent (or stopped) for longer than {@code retention}; returns how many. */
    public int prune(Connection c, Duration retention, int limit) throws SQLException {
        try (SqlCall q = sql.prepare(c, "prune")
                .setLong("retention_ms", retention.toMillis())
                .setInt("limit", limit)) {
            return q.update();
        }
    }

    public Instant dbNow(Connection c) throws SQLException {
        try (SqlCall q = sql.prepare(c, "db_now")) {
            ResultSet rs = q.query();
            rs.next();
            return Jdbc.instant(rs, "db_now");
        }
    }

    private static List<NodeInfo> infos(ResultSet rs) throws SQLException {
        List<NodeInfo> out = new ArrayList<>();
        while (rs.next()) {
            long pid = rs.getLong("pid");
            Optional<Long> pidOpt = rs.wasNull() ? Optional.empty() : Optional.of(pid);
            out.add(new NodeInfo(
                    rs.getString("id"),
                    NodeState.valueOf(rs.getString("state").toUpperCase(Locale.ROOT)),
                    Jdbc.instant(rs, "started_at"),
                    Jdbc.instant(rs, "heartbeat_at"),
                    Duration.ofMillis(rs.getLong("heartbeat_interval_ms")),
                    Optional.ofNullable(Jdbc.instantOrNull(rs, "stopped_at")),
                    rs.getInt("protocol_version"),
                    Optional.ofNullable(rs.getString("host")),
                    pidOpt,
                    Optional.ofNullable(rs.getString("app")),
                    Optional.ofNullable(rs.getString("app_version")),
                    Jdbc.instant(rs, "db_now")));
        }
        return out;
    }

    /** The state as the node table spells it. */
    private static String dbValue(NodeState state) {
        return state.name().toLowerCase(Locale.ROOT);
    }
}
