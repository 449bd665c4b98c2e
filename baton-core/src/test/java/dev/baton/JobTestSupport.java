package dev.baton;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.baton.internal.db.Jdbc;
import dev.baton.internal.maintenance.Maintenance;
import dev.baton.internal.service.Hooks;
import dev.baton.testkit.FaultProxy;
import dev.baton.testkit.TestTimeouts;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import javax.sql.DataSource;
import org.awaitility.Awaitility;

/**
 * Helpers for the durable-job fault tests (J…): worker nodes with short timings, an effect table
 * that handlers write to, pools through a {@link FaultProxy}, and reads of the job row on the
 * database's own terms (state, attempt token, lease on {@code clock_timestamp()}).
 */
abstract class JobTestSupport extends DbTest {
    /** Job lease 2 s, heartbeat 150 ms (L/2 = 1 s > 2R = 300 ms), poll 50 ms, rescue every 200 ms. */
    static final Duration JOB_LEASE = Duration.ofSeconds(2);

    static final Duration HEARTBEAT = Duration.ofMillis(150);

    record Payload(int n) {}

    /** A job row as the database sees it now. */
    record JobRow(
            long id, String state, int attempt, Long token, boolean leaseLive, int stallCount, String claimedBy) {}

    static WorkerConfig.Builder fastWorker(String queue, int concurrency) {
        return WorkerConfig.builder()
                .queue(queue, concurrency)
                .jobLease(JOB_LEASE)
                .heartbeatInterval(HEARTBEAT)
                .pollInterval(Duration.ofMillis(50))
                .rescueInterval(Duration.ofMillis(200))
                .drainTimeout(Duration.ofMillis(500));
    }

    /** A node builder on this test's schema; LISTEN only where it can work (not through PgBouncer). */
    Baton.Builder nodeBuilder(String id, DataSource ds, Hooks hooks) {
        return Baton.builder(ds)
                .schema(schema)
                .nodeId(id)
                .nodeHeartbeat(Duration.ofMillis(200))
                .testHooks(hooks)
                .maintenance(fastLeadership())
                .notifications(PG.pooled() ? NotificationMode.POLL : NotificationMode.AUTO);
    }

    /** Builds and starts the node; it is closed after the test (before pools registered earlier). */
    Baton startNode(Baton.Builder b) {
        return closeLater(b.build()).start();
    }

    /** A pool of its own for a node, as the application would give it; closed after the node (register it first). */
    HikariDataSource ownPool(String name, int size) {
        return closeLater(PG.newApplicationPool(name, size));
    }

    /**
     * A pool whose connections go through {@code proxy}. Socket and login timeouts make a call on a
     * black-holed connection fail (instead of waiting forever for bytes the proxy dropped), like a
     * client with TCP keepalives would; {@code ApplicationName} lets the test find its backends.
     */
    HikariDataSource proxiedPool(FaultProxy proxy, String name, int size, String applicationName) {
        HikariConfig cfg = new HikariConfig();
        String url = PG.jdbcUrlVia("127.0.0.1", proxy.port());
        cfg.setJdbcUrl(url + (url.contains("?") ? "&" : "?") + "socketTimeout=2&connectTimeout=2&loginTimeout=2"
                + "&ApplicationName=" + applicationName);
        cfg.setPoolName(name);
        cfg.setMaximumPoolSize(size);
        cfg.setMinimumIdle(0);
        cfg.setConnectionTimeout(TestTimeouts.scaled(Duration.ofSeconds(2)).toMillis());
        cfg.setValidationTimeout(1000);
        return closeLater(new HikariDataSource(cfg));
    }

    /** {@code <schema>.effect(job_id, attempt, node, n)}; optionally one row per attempt at most. */
    void createEffectTable(boolean uniquePerAttempt) throws SQLException {
        try (Connection c = pool.getConnection()) {
            Jdbc.execute(
                    c,
                    "CREATE TABLE " + schema + ".effect (seq bigserial PRIMARY KEY, job_id bigint NOT NULL, "
                            + "attempt int NOT NULL, node text NOT NULL, n int NOT NULL DEFAULT 0"
                            + (uniquePerAttempt ? ", UNIQUE (job_id, attempt, n)" : "") + ")");
        }
    }

    void insertEffect(Connection c, long jobId, int attempt, String node, int n) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(
                "INSERT INTO " + schema + ".effect (job_id, attempt, node, n) VALUES (?, ?, ?, ?)")) {
            ps.setLong(1, jobId);
            ps.setInt(2, attempt);
            ps.setString(3, node);
            ps.setInt(4, n);
            ps.executeUpdate();
        }
    }

    JobRow row(long id) throws SQLException {
        try (Connection c = pool.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT state, attempt, attempt_token, "
                        + "coalesce(lease_expires_at > clock_timestamp(), false), stall_count, claimed_by FROM "
                        + schema + ".job WHERE id = ?")) {
            ps.setLong(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    throw new AssertionError("job " + id + " does not exist");
                }
                long token = rs.getLong(3);
                return new JobRow(
                        id,
                        rs.getString(1),
                        rs.getInt(2),
                        rs.wasNull() ? null : token,
                        rs.getBoolean(4),
                        rs.getInt(5),
                        rs.getString(6));
            }
        }
    }

    /** Waits (polling the database) until the job is in {@code state}. */
    void awaitState(long id, String state) {
        Awaitility.await()
                .atMost(WAIT)
                .pollInterval(Duration.ofMillis(20))
                .until(() -> row(id).state().equals(state));
    }

    /**
     * Waits until the running attempt's lease has expired on the database clock (or a rescuer, such as
     * a node's maintenance leader, has already returned the job to the queue).
     */
    void awaitLeaseExpired(long id) {
        Awaitility.await().atMost(WAIT).pollInterval(Duration.ofMillis(20)).until(() -> {
            JobRow r = row(id);
            return !r.state().equals("running") || !r.leaseLive();
        });
    }

    /** The jobs API on the application pool, without a worker. */
    Jobs jobsApi() {
        return Baton.builder(appPool).schema(schema).build().jobs();
    }

    /** The rescuer, as run by the maintenance leader. */
    Maintenance rescuer(WorkerConfig config, String nodeId) {
        return maintenance(config, nodeId);
    }
}
