package dev.baton.examples.shop;

import dev.baton.Baton;
import dev.baton.JobContext;
import dev.baton.spring.BatonSchedule;
import dev.baton.spring.BatonSingleRunner;
import dev.baton.spring.SingleRunner;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

/**
 * Background work that must not run once per instance: a durable Baton sweep, and a plain
 * {@code @Scheduled} method made single-runner with one annotation (as with ShedLock's {@code @SchedulerLock}).
 */
@Component
public class Housekeeping {
    private final JdbcTemplate jdbc;
    private final Baton baton;
    private final String schema;

    public Housekeeping(JdbcTemplate jdbc, Baton baton, ShopTables tables) {
        this.jdbc = jdbc;
        this.baton = baton;
        this.schema = tables.schema();
    }

    /**
     * A durable sweep: one job per interval across all instances. Its writes go through JdbcTemplate inside
     * {@code ctx.transaction}: they commit with the job's completion, fenced by the attempt, or not at all.
     */
    @BatonSchedule(name = "expire-carts", every = "${shop.sweep-interval:1m}")
    public void expireCarts(JobContext ctx) {
        ctx.transaction(conn -> {
            int expired = jdbc.update("DELETE FROM " + schema + ".carts WHERE expires_at < clock_timestamp()");
            // Keyed by the job: one row per run, however many attempts it took.
            return jdbc.update(
                    "INSERT INTO " + schema + ".sweep_runs (job_id, node, expired_carts) VALUES (?, ?, ?) "
                            + "ON CONFLICT (job_id) DO NOTHING",
                    ctx.jobId(),
                    baton.nodeId(),
                    expired);
        });
    }

    /** An existing @Scheduled method; one instance runs each period, its write fenced by the lease. */
    @Scheduled(fixedDelayString = "${shop.report-interval:PT1M}")
    @BatonSingleRunner("shop.open-orders-report")
    public void reportOpenOrders() {
        long generation = SingleRunner.currentGrant().orElseThrow().generation();
        SingleRunner.fenced(
                tx -> { // rejected if another instance took over
                    int open;
                    try (PreparedStatement ps = tx.prepareStatement(
                                    "SELECT count(*) FROM " + schema + ".orders WHERE receipt_sent_at IS NULL");
                            ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        open = rs.getInt(1);
                    }
                    try (PreparedStatement ps = tx.prepareStatement("INSERT INTO " + schema
                            + ".report_runs (generation, node, open_orders) VALUES (?, ?, ?)")) {
                        ps.setLong(1, generation);
                        ps.setString(2, baton.nodeId());
                        ps.setInt(3, open);
                        return ps.executeUpdate();
                    }
                });
    }
}
