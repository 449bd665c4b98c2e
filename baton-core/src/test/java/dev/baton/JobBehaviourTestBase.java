package dev.baton;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.baton.internal.job.JobStore;
import dev.baton.internal.maintenance.Maintenance;
import dev.baton.testkit.FaultProxy;
import dev.baton.testkit.TestTimeouts;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongSupplier;
import javax.sql.DataSource;
import org.awaitility.Awaitility;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * Shared helpers of the job behaviour tests J06–J12 and {@code JobsApiTest}: worker nodes with short
 * timings on pools of their own, a {@link Jobs} client on the test pool, and reads of the job row as
 * the database sees it.
 */
abstract class JobBehaviourTestBase extends DbTest {
    /** Job lease 2 s, heartbeat 200 ms: L/2 = 1 s > 2R = 400 ms, as WorkerConfig requires. */
    static final Duration JOB_LEASE = Duration.ofSeconds(2);

    static final Duration HEARTBEAT = Duration.ofMillis(200);
    static final Duration POLL = Duration.ofMillis(50);

    /** A payload record every test can use. */
    record Item(String name) {}

    /** The job row's columns that the tests reason about. */
    record Row(
            long id,
            String state,
            int attempt,
            Long token,
            Instant leaseExpiresAt,
            Instant runAt,
            Instant attemptedAt,
            Instant finishedAt,
            int stallCount,
            String claimedBy,
            String errorsJson) {}

    static WorkerConfig.Builder fastWorker(String queue, int concurrency) {
        return WorkerConfig.builder()
                .queue(queue, concurrency)
                .jobLease(JOB_LEASE)
                .heartbeatInterval(HEARTBEAT)
                .pollInterval(POLL)
                .rescueInterval(Duration.ofMillis(200))
                .drainTimeout(Duration.ofSeconds(5));
    }

    /** A node builder on this test's schema over a pool of its own; LISTEN only where it can work. */
    Baton.Builder nodeBuilder(String id) {
        return nodeBuilder(id, ownPool(id, 8));
    }

    Baton.Builder nodeBuilder(String id, DataSource ds) {
        return Baton.builder(ds)
                .schema(schema)
                .nodeId(id)
                .nodeHeartbeat(Duration.ofMillis(200))
                .testHooks(points::reach)
                .maintenance(fastLeadership())
                .notifications(PG.pooled() ? NotificationMode.POLL : NotificationMode.AUTO);
    }

    /** Builds and starts the node; closed after the test, before the pools registered earlier. */
    Baton start(Baton.Builder b) {
        return closeLater(b.build()).start();
    }

    Baton start(Baton.Builder b, LongSupplier ticker) {
        return closeLater(b.ticker(ticker).build()).start();
    }

    /** A pool of its own, as the application would give it (closed after the nodes using it, registered later). */
    HikariDataSource ownPool(String name, int size) {
        return closeLater(PG.newApplicationPool(name + "-" + schema, size));
    }

    /** A small pool whose connections go through {@code proxy}; a dead socket fails within seconds. */
    HikariDataSource proxiedPool(String name, FaultProxy proxy, int size) {
        HikariConfig cfg = new HikariConfig();
        String url = PG.jdbcUrlVia("127.0.0.1", proxy.port());
        cfg.setJdbcUrl(url + (url.contains("?") ? "&" : "?") + "socketTimeout=3&connectTimeout=3");
        cfg.setMaximumPoolSize(size);
        cfg.setMinimumIdle(0);
        cfg.setConnectionTimeout(1000);
        cfg.setPoolName(name + "-" + schema);
        return closeLater(new HikariDataSource(cfg));
    }

    /** A jobs client on the test pool, like an application that enqueues without working jobs. */
    Jobs jobsClient() {
        return jobsClient(WorkerConfig.DEFAULT_MAX_PAYLOAD_BYTES);
    }

    Jobs jobsClient(int maxPayloadBytes) {
        return new Jobs(appPool, new JobStore(schema), PayloadCodec.jackson(), maxPayloadBytes);
    }

    /** The housekeeping (rescue, prune) run by hand, as the maintenance leader runs it. */
    Maintenance maintenance(WorkerConfig config) {
        return maintenance(config, "test-maintenance");
    }

    JobInfo awaitState(Jobs jobs, long id, JobState state) {
        Awaitility.await()
                .atMost(WAIT)
                .pollInterval(Duration.ofMillis(20))
                .until(() -> jobs.get(id).map(JobInfo::state).orElse(null) == state);
        return jobs.get(id).orElseThrow();
    }

    long jobCount() throws SQLException {
        return count("SELECT count(*) FROM " + schema + ".job");
    }

    Row row(long id) throws SQLException {
        try (Connection c = pool.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT id, state, attempt, attempt_token, lease_expires_at, "
                        + "run_at, attempted_at, finished_at, stall_count, claimed_by, errors::text FROM " + schema
                        + ".job WHERE id = ?")) {
            ps.setLong(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    throw new AssertionError("job " + id + " does not exist");
                }
                long token = rs.getLong(4);
                Long tokenOrNull = rs.wasNull() ? null : token;
                return new Row(
                        rs.getLong(1),
                        rs.getString(2),
                        rs.getInt(3),
                        tokenOrNull,
                        instant(rs.getTimestamp(5)),
                        instant(rs.getTimestamp(6)),
                        instant(rs.getTimestamp(7)),
                        instant(rs.getTimestamp(8)),
                        rs.getInt(9),
                        rs.getString(10),
                        rs.getString(11));
            }
        }
    }

    /** Scaled upper bound for waits inside handlers (never a lower bound). */
    static Duration handlerWait() {
        return TestTimeouts.scaled(Duration.ofSeconds(30));
    }

    private static Instant instant(Timestamp t) {
        return t == null ? null : t.toInstant();
    }

    /**
     * LISTENs on this schema's job channel (on a direct connection of its own); for each notification, in the
     * order they arrive, the queue named and that queue's jobs at that moment.
     */
    final class JobChannelListener implements AutoCloseable {
        final List<String> queues = new CopyOnWriteArrayList<>();
        final List<Long> rowsWhenHeard = new CopyOnWriteArrayList<>();
        private final Connection listen = PG.connect();
        private final AtomicBoolean done = new AtomicBoolean();
        private final Thread thread;

        JobChannelListener() throws SQLException {
            try (Statement st = listen.createStatement()) {
                st.execute("LISTEN \"" + JobStore.channel(schema) + "\"");
            }
            PGConnection pg = listen.unwrap(PGConnection.class);
            thread = new Thread(() -> {
                try {
                    while (!done.get()) {
                        PGNotification[] got = pg.getNotifications(10);
                        for (PGNotification n : got == null ? new PGNotification[0] : got) {
                            rowsWhenHeard.add(queueCount(n.getParameter()));
                            queues.add(n.getParameter());
                        }
                    }
                } catch (SQLException e) {
                    queues.add("failed: " + e.getMessage());
                }
            });
            thread.start();
        }

        @Override
        public void close() throws Exception {
            done.set(true);
            thread.join();
            listen.close();
        }
    }

    /** The jobs of {@code queue} now. */
    long queueCount(String queue) throws SQLException {
        try (Connection c = pool.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM " + schema + ".job WHERE queue = ?")) {
            ps.setString(1, queue);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }
}
