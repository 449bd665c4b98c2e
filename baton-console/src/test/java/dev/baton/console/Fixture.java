package dev.baton.console;

import com.zaxxer.hikari.HikariDataSource;
import dev.baton.Admin;
import dev.baton.Baton;
import dev.baton.JobRequest;
import dev.baton.JobState;
import dev.baton.LeaseGrant;
import dev.baton.NotificationMode;
import dev.baton.Schedule;
import dev.baton.testkit.BatonPostgres;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A populated schema for the console's tests: jobs in every state (failed ones with errors), a schedule,
 * leases with several terms, a node, controls, and attacker-controlled text ({@link #XSS}) in a job's payload,
 * kind, metadata and error message, a node id, a lease name and owner, and a control's reason. The Baton it
 * hands the console is built on a JDBC URL carrying a password ({@link #PASSWORD}) that no page may show.
 */
final class Fixture implements AutoCloseable {
    static final String XSS = "<script>alert(1)</script>";
    /** Ignored by the test server's trust authentication; must never appear on a page. */
    static final String PASSWORD = "s3cret-Pa55word";

    final BatonPostgres pg;
    final String schema;
    final Baton tool;
    final Admin admin;
    final List<Long> failed = new ArrayList<>();
    final List<Long> succeeded = new ArrayList<>();
    final List<Long> available = new ArrayList<>();
    long xssJob;

    private Fixture(BatonPostgres pg, String schema, Baton tool) {
        this.pg = pg;
        this.schema = schema;
        this.tool = tool;
        this.admin = tool.admin();
    }

    static Fixture populate(BatonPostgres pg) throws SQLException {
        String schema = pg.freshSchemaName();
        Baton.migrate(pg.dataSource(), schema);
        PGSimpleDataSource ds = new PGSimpleDataSource();
        String url = pg.jdbcUrl();
        ds.setURL(url + (url.contains("?") ? "&" : "?") + "password=" + PASSWORD);
        Fixture f = new Fixture(pg, schema, Baton.builder(ds).schema(schema).build());
        f.fill();
        return f;
    }

    private void fill() throws SQLException {
        for (int i = 0; i < 12; i++) {
            long id = tool.jobs()
                    .enqueue(JobRequest.of(i % 2 == 0 ? "mail.send" : "report.build", Map.of("n", i))
                            .queue(i % 3 == 0 ? "mail" : "reports"))
                    .id();
            if (i < 6) {
                finish(id, JobState.FAILED, "java.net.SocketTimeoutException", "read timed out after 30 s");
                failed.add(id);
            } else if (i < 9) {
                finish(id, JobState.SUCCEEDED, null, null);
                succeeded.add(id);
            } else {
                available.add(id);
            }
        }
        xssJob = tool.jobs()
                .enqueue(JobRequest.of(XSS, Map.of("to", XSS)).queue("mail").metadata("tenant", XSS))
                .id();
        finish(xssJob, JobState.FAILED, "app." + XSS, XSS);
        tool.schedules().create(Schedule.cron("nightly-report", "0 3 * * *").job("report.build", null));
        LeaseGrant first = tool.leases()
                .tryAcquire("orders-sweep", "node-a", Duration.ofMinutes(10))
                .orElseThrow();
        tool.leases().release(first);
        tool.leases()
                .tryAcquire("orders-sweep", "node-b", Duration.ofMinutes(10))
                .orElseThrow();
        tool.leases().tryAcquire(XSS, XSS, Duration.ofMinutes(10)).orElseThrow();
        tool.controls().disableKind("report.build", "ops-alice", XSS);
        // A node whose id is markup: registered, stopped (kept for the record), and drained with markup as reason.
        try (HikariDataSource nodePool = pg.newApplicationPool("console-xss-node", 4);
                Baton node = Baton.builder(nodePool)
                        .schema(schema)
                        .notifications(pg.pooled() ? NotificationMode.POLL : NotificationMode.AUTO)
                        .nodeId(XSS)
                        .application("shop", "1.0")
                        .build()
                        .start()) {
            tool.controls().drainNode(XSS, "ops-alice", XSS);
        }
    }

    /**
     * Gives the overview's charts and the lease timeline something to draw: {@code n} jobs of queue
     * {@code billing} that finished over the last hour (one in ten failed), and lease {@code report-leader}
     * handed between three owners six times.
     */
    void history(int n) throws SQLException {
        for (int i = 0; i < n; i++) {
            tool.jobs()
                    .enqueue(JobRequest.of("invoice.send", Map.of("invoice", i)).queue("billing"));
        }
        try (Connection c = pg.connect();
                PreparedStatement ps = c.prepareStatement("UPDATE " + schema + ".job j SET attempt = 1,"
                        + " state = CASE WHEN random() < 0.1 THEN 'failed' ELSE 'succeeded' END,"
                        + " created_at = r.t - interval '2 seconds', run_at = r.t - interval '2 seconds',"
                        + " finished_at = r.t"
                        + " FROM (SELECT id, clock_timestamp() - random() * interval '59 minutes' AS t FROM "
                        + schema + ".job WHERE queue = 'billing') r WHERE j.id = r.id")) {
            ps.executeUpdate();
            if (!c.getAutoCommit()) {
                c.commit();
            }
        }
        String[] owners = {"node-a", "node-b", "node-c"};
        for (int i = 0; i < 6; i++) {
            LeaseGrant g = tool.leases()
                    .tryAcquire("report-leader", owners[i % 3], Duration.ofMinutes(10))
                    .orElseThrow();
            if (i < 5) {
                tool.leases().release(g);
            }
        }
    }

    /** Ends job {@code id} in {@code state} after one attempt that failed with this error (or none). */
    void finish(long id, JobState state, String errorClass, String errorMessage) throws SQLException {
        try (Connection c = pg.connect();
                PreparedStatement ps = c.prepareStatement(
                        "UPDATE " + schema
                                + ".job SET state = ?, attempt = 1, finished_at = clock_timestamp(),"
                                + " errors = CASE WHEN ?::text IS NULL THEN errors ELSE errors || jsonb_build_array("
                                + "jsonb_build_object('attempt', 1, 'node', 'node-1', 'at', clock_timestamp(), 'class', ?::text,"
                                + " 'message', ?::text, 'stack', 'at app.Handler.handle(Handler.java:42)')) END WHERE id = ?")) {
            ps.setString(1, state.name().toLowerCase(Locale.ROOT));
            ps.setString(2, errorMessage);
            ps.setString(3, errorClass);
            ps.setString(4, errorMessage);
            ps.setLong(5, id);
            ps.executeUpdate();
            if (!c.getAutoCommit()) {
                c.commit();
            }
        }
    }

    /** The state of job {@code id}, lower case. */
    String state(long id) {
        return admin.job(id).orElseThrow().state().name().toLowerCase(Locale.ROOT);
    }

    @Override
    public void close() {
        pg.dropSchema(schema);
    }
}
