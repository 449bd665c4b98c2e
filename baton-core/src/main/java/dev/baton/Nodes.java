package dev.baton;

import dev.baton.internal.db.Db;
import dev.baton.internal.db.Identifiers;
import dev.baton.internal.db.Jdbc;
import dev.baton.internal.db.Sql;
import dev.baton.internal.job.JobSettings;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import javax.sql.DataSource;

/** The node registry: which Baton instances exist, and who owns which lease right now. Thread-safe. */
public final class Nodes {
    /** An ownership view shows at most this many nodes and this many held leases. */
    static final int VIEW_LIMIT = 1000;

    private final Db db;
    private final Sql sql;
    private final Leases leases;

    Nodes(DataSource dataSource, String schema, Leases leases) {
        this.db = Db.of(dataSource);
        this.sql = Sql.load("node.sql", Identifiers.schema(schema));
        this.leases = leases;
    }

    /**
     * One page of registered nodes in id order, starting after {@code after} ({@code null} or empty for
     * the first page). Nodes gone for longer than the retention are pruned by the maintenance leader.
     *
     * @param limit 1 to {@link Page#MAX_LIMIT}
     */
    public Page<NodeInfo> list(String after, int limit) {
        Page.requireLimit(limit);
        List<NodeInfo> rows = query("list", after == null ? "" : after, limit + 1);
        return Page.of(rows, limit, NodeInfo::id);
    }

    /** The node registered under {@code id}, if any. */
    public Optional<NodeInfo> get(String id) {
        Identifiers.name("node id", id);
        List<NodeInfo> rows = query("get", id, -1);
        return rows.isEmpty() ? Optional.empty() : Optional.of(rows.get(0));
    }

    /** The job settings of the live workers, combined as {@link Maintenance} applies them; empty with no worker live. */
    Optional<JobSettings> jobSettings(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.get("job_settings"));
                ResultSet rs = ps.executeQuery()) {
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

    /**
     * Every lease held right now with its current authorized owner, and the nodes classified as current
     * owner, active, draining, stale (heartbeat overdue, never stopped) or historical (stopped): every
     * node that has not stopped, then the most recently stopped, {@value #VIEW_LIMIT} nodes at most.
     */
    public OwnershipView ownership() {
        List<LeaseInfo> held = leases.held(VIEW_LIMIT);
        List<NodeInfo> nodes = query("recent", null, VIEW_LIMIT);
        Set<String> nodeIds = new HashSet<>();
        nodes.forEach(n -> nodeIds.add(n.id()));
        Map<String, List<String>> owned = new TreeMap<>();
        List<OwnershipView.LeaseOwnership> leaseViews = new ArrayList<>();
        for (LeaseInfo l : held) {
            Optional<String> owner = l.held() ? l.owner() : Optional.empty();
            owner.ifPresent(
                    o -> owned.computeIfAbsent(o, k -> new ArrayList<>()).add(l.name()));
            leaseViews.add(new OwnershipView.LeaseOwnership(
                    l, owner, owner.map(nodeIds::contains).orElse(false)));
        }
        List<NodeInfo> sorted = new ArrayList<>(nodes);
        sorted.sort(java.util.Comparator.comparing(NodeInfo::id));
        List<OwnershipView.NodeStatus> statuses = new ArrayList<>();
        for (NodeInfo n : sorted) {
            List<String> mine = owned.getOrDefault(n.id(), List.of());
            statuses.add(new OwnershipView.NodeStatus(n, role(n, mine), List.copyOf(mine)));
        }
        Instant dbNow = !nodes.isEmpty()
                ? nodes.get(0).dbNow()
                : !held.isEmpty() ? held.get(0).dbNow() : dbNow();
        return new OwnershipView(dbNow, List.copyOf(leaseViews), List.copyOf(statuses));
    }

    private List<NodeInfo> query(String statement, String after, int limit) {
        try {
            return db.call("listing nodes", c -> {
                try (PreparedStatement ps = c.prepareStatement(sql.get(statement))) {
                    int i = 1;
                    if (after != null) {
                        ps.setString(i++, after);
                    }
                    if (limit >= 0) {
                        ps.setInt(i, limit);
                    }
                    List<NodeInfo> out = new ArrayList<>();
                    try (ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            long pid = rs.getLong("pid");
                            Optional<Long> pidOpt = rs.wasNull() ? Optional.empty() : Optional.of(pid);
                            out.add(new NodeInfo(
                                    rs.getString("id"),
                                    NodeState.fromDb(rs.getString("state")),
                                    Jdbc.instant(rs, "started_at"),
                                    Jdbc.instant(rs, "heartbeat_at"),
                                    Duration.ofMillis(rs.getLong("heartbeat_interval_ms")),
                                    Optional.ofNullable(Jdbc.instantOrNull(rs, "stopped_at")),
                                    rs.getInt("protocol_version"),
                                    Optional.ofNullable(rs.getString("host")),
                                    pidOpt,
                                    Jdbc.instant(rs, "db_now")));
                        }
                    }
                    return out;
                }
            });
        } catch (SQLException e) {
            throw new BatonException("listing nodes failed: " + e.getMessage(), e);
        }
    }

    /** Deletes up to {@code limit} nodes silent (or stopped) for longer than {@code retention}; returns how many. */
    int prune(java.sql.Connection c, Duration retention, int limit) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.get("prune"))) {
            ps.setLong(1, retention.toMillis());
            ps.setInt(2, limit);
            return ps.executeUpdate();
        }
    }

    private Instant dbNow() {
        try {
            return db.call("reading the database clock", c -> {
                try (PreparedStatement ps = c.prepareStatement("SELECT clock_timestamp()");
                        ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    return rs.getTimestamp(1).toInstant();
                }
            });
        } catch (SQLException e) {
            throw new BatonException("reading the database clock failed: " + e.getMessage(), e);
        }
    }

    private static OwnershipView.Role role(NodeInfo n, List<String> owned) {
        if (!owned.isEmpty()) {
            // The lease, not the heartbeat, is the authority: a node with an unexpired lease is its
            // authorized owner even while its heartbeat is late.
            return OwnershipView.Role.CURRENT_OWNER;
        }
        if (n.state() == NodeState.STOPPED) {
            return OwnershipView.Role.HISTORICAL;
        }
        if (n.stale()) {
            return OwnershipView.Role.STALE;
        }
        return n.state() == NodeState.DRAINING ? OwnershipView.Role.DRAINING : OwnershipView.Role.ACTIVE;
    }
}
