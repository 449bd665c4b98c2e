package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.internal.node.NodeRegistrar;
import dev.baton.internal.service.Hooks;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Default node ids do not collide in containers (every process pid 1, host names repeated): host, pid and
 * 64 random bits. And where two processes do share an id (a node id set in configuration and copied to
 * every replica), their leases still exclude each other: each acquisition is its own holder (L18).
 */
class NodeIdTest extends LeadershipDbTest {

    /**
     * Protection removed and seen failing: the 64 random bits (back to 16 bits from the pid and a clock
     * reading): the id no longer matched the pattern.
     */
    @Test
    void defaultNodeIdsCarry64RandomBits() {
        Set<String> ids = new HashSet<>();
        for (int i = 0; i < 10_000; i++) {
            ids.add(NodeRegistrar.defaultNodeId());
        }
        assertThat(ids).hasSize(10_000);
        assertThat(ids.iterator().next())
                .matches(".+-" + ProcessHandle.current().pid() + "-[0-9a-f]{16}");
    }

    /**
     * Two Baton instances with the same node id (two replicas configured alike) both campaign for one
     * lease: one leads at a time. Protection removed and seen failing: the per-acquisition re-grant (any
     * caller with the owner id re-granted): the second instance's runner was elected at its first attempt.
     */
    @Test
    void L18_twoProcessesSharingANodeIdDoNotBothLead() throws Exception {
        Baton first = start(nodeBuilder("replica", appPool));
        Baton second = start(nodeBuilder("replica", nodePool("replica")));
        Recorder r1 = new Recorder();
        Recorder r2 = new Recorder();
        Leadership l1 =
                first.leadership("billing", fastLeadership(), idleTask(), r1).start();
        r1.awaitElected();
        dev.baton.testkit.PausePoints.Pause lost = points.arm(Hooks.Points.CAMPAIGN_LOST);
        second.leadership("billing", fastLeadership(), idleTask(), r2).start();
        lost.awaitReached(WAIT);
        lost.release();
        assertThat(r2.elections()).isEmpty();
        l1.stop();
        assertThat(r2.awaitElected().grant().owner()).isEqualTo("replica");
        assertThat(r1.awaitRevoked().reason()).isEqualTo(RevocationReason.STOPPED);
    }
}
