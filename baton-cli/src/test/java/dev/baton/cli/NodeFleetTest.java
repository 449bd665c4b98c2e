package dev.baton.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * E03's harness: the chaos run's faults overlap in time on one node (a SIGTERM still draining when the next
 * fault is due). The fleet must say so instead of signalling a process that is going away. A stand-in
 * process (a shell that ignores SIGTERM) plays the node.
 */
class NodeFleetTest {
    @TempDir
    Path logs;

    private final NodeFleet.Node node = new NodeFleet.Node("node-1", "jdbc:postgresql://unused/db");

    @AfterEach
    void killStandIn() throws InterruptedException {
        if (node.process != null) {
            node.process.toHandle().destroyForcibly();
            node.process.waitFor();
        }
    }

    private NodeFleet fleet() {
        return new NodeFleet(logs, n -> List.of(), (n, pid, line) -> {});
    }

    /**
     * A SIGTERM whose process still drains leaves the node "stopping" (the chaos run then skips faults that
     * need its process) until it is started again. Protection removed to see it fail: {@code n.stopping = true}
     * in {@code NodeFleet.terminate}: the node looked running, and a chaos run once paused such a process.
     */
    @Test
    void E03_aNodeSentSigtermIsStoppingWhileItsProcessDrains() throws Exception {
        node.process = new ProcessBuilder("sh", "-c", "trap '' TERM; while true; do sleep 1; done").start();
        assertThat(node.stopping).isFalse();
        fleet().terminate(node);
        assertThat(node.alive()).as("the stand-in ignores SIGTERM").isTrue();
        assertThat(node.stopping).isTrue();
    }

    /**
     * The heal of a pause whose process was killed meanwhile (its SIGTERM's grace ran out) has nothing to
     * resume. Protection removed to see it fail: the alive check around the SIGCONT in {@code NodeFleet.resume}:
     * "kill -CONT 4711 failed: kill: (4711): No such process", which a chaos run reported as a fault it could not inject.
     */
    @Test
    void E03_resumingAPausedNodeWhoseProcessEndedMeanwhileIsNotAnError() throws Exception {
        NodeFleet fleet = fleet();
        node.process = new ProcessBuilder("sleep", "600").start();
        fleet.pause(node);
        assertThat(node.paused).isTrue();
        node.process.toHandle().destroyForcibly();
        node.process.waitFor();
        fleet.resume(node);
        assertThat(node.paused).isFalse();
    }
}
