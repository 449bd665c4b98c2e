package dev.baton;

import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * Who owns what right now, as read from the database at {@code dbNow}: every lease held at that moment
 * with its current authorized owner, and the nodes classified (see {@link Nodes#ownership()}).
 */
public record OwnershipView(Instant dbNow, List<LeaseOwnership> leases, List<NodeStatus> nodes) {

    /** How a node relates to the leases right now. */
    public enum Role {
        /** Holds at least one unexpired lease: the database authorizes its protected writes. */
        CURRENT_OWNER,
        /** Registered, heartbeating, owns nothing. */
        ACTIVE,
        /** Shutting down gracefully, or drained by an operator ({@link Controls#drainNode}): owns nothing. */
        DRAINING,
        /** Its application version is retired by an operator ({@link Controls#retireVersion}): owns nothing. */
        RETIRED,
        /** Heartbeat overdue and never stopped: crashed, paused or partitioned. Owns nothing. */
        STALE,
        /** Stopped cleanly; kept for the record. */
        HISTORICAL
    }

    /**
     * A lease and its current authorized owner (empty when free, released or expired).
     *
     * @param ownerNodeKnown whether the owner id is a registered node
     */
    public record LeaseOwnership(LeaseInfo lease, Optional<String> authorizedOwner, boolean ownerNodeKnown) {}

    /**
     * A node, its role, the leases it currently owns, the attempts it runs, and the operator's control that
     * holds it (a drain of the node or a retirement of its version), if any.
     */
    public record NodeStatus(
            NodeInfo node, Role role, List<String> ownedLeases, long runningJobs, Optional<ControlRecord> heldBy) {}

    /** The status of one node, if registered. */
    public Optional<NodeStatus> node(String id) {
        return nodes.stream().filter(n -> n.node().id().equals(id)).findFirst();
    }

    /** The current authorized owner of a lease, if any. */
    public Optional<String> ownerOf(String lease) {
        return leases.stream()
                .filter(l -> l.lease().name().equals(lease))
                .findFirst()
                .flatMap(LeaseOwnership::authorizedOwner);
    }
}
