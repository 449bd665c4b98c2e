package dev.baton;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.baton.internal.coord.CoordinationStore;
import dev.baton.internal.db.Db;
import dev.baton.internal.db.Jdbc;
import dev.baton.internal.job.JobStore;
import dev.baton.internal.lease.LeaseStore;
import dev.baton.internal.maintenance.Maintenance;
import dev.baton.internal.node.ControlStore;
import dev.baton.internal.node.NodeStore;
import dev.baton.internal.notify.Notifier;
import dev.baton.internal.schedule.ScheduleStore;
import dev.baton.internal.service.Hooks;
import dev.baton.testkit.BatonPostgres;
import dev.baton.testkit.PausePoints;
import dev.baton.testkit.TestTimeouts;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.function.LongSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Base of the tests that need PostgreSQL: one shared server per JVM (embedded, or BATON_JDBC_URL),
 * a fresh migrated schema per test, a small pool, pause points, and helpers for the fenced ledger.
 */
public abstract class DbTest {
    @RegisterExtension
    protected static final BatonPostgres PG = new BatonPostgres();

    /** Timeouts for awaiting outcomes; scaled by -Dbaton.test.timeoutScale on slow machines. */
    protected static final Duration WAIT = TestTimeouts.scaled(Duration.ofSeconds(20));

    protected String schema;
    /** The test's own pool (auto-commit, the server's defaults): setup, reads and writes of the test. */
    protected HikariDataSource pool;
    /**
     * The pool handed to Baton: like {@link #pool}, or in the user pool profile (FAULTS.md E04,
     * {@code BATON_POOL_PROFILE=user}) configured as applications run it.
     */
    protected HikariDataSource appPool;

    protected PausePoints points;
    protected Leases leases;
    private final List<AutoCloseable> closeables = new ArrayList<>();

    /** For the test classes of Baton's internal packages too. */
    protected DbTest() {}

    @BeforeEach
    protected void setUpSchema() {
        schema = PG.freshSchemaName();
        pool = PG.newPool(getClass().getSimpleName(), 12);
        appPool = PG.newApplicationPool(getClass().getSimpleName() + "-app", 12);
        points = new PausePoints();
        Baton.migrate(appPool, schema);
        leases = new Leases(appPool, schema, points::reach, System::nanoTime, Notifier.polling());
    }

    @AfterEach
    protected void tearDown() {
        points.releaseAll();
        for (int i = closeables.size() - 1; i >= 0; i--) {
            Jdbc.closeQuietly(closeables.get(i));
        }
        appPool.close();
        pool.close();
        PG.dropSchema(schema);
    }

    /**
     * A pool configured as {@link #appPool} (in the user pool profile: autoCommit=false, REPEATABLE READ) but with
     * {@code size} connections and a borrow timeout of {@link #WAIT}, closed after the test: for tests of many
     * threads at once whose subject is not the pool's size. On the profile's two connections with their 1 s borrow
     * such a test would also test the pool's fairness on a busy machine (seen in CI: a borrow gave up after 1 s with
     * eight enqueuing threads on two connections).
     */
    protected HikariDataSource appPoolOf(String name, int size) {
        HikariConfig config = new HikariConfig();
        appPool.copyStateTo(config);
        config.setPoolName(appPool.getPoolName() + "-" + name);
        config.setMaximumPoolSize(size);
        config.setConnectionTimeout(WAIT.toMillis());
        return closeLater(new HikariDataSource(config));
    }

    /** Closes {@code c} after the test, in reverse order of registration. */
    protected <T extends AutoCloseable> T closeLater(T c) {
        closeables.add(c);
        return c;
    }

    /** A Baton node on this test's schema with its own pool, closed after the test. */
    protected Baton node(String id) {
        return node(id, appPool, System::nanoTime);
    }

    protected Baton node(String id, javax.sql.DataSource ds, LongSupplier ticker) {
        return closeLater(Baton.builder(ds)
                        .schema(schema)
                        .nodeId(id)
                        .nodeHeartbeat(Duration.ofMillis(200))
                        .testHooks(points::reach)
                        .ticker(ticker)
                        .build())
                .start();
    }

    /** The cluster's housekeeping run by hand on the application pool, as the maintenance leader runs it. */
    protected Maintenance maintenance(WorkerConfig config, String nodeId) {
        return maintenance(config, nodeId, new JobStore(schema));
    }

    protected Maintenance maintenance(WorkerConfig config, String nodeId, JobStore store) {
        return maintenance(config, nodeId, store, Baton.DEFAULT_RETENTION);
    }

    protected Maintenance maintenance(WorkerConfig config, String nodeId, Duration retention) {
        return maintenance(config, nodeId, new JobStore(schema), retention);
    }

    private Maintenance maintenance(WorkerConfig config, String nodeId, JobStore store, Duration retention) {
        return maintenance(config, nodeId, store, retention, Set.of(), System::nanoTime);
    }

    /** ... of a node that handles {@code ownKinds}, on {@code ticker}'s time. */
    protected Maintenance maintenance(
            WorkerConfig config,
            String nodeId,
            JobStore store,
            Duration retention,
            Set<String> ownKinds,
            LongSupplier ticker) {
        return new Maintenance(
                Db.of(appPool),
                store,
                new LeaseStore(schema, Hooks.NONE, System::nanoTime),
                new ScheduleStore(schema),
                new NodeStore(schema),
                new CoordinationStore(schema),
                new ControlStore(schema, null),
                new Maintenance.Config(config, ownKinds, retention),
                nodeId,
                ticker);
    }

    /** Short timings for tests: L = 1 s, R = 200 ms (L/2 = 500 ms > 2R = 400 ms). */
    protected static LeadershipConfig fastLeadership() {
        return LeadershipConfig.builder()
                .leaseTtl(Duration.ofSeconds(1))
                .renewInterval(Duration.ofMillis(200))
                .pollInterval(Duration.ofMillis(100))
                .stopTimeout(Duration.ofSeconds(5))
                .build();
    }

    /** Creates {@code <schema>.ledger}, the table of protected writes the tests fence. */
    protected void createLedger() throws SQLException {
        try (Connection c = pool.getConnection()) {
            Jdbc.execute(
                    c,
                    "CREATE TABLE " + schema + ".ledger (seq bigserial PRIMARY KEY, lease_name text NOT NULL, "
                            + "generation bigint NOT NULL, owner_id text NOT NULL, idempotency_key text UNIQUE)");
        }
    }

    /** Inserts one ledger row for {@code grant} on the given (fenced) transaction; returns its seq. */
    protected long insertLedger(Connection tx, LeaseGrant grant) throws SQLException {
        return insertLedger(tx, grant, null);
    }

    protected long insertLedger(Connection tx, LeaseGrant grant, String key) throws SQLException {
        try (PreparedStatement ps = tx.prepareStatement("INSERT INTO " + schema + ".ledger "
                + "(lease_name, generation, owner_id, idempotency_key) VALUES (?, ?, ?, ?) "
                + "ON CONFLICT (idempotency_key) DO NOTHING RETURNING seq")) {
            ps.setString(1, grant.name());
            ps.setLong(2, grant.generation());
            ps.setString(3, grant.owner());
            ps.setString(4, key);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? rs.getLong(1) : -1;
            }
        }
    }

    protected long count(String sql) throws SQLException {
        try (Connection c = pool.getConnection();
                ResultSet rs = c.createStatement().executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /** Ledger rows as (seq, generation, owner), in seq order. */
    protected List<long[]> ledgerGenerations() throws SQLException {
        List<long[]> out = new ArrayList<>();
        try (Connection c = pool.getConnection();
                ResultSet rs = c.createStatement()
                        .executeQuery("SELECT seq, generation FROM " + schema + ".ledger ORDER BY seq")) {
            while (rs.next()) {
                out.add(new long[] {rs.getLong(1), rs.getLong(2)});
            }
        }
        return out;
    }

    /**
     * Waits (polling the database clock, not sleeping blindly) until the lease has expired. Reads through
     * the test's own pool: the application pool may be all in use by the operations under test.
     */
    protected void awaitExpired(String name) {
        org.awaitility.Awaitility.await()
                .atMost(WAIT)
                .pollInterval(Duration.ofMillis(10))
                .until(() -> count("SELECT count(*) FROM " + schema + ".lease WHERE name = '" + name.replace("'", "''")
                                + "' AND owner_id IS NOT NULL AND expires_at > clock_timestamp()")
                        == 0);
    }
}
