package dev.baton.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The database under test: an embedded PostgreSQL started with benchmark settings, or an existing
 * server given by URL. Hands out HikariCP pools (one per simulated node) and plain, unpooled
 * connections for the bench's own measuring queries (so that no pool housekeeping is counted).
 */
final class Database implements AutoCloseable {
    /**
     * Settings of the embedded server. synchronous_commit must be set explicitly, because zonky's builder
     * turns it off by default; full_page_writes stays at PostgreSQL's default (on). fsync is off unless
     * {@code --fsync on}: zonky starts the server with {@code -F}.
     */
    static final Map<String, String> EMBEDDED_SETTINGS = settings();

    /** Reported as they are on the server, whatever started it. */
    static final List<String> REPORTED_SETTINGS = List.of(
            "shared_buffers",
            "synchronous_commit",
            "fsync",
            "full_page_writes",
            "wal_sync_method",
            "wal_level",
            "max_wal_size",
            "checkpoint_timeout",
            "max_connections",
            "work_mem",
            "autovacuum",
            "jit");

    private final EmbeddedPostgres embedded;
    private final String url;

    private Database(EmbeddedPostgres embedded, String url) {
        this.embedded = embedded;
        this.url = url;
    }

    private static Map<String, String> settings() {
        Map<String, String> s = new LinkedHashMap<>();
        s.put("shared_buffers", "256MB");
        s.put("synchronous_commit", "on");
        s.put("max_connections", "400");
        s.put("timezone", "UTC");
        return s;
    }

    static Database open(String jdbcUrl, String fsync) throws IOException, SQLException {
        return open(jdbcUrl, fsync, false);
    }

    /** As {@link #open(String, String)}; {@code statements}: an embedded server preloads pg_stat_statements. */
    static Database open(String jdbcUrl, String fsync, boolean statements) throws IOException, SQLException {
        if (jdbcUrl != null) {
            Database db = new Database(null, jdbcUrl);
            try (Connection c = db.connect()) {
                c.isValid(5);
                // A server on this machine has its CPU measured as the embedded one's is; elsewhere it is not.
                Machine.Cpu.postmaster = Machine.localPostmaster(c);
            }
            return db;
        }
        EmbeddedPostgres.Builder b = EmbeddedPostgres.builder().setPGStartupWait(Duration.ofSeconds(60));
        EMBEDDED_SETTINGS.forEach(b::setServerConfig);
        if (statements) {
            b.setServerConfig("shared_preload_libraries", "pg_stat_statements");
            b.setServerConfig("pg_stat_statements.track_planning", "on");
        }
        if (fsync != null) {
            b.setServerConfig("fsync", fsync); // after zonky's -F on the command line, so it wins
        }
        EmbeddedPostgres pg = b.start();
        Machine.Cpu.postmaster = Machine.postmasterPid(pg.getPort());
        return new Database(pg, pg.getJdbcUrl("postgres", "postgres"));
    }

    boolean embedded() {
        return embedded != null;
    }

    String url() {
        return url;
    }

    /** A plain autocommit connection, not pooled. */
    Connection connect() throws SQLException {
        Connection c = DriverManager.getConnection(url);
        c.setAutoCommit(true);
        return c;
    }

    HikariDataSource pool(String name, int size) {
        return pool(name, size, null);
    }

    /** A pool whose connections use {@code schema} as their search path (null: the server's default). */
    HikariDataSource pool(String name, int size, String schema) {
        HikariConfig hc = new HikariConfig();
        if (schema != null) {
            hc.setSchema(schema);
        }
        hc.setJdbcUrl(url);
        hc.setPoolName(name);
        hc.setMaximumPoolSize(size);
        // Otherwise HikariCP's defaults (a fixed-size pool, keepalive every 2 min, validation on borrow
        // after 500 ms idle), as an application would most likely run it.
        return new HikariDataSource(hc);
    }

    Map<String, String> serverSettings() throws SQLException {
        Map<String, String> out = new LinkedHashMap<>();
        try (Connection c = connect();
                Statement st = c.createStatement()) {
            for (String name : REPORTED_SETTINGS) {
                try (ResultSet rs = st.executeQuery("SELECT current_setting('" + name + "', true)")) {
                    rs.next();
                    out.put(name, rs.getString(1));
                }
            }
        }
        return out;
    }

    String serverVersion() throws SQLException {
        try (Connection c = connect();
                Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT version()")) {
            rs.next();
            return rs.getString(1);
        }
    }

    void execute(String sql) throws SQLException {
        try (Connection c = connect();
                Statement st = c.createStatement()) {
            st.execute(sql);
        }
    }

    /** CHECKPOINT before a measurement, so every run starts from the same state (superuser only). */
    void checkpoint() {
        try {
            execute("CHECKPOINT");
        } catch (SQLException e) {
            System.out.println("  (CHECKPOINT not possible: " + e.getMessage().strip() + ")");
        }
    }

    void dropSchema(String schema) {
        try {
            execute("DROP SCHEMA IF EXISTS \"" + schema + "\" CASCADE");
        } catch (SQLException e) {
            System.out.println(
                    "  (could not drop schema " + schema + ": " + e.getMessage().strip() + ")");
        }
    }

    @Override
    public void close() throws IOException {
        if (embedded != null) {
            embedded.close();
        }
    }
}
