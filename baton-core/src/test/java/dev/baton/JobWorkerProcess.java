package dev.baton;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.time.Duration;

/**
 * A worker node in a JVM of its own, for tests that kill it (J02). Arguments: JDBC URL, schema, node
 * id, {@code poll|auto} (notifications). Works queue {@code default} with jobs of kind
 * {@code external}: each attempt inserts an "external effect" row on its own auto-commit connection
 * (so it is durable whatever happens to the attempt), prints {@code EFFECT <jobId>} and then blocks,
 * heartbeating, until the process is killed.
 */
public final class JobWorkerProcess {
    private JobWorkerProcess() {}

    public static void main(String[] args) throws Exception {
        String url = args[0];
        String schema = args[1];
        String nodeId = args[2];
        boolean poll = args.length > 3 && args[3].equals("poll");
        HikariDataSource ds = ChildNode.open(url, nodeId, 6);
        Baton baton = Baton.builder(ds)
                .schema(schema)
                .nodeId(nodeId)
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
                        .drainTimeout(Duration.ofMillis(500))
                        .build())
                .handle("external", java.util.Map.class, (p, ctx) -> {
                    try (Connection c = DriverManager.getConnection(url);
                            PreparedStatement ps = c.prepareStatement("INSERT INTO " + schema
                                    + ".effect (job_id, attempt, node, n) VALUES (?, ?, ?, ?)")) {
                        ps.setLong(1, ctx.jobId());
                        ps.setInt(2, ctx.attempt());
                        ps.setString(3, nodeId);
                        ps.setInt(4, ((Number) p.get("n")).intValue());
                        ps.executeUpdate();
                    }
                    System.out.println("EFFECT " + ctx.jobId());
                    System.out.flush();
                    // Block (the heartbeater keeps the attempt's lease alive) until killed.
                    while (!ctx.awaitCancellation(Duration.ofMinutes(1))) {
                        // keep waiting
                    }
                })
                .build();
        baton.start();
        System.out.println("STARTED " + nodeId);
        System.out.flush();
        Thread.currentThread().join(); // runs until killed
    }
}
