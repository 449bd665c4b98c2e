package dev.baton;

import dev.baton.internal.db.Db;
import dev.baton.internal.db.Identifiers;
import dev.baton.internal.job.JobStore;
import dev.baton.internal.node.ControlStore;
import dev.baton.internal.node.NodeStore;
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
    private final NodeStore store;
    private final Leases leases;
    private final ControlStore controls;
    private final JobStore jobs;

    Nodes(DataSource dataSource, String schema, Leases leases) {
        this.db = Db.of(dataSource);
        this.store = new NodeStore(schema);
        this.leases = leases;
        this.controls = new ControlStore(schema, null);
        this.jobs = new JobStore(schema);
    }

    /** The statements behind this facade, for maintenance. */
    NodeStore store() {
        return store;
    }

    /**
     * One page of registered nodes in id order, starting after {@code after} ({@code null} or empty for
     * the first page). Nodes gone for longer than the retention are pruned by the maintenance leader.
     *
     * @param limit 1 to {@link Page#MAX_LIMIT}
     */
    public Page<NodeInfo> list(String after, int limit) {
        Page.requireLimit(limit);
        List<NodeInfo> rows =
                db.callUnchecked("listing nodes", c -> store.list(c, after == null ? "" : after, limit + 1));
        return Page.of(rows, limit, NodeInfo::id);
    }

    /** The node registered under {@code id}, if any. */
    public Optional<NodeInfo> get(String id) {
        Identifiers.name("node id", id);
        return db.callUnchecked("reading node '" + id + "'", c -> store.get(c, id));
    }

    /**
     * Every lease held right now with its current authorized owner, and the nodes classified as current
     * owner, active, draining, stale (heartbeat overdue, never stopped) or historical (stopped): every
     * node that has not stopped, then the most recently stopped, {@value #VIEW_LIMIT} nodes at most.
     */
    public OwnershipView ownership() {
        List<LeaseInfo> held = leases.held(VIEW_LIMIT);
        List<NodeInfo> nodes = db.callUnchecked("listing nodes", c -> store.recent(c, VIEW_LIMIT));
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
        List<ControlRecord> standing = db.callUnchecked("reading the standing controls", controls::standing);
        Map<String, Long> running = db.callUnchecked("counting running jobs per node", jobs::runningByNode);
        List<NodeInfo> sorted = new ArrayList<>(nodes);
        sorted.sort(java.util.Comparator.comparing(NodeInfo::id));
        List<OwnershipView.NodeStatus> statuses = new ArrayList<>();
        for (NodeInfo n : sorted) {
            List<String> mine = owned.getOrDefault(n.id(), List.of());
            Optional<ControlRecord> heldBy = heldBy(n, standing);
            statuses.add(new OwnershipView.NodeStatus(
                    n, role(n, mine, heldBy), List.copyOf(mine), running.getOrDefault(n.id(), 0L), heldBy));
        }
        Instant dbNow = !nodes.isEmpty()
                ? nodes.get(0).dbNow()
                : !held.isEmpty() ? held.get(0).dbNow() : db.callUnchecked("reading the database clock", store::dbNow);
        return new OwnershipView(dbNow, List.copyOf(leaseViews), List.copyOf(statuses));
    }

    /** The standing control that holds node {@code n}: a retirement of its version first, then a drain of it. */
    private static Optional<ControlRecord> heldBy(NodeInfo n, List<ControlRecord> standing) {
        String version = n.application().isPresent() && n.version().isPresent()
                ? ControlStore.versionTarget(n.application().get(), n.version().get())
                : null;
        Optional<ControlRecord> retired = standing.stream()
                .filter(r ->
                        r.action() == ControlAction.RETIRE_VERSION && r.target().equals(version))
                .findFirst();
        return retired.isPresent()
                ? retired
                : standing.stream()
                        .filter(r -> r.action() == ControlAction.DRAIN_NODE
                                && r.target().equals(n.id()))
                        .findFirst();
    }

    private static OwnershipView.Role role(NodeInfo n, List<String> owned, Optional<ControlRecord> heldBy) {
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
        if (heldBy.isPresent()) {
            return heldBy.get().action() == ControlAction.RETIRE_VERSION
                    ? OwnershipView.Role.RETIRED
                    : OwnershipView.Role.DRAINING;
        }
        return n.state() == NodeState.DRAINING ? OwnershipView.Role.DRAINING : OwnershipView.Role.ACTIVE;
    }
}
