package dev.baton.cli;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.pool.HikariPool;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;

/** Data sources on a user-given JDBC URL, and the recognition of "cannot reach the database". */
final class Db {
    static final String PREFIX = "jdbc:postgresql:";
    private static final Pattern PASSWORD = Pattern.compile("(?i)(password=)[^&]*");
    private static final Pattern USER_INFO = Pattern.compile("(//[^/@:]*:)[^/@]*@");

    private Db() {}

    /** Rejects what is not a PostgreSQL JDBC URL, as a usage error. */
    static String requireUrl(String url, String option) {
        if (url == null || url.isBlank()) {
            throw CliException.usage(
                    option + " is required (for example jdbc:postgresql://localhost:5432/app?user=app)");
        }
        if (!url.startsWith(PREFIX)) {
            throw CliException.usage(option + " must be a PostgreSQL JDBC URL starting with " + PREFIX + ", but was '"
                    + redact(url) + "'");
        }
        return url.trim();
    }

    /** The URL with any password hidden, for messages. */
    static String redact(String url) {
        if (url == null) {
            return null;
        }
        return USER_INFO.matcher(PASSWORD.matcher(url).replaceAll("$1***")).replaceAll("$1***@");
    }

    /** A non-pooled data source for one-shot commands; connecting gives up after 5 s unless the URL says otherwise. */
    static DataSource simple(String url) {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        try {
            ds.setURL(url);
        } catch (IllegalArgumentException e) {
            throw CliException.usage("invalid JDBC URL '" + redact(url) + "': " + e.getMessage());
        }
        if (!url.contains("connectTimeout=")) {
            ds.setConnectTimeout(5);
        }
        if (!url.contains("loginTimeout=")) {
            ds.setLoginTimeout(10);
        }
        return ds;
    }

    /** A small HikariCP pool that fails at once (exit 2) if the database cannot be reached. */
    static HikariDataSource pool(String url, String name, int maxSize) {
        HikariConfig c = new HikariConfig();
        c.setJdbcUrl(url);
        c.setPoolName(name);
        // Visible in pg_stat_activity: the demo and chaos runs find a node's backends by it.
        c.addDataSourceProperty("ApplicationName", name);
        c.setMaximumPoolSize(maxSize);
        c.setMinimumIdle(Math.min(2, maxSize));
        c.setConnectionTimeout(5_000);
        c.setValidationTimeout(2_000);
        c.setInitializationFailTimeout(10_000);
        try {
            return new HikariDataSource(c);
        } catch (RuntimeException e) {
            throw unreachable(url, e);
        }
    }

    /** Opens and closes one connection; a failure becomes a "cannot connect" usage error (exit 2). */
    static void probe(DataSource ds, String url) {
        try (Connection c = ds.getConnection()) {
            c.isValid(5);
        } catch (SQLException | RuntimeException e) {
            throw unreachable(url, e);
        }
    }

    static CliException unreachable(String url, Throwable e) {
        return new CliException(Main.EXIT_USAGE, "cannot connect to " + redact(url) + ": " + rootMessage(e), e);
    }

    /** True if {@code t} (or a cause) says the database could not be reached or refused the login. */
    static boolean isConnectionProblem(Throwable t) {
        for (Throwable c = t; c != null; c = c.getCause()) {
            if (c instanceof HikariPool.PoolInitializationException
                    || c instanceof ConnectException
                    || c instanceof UnknownHostException
                    || c instanceof NoRouteToHostException
                    || c instanceof SocketTimeoutException) {
                return true;
            }
            if (c instanceof SQLException s && s.getSQLState() != null) {
                String state = s.getSQLState();
                if (state.startsWith("08")
                        || state.startsWith("28")
                        || state.equals("3D000")
                        || state.equals("53300")
                        || state.equals("57P03")) {
                    return true;
                }
            }
            if (c.getCause() == c) {
                break;
            }
        }
        return false;
    }

    /** The message of the first SQL exception in a cause chain (else of {@code t}), on one line. */
    static String rootMessage(Throwable t) {
        String msg = null;
        for (Throwable c = t; c != null && msg == null; c = c.getCause() == c ? null : c.getCause()) {
            if (c instanceof SQLException
                    && c.getMessage() != null
                    && !c.getMessage().isBlank()) {
                msg = c.getMessage();
                Throwable why = c.getCause();
                if (why != null
                        && !(why instanceof SQLException)
                        && why.getMessage() != null
                        && !msg.contains(why.getMessage())) {
                    msg += " ("
                            + (why instanceof UnknownHostException
                                    ? "unknown host"
                                    : why.getClass().getSimpleName()) + ": " + why.getMessage() + ")";
                }
            }
        }
        if (msg == null) {
            msg = t.getMessage() != null ? t.getMessage() : t.getClass().getSimpleName();
        }
        return msg.replaceAll("\\s+", " ").trim();
    }
}
