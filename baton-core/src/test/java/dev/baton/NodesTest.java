package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.baton.internal.maintenance.MaintenanceTask;
import dev.baton.internal.node.NodeRegistrar;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/**
 * The node registry and the ownership view: active, draining, stopped, stale, current owner.
 *
 * <p>Checked to fail when the stale classification is removed ({@code Nodes.role}: the {@code n.stale()}
 * branch disabled): the stale-node tests then saw ACTIVE.
 */
class NodesTest extends LeadershipDbTest {
    /**
     * Every started node takes part in maintenance under its own lease; the test holds that lease, so the
     * roles below are those of the application's leases alone.
     */
    @org.junit.jupiter.api.BeforeEach
    void holdMaintenance() {
        leases.tryAcquire(MaintenanceTask.LEASE, "test-holds-maintenance", Duration.ofMinutes(10))
                .orElseThrow();
    }

    private static final String NAME = "nodes-lease";

    private NodeInfo info(Baton observer, String id) {
        return observer.nodes().list(null, 100).items().stream()
                .filter(n -> n.id().equals(id))
                .findFirst()
                .orElseThrow(() -> new AssertionError("node " + id + " not registered"));
    }

    private OwnershipView.Role role(Baton observer, String id) {
        return observer.nodes().ownership().node(id).orElseThrow().role();
    }

    private void backdateHeartbeat(String id) throws Exception {
        try (Connection c = pool.getConnection();
                PreparedStatement ps = c.prepareStatement("UPDATE " + schema
                        + ".node SET heartbeat_at = clock_timestamp() - interval '1 hour' WHERE id = ?")) {
            ps.setString(1, id);
            assertThat(ps.executeUpdate()).isEqualTo(1);
        }
    }

    @Test
    void registeredNodeIsActiveAndItsHeartbeatAdvances() {
        Baton n = start(nodeBuilder("n-active", nodePool("n-active")));
        NodeInfo first = info(n, "n-active");
        assertThat(first.state()).isEqualTo(NodeState.ACTIVE);
        assertThat(first.heartbeatInterval()).isEqualTo(Duration.ofMillis(200));
        assertThat(first.protocolVersion()).isEqualTo(NodeRegistrar.PROTOCOL_VERSION);
        assertThat(first.pid()).contains(ProcessHandle.current().pid());
        assertThat(first.host()).isPresent();
        assertThat(first.stoppedAt()).isEmpty();
        assertThat(first.stale()).isFalse();
        Instant firstBeat = first.heartbeatAt();
        await().atMost(WAIT)
                .pollInterval(Duration.ofMillis(20))
                .until(() -> info(n, "n-active").heartbeatAt().isAfter(firstBeat));
        await().atMost(WAIT)
                .pollInterval(Duration.ofMillis(20))
                .until(() -> info(n, "n-active").heartbeatAt().isAfter(firstBeat.plusMillis(400)));
        assertThat(role(n, "n-active")).isEqualTo(OwnershipView.Role.ACTIVE);
    }

    @Test
    void drainingThenClosedNodeBecomesHistorical() {
        Baton observer = start(nodeBuilder("n-observer", nodePool("n-observer")));
        Baton n = start(nodeBuilder("n-drain", nodePool("n-drain")));
        n.drain();
        assertThat(info(observer, "n-drain").state()).isEqualTo(NodeState.DRAINING);
        assertThat(role(observer, "n-drain")).isEqualTo(OwnershipView.Role.DRAINING);
        n.close();
        NodeInfo closed = info(observer, "n-drain");
        assertThat(closed.state()).isEqualTo(NodeState.STOPPED);
        assertThat(closed.stoppedAt()).isPresent();
        assertThat(closed.stale()).isFalse();
        assertThat(role(observer, "n-drain")).isEqualTo(OwnershipView.Role.HISTORICAL);
    }

    @Test
    void nodeThatStopsBeatingWithoutClosingIsStale() throws Exception {
        Baton observer = start(nodeBuilder("n-observer", nodePool("n-observer")));
        // Beats once a minute (first beat 48..72 s after start), so nothing refreshes the backdated beat.
        start(nodeBuilder("n-stale", nodePool("n-stale")).nodeHeartbeat(Duration.ofMinutes(1)));
        assertThat(role(observer, "n-stale")).isEqualTo(OwnershipView.Role.ACTIVE);
        backdateHeartbeat("n-stale");
        NodeInfo stale = info(observer, "n-stale");
        assertThat(stale.state()).isEqualTo(NodeState.ACTIVE);
        assertThat(stale.stale()).isTrue();
        assertThat(role(observer, "n-stale")).isEqualTo(OwnershipView.Role.STALE);
        assertThat(role(observer, "n-observer")).isEqualTo(OwnershipView.Role.ACTIVE);
    }

    @Test
    void nodeHoldingAnUnexpiredLeaseIsCurrentOwnerEvenWithALateHeartbeat() throws Exception {
        Baton observer = start(nodeBuilder("n-observer", nodePool("n-observer")));
        Baton owner = start(nodeBuilder("n-owner", nodePool("n-owner")).nodeHeartbeat(Duration.ofMinutes(1)));
        Recorder r = new Recorder();
        Leadership runner =
                owner.leadership(NAME, fastLeadership(), idleTask(), r).start();
        r.awaitElected();

        OwnershipView view = observer.nodes().ownership();
        assertThat(view.ownerOf(NAME)).contains("n-owner");
        OwnershipView.NodeStatus status = view.node("n-owner").orElseThrow();
        assertThat(status.role()).isEqualTo(OwnershipView.Role.CURRENT_OWNER);
        assertThat(status.ownedLeases()).containsExactly(NAME);
        assertThat(view.leases())
                .filteredOn(l -> l.lease().name().equals(NAME))
                .singleElement()
                .satisfies(l -> assertThat(l.ownerNodeKnown()).isTrue());
        assertThat(view.node("n-observer").orElseThrow().role()).isEqualTo(OwnershipView.Role.ACTIVE);

        // The lease, not the heartbeat, is the authority.
        backdateHeartbeat("n-owner");
        assertThat(info(observer, "n-owner").stale()).isTrue();
        assertThat(role(observer, "n-owner")).isEqualTo(OwnershipView.Role.CURRENT_OWNER);

        runner.stop();
        OwnershipView after = observer.nodes().ownership();
        assertThat(after.ownerOf(NAME)).isEmpty();
        assertThat(after.node("n-owner").orElseThrow().role()).isEqualTo(OwnershipView.Role.STALE);
    }

    @Test
    void leaseOfAnUnregisteredOwnerIsShownAsSuch() {
        Baton observer = start(nodeBuilder("n-observer", nodePool("n-observer")));
        leases.tryAcquire(NAME, "not-a-node", Duration.ofSeconds(30)).orElseThrow();
        OwnershipView view = observer.nodes().ownership();
        assertThat(view.ownerOf(NAME)).contains("not-a-node");
        assertThat(view.leases())
                .filteredOn(l -> l.lease().name().equals(NAME))
                .singleElement()
                .satisfies(l -> assertThat(l.ownerNodeKnown()).isFalse());
        assertThat(view.node("not-a-node")).isEmpty();
    }

    @Test
    void expiredLeaseHasNoOwner() {
        Baton observer = start(nodeBuilder("n-observer", nodePool("n-observer")));
        leases.tryAcquire(NAME, "n-observer", Duration.ofMillis(50)).orElseThrow();
        awaitExpired(NAME);
        assertThat(observer.nodes().ownership().ownerOf(NAME)).isEmpty();
        assertThat(role(observer, "n-observer")).isEqualTo(OwnershipView.Role.ACTIVE);
    }
}
