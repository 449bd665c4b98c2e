package dev.baton;

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
        Baton.Builder node = ChildNode.nodeBuilder(args, 6, Duration.ofMillis(500))
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
                });
        ChildNode.run(node, nodeId);
    }
}
