package dev.baton;

import com.zaxxer.hikari.HikariDataSource;
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
        String url = args[0];
        String schema = args[1];
        String nodeId = args[2];
        boolean poll = args.length > 3 && args[3].equals("poll");
        HikariDataSource ds = ChildNode.open(url, nodeId, 8);
        Baton baton = Baton.builder(ds)
                .schema(schema)
                .nodeId(nodeId)
                .application("svc", "1")
                .nodeHeartbeat(Duration.ofMillis(200))
                .notifications(poll ? NotificationMode.POLL : NotificationMode.AUTO)
                .maintenance(LeadershipConfig.builder()
                        .leaseTtl(Duration.ofSeconds(1))
                        .renewInterval(Duration.ofMillis(200))
                        .pollInterval(Duration.ofMillis(100))
                        .build())
                .worker(WorkerConfig.builder()
                        .queue("default", 1)
                        .jobLease(Duration.ofSeconds(2))
                        .heartbeatInterval(Duration.ofMillis(150))
                        .pollInterval(Duration.ofMillis(50))
                        .rescueInterval(Duration.ofMillis(200))
                        .drainTimeout(Duration.ofMillis(300))
                        .build())
                .schedule(ScheduleFiredNodeDiesTest.S02)
                .handle("s02.job", Object.class, (p, ctx) -> {
                    System.out.println("CLAIMED " + ctx.jobId());
                    System.out.flush();
                    while (!ctx.awaitCancellation(Duration.ofMinutes(1))) {
                        // blocks until killed
                    }
                })
                .build();
        baton.start();
        System.out.println("STARTED " + nodeId);
        System.out.flush();
        Thread.currentThread().join();
    }
}
