package dev.baton;

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
    private final DataSource dataSource;
    private final Sql sql;
    private final Leases leases;

    Nodes(DataSource dataSource, String schema, Leases leases) {
        this.dataSource = dataSource;
        this.sql = Sql.load("node.sql", Identifiers.schema(schema));
        this.leases = leases;
    }

    /** Every registered node, by id. */
    public List<NodeInfo> list() {
        try (Connection c = dataSource.getConnection();
             PreparedStatement ps = c.prepareStatement(sql.get("list"));
             ResultSet rs = ps.executeQuery()) {
            List<NodeInfo> out = new ArrayList<>();
            while (rs.next()) {
                long pid = rs.getLong("pid");
                Optional<Long> pidOpt = rs.wasNull() ? Optional.empty() : Optional.of(pid);
                out.add(new NodeInfo(rs.getString("id"), NodeState.fromDb(rs.getString("state")),
                        Leases.instant(rs, "started_at"), Leases.instant(rs, "heartbeat_at"),
                        Duration.ofMillis(rs.getLong("heartbeat_interval_ms")),
                        Optional.ofNullable(Leases.instantOrNull(rs, "stopped_at")), rs.getInt("protocol_version"),
                        Optional.ofNullable(rs.getString("host")), pidOpt, Leases.instant(rs, "db_now")));
            }
            return out;
        } catch (SQLException e) {
            throw new BatonException("listing nodes failed: " + e.getMessage(), e);
        }
    }

    /**
     * Every lease with its current authorized owner, and every node classified as current owner,
     * active, draining, stale (heartbeat overdue, never stopped) or historical (stopped).
     */
    public OwnershipView ownership() {
        List<LeaseInfo> all = leases.list();
        List<NodeInfo> nodes = list();
        Set<String> nodeIds = new HashSet<>();
        nodes.forEach(n -> nodeIds.add(n.id()));
        Map<String, List<String>> owned = new TreeMap<>();
        List<OwnershipView.LeaseOwnership> leaseViews = new ArrayList<>();
        for (LeaseInfo l : all) {
            Optional<String> owner = l.held() ? l.owner() : Optional.empty();
            owner.ifPresent(o -> owned.computeIfAbsent(o, k -> new ArrayList<>()).add(l.name()));
            leaseViews.add(new OwnershipView.LeaseOwnership(l, owner, owner.map(nodeIds::contains).orElse(false)));
        }
        List<OwnershipView.NodeStatus> statuses = new ArrayList<>();
        for (NodeInfo n : nodes) {
            List<String> mine = owned.getOrDefault(n.id(), List.of());
            statuses.add(new OwnershipView.NodeStatus(n, role(n, mine), List.copyOf(mine)));
        }
        Instant dbNow = !nodes.isEmpty() ? nodes.get(0).dbNow() : !all.isEmpty() ? all.get(0).dbNow() : dbNow();
        return new OwnershipView(dbNow, List.copyOf(leaseViews), List.copyOf(statuses));
    }

    private Instant dbNow() {
        try (Connection c = dataSource.getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT clock_timestamp()");
             ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getTimestamp(1).toInstant();
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
