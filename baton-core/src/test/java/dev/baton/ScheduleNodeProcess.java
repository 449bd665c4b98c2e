package dev.baton;

import java.time.Duration;

/**
 * A node of application "svc" 1 in a JVM of its own, for S02 (the node that fired is killed).
 * Arguments: JDBC URL, schema, node id, {@code poll|auto}. Declares schedule {@code s02} (every
 * 500 ms, job {@code s02.job} on queue {@code default}) and works that queue one job at a time: the
 * handler prints {@code CLAIMED <jobId>} and blocks, heartbeating, until the process is killed.
 */
public final class ScheduleNodeProcess {
    private ScheduleNodeProcess() {}

    public static void main(String[] args) throws Exception {
        String nodeId = args[2];
        Baton.Builder node = ChildNode.nodeBuilder(args, 8, Duration.ofMillis(300))
                .application("svc", "1")
                .schedule(ScheduleFiredNodeDiesTest.S02)
                .handle("s02.job", Object.class, (p, ctx) -> {
                    System.out.println("CLAIMED " + ctx.jobId());
                    System.out.flush();
                    while (!ctx.awaitCancellation(Duration.ofMinutes(1))) {
                        // blocks until killed
                    }
                });
        ChildNode.run(node, nodeId);
    }
}
