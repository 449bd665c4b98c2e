package dev.baton.bench;

import dev.baton.WorkerConfig;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.Arrays;
import java.util.Map;

/**
 * The raw-SQL ceiling as a "system": Baton's schema and Baton's own claim and complete statements
 * (read from baton-core, {@link BatonSql}), issued back to back by plain JDBC threads, one connection
 * each, with no worker, no handler thread hand-off, no heartbeats and no maintenance. A node is one
 * such thread; the claim batch is Baton's effective batch at that node count when known, or, for the
 * best-batch ceiling, the fastest batch of a sweep at that node count.
 */
final class Ceiling extends Peer.BatonPeer {
    /** The best-batch ceiling (batch from the sweep), or the ceiling at Baton's own batch. */
    final boolean best;

    volatile int batch = 16;

    Ceiling(Database db, String schema, int threads, boolean best) {
        super(db, schema, threads, 1);
        this.best = best;
    }

    @Override
    String name() {
        return best ? CompareReport.CEILING_BEST : CompareReport.CEILING;
    }

    @Override
    String settings() {
        return "Baton's job.claim + job.complete statements from one plain JDBC connection per node (thread), claim batch ="
                + (best
                        ? " the fastest of the swept batches at that node count"
                        : " Baton's effective claim batch in the same run at that node count (16 if unknown)")
                + ", no handler hand-off";
    }

    @Override
    AutoCloseable startNode(int i) throws Exception {
        Map<String, String> sql = BatonSql.load("job", schema);
        long leaseMs = WorkerConfig.DEFAULT_JOB_LEASE.toMillis();
        int b = batch;
        // one connection, counted like the nodes' (the same proxy overhead), so that the claim shows in the counter
        com.zaxxer.hikari.HikariDataSource pool = db.pool("raw-" + i, 1, schema);
        Connection c = counter.wrap(pool).getConnection();
        PreparedStatement claim = c.prepareStatement(sql.get("claim"));
        PreparedStatement complete = c.prepareStatement(sql.get("complete"));
        Array kinds = c.createArrayOf("text", new String[] {KIND});
        Thread t = new Thread(
                () -> {
                    Long[] ids = new Long[b];
                    Long[] tokens = new Long[b];
                    try {
                        while (!Thread.currentThread().isInterrupted()) {
                            // As JobStore.claim binds them for a keyless queue (decision 0028), always from the head
                            // of the claim order (decision 0037): queue, kinds, queue, the key to start after,
                            // candidates = limit, limit, job_lease_ms, node_id.
                            claim.setString(1, QUEUE);
                            claim.setArray(2, kinds);
                            claim.setString(3, QUEUE);
                            JobsBenchmark.bindFromHead(claim, 4);
                            claim.setInt(7, JobsBenchmark.CANDIDATE_FACTOR * b);
                            claim.setInt(8, b);
                            claim.setLong(9, leaseMs);
                            claim.setString(10, "raw-" + i);
                            int n = 0;
                            try (ResultSet rs = claim.executeQuery()) {
                                while (rs.next()) {
                                    ids[n] = rs.getLong("id");
                                    tokens[n] = rs.getLong("attempt_token");
                                    Sink.ran(Long.parseLong(rs.getString("payload")));
                                    n++;
                                }
                            }
                            if (n == 0) {
                                Thread.sleep(20);
                                continue;
                            }
                            Array idArr = c.createArrayOf("int8", Arrays.copyOf(ids, n));
                            Array tokArr = c.createArrayOf("int8", Arrays.copyOf(tokens, n));
                            complete.setArray(1, idArr);
                            complete.setArray(2, tokArr);
                            try (ResultSet rs = complete.executeQuery()) {
                                while (rs.next()) {
                                    // drained
                                }
                            }
                        }
                    } catch (InterruptedException e) {
                        // stopped
                    } catch (Exception e) {
                        if (!Thread.currentThread().isInterrupted()) {
                            System.out.println("  raw-SQL client failed: " + e);
                        }
                    }
                },
                "raw-" + i);
        t.start();
        return () -> {
            t.interrupt();
            t.join(10_000);
            c.close();
            pool.close();
        };
    }
}
