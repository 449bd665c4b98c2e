package dev.baton.internal.db;

import dev.baton.UnknownOutcomeException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.sql.Timestamp;
import java.time.Instant;

/** Small JDBC helpers shared by Baton's services. */
public final class Jdbc {
    private Jdbc() {}

    /**
     * True when an exception means the connection (or the server behind it) failed, so the outcome
     * of a statement in flight, a COMMIT above all, is unknown rather than failed: SQLSTATE class 08
     * (connection exception) and 57P01..57P03 (the server terminated the backend or is shutting down).
     */
    public static boolean isConnectionFailure(SQLException e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof SQLException s && s.getSQLState() != null) {
                String state = s.getSQLState();
                if (state.startsWith("08") || state.startsWith("57P")) {
                    return true;
                }
            }
            if (t instanceof java.io.IOException) {
                return true;
            }
        }
        return false;
    }

    /**
     * Commits, reporting a connection failure during COMMIT as {@link UnknownOutcomeException} (the
     * transaction may or may not have committed), never as a plain failure.
     *
     * @param what names the transaction in the message ("a fenced write for …")
     * @param hint appended to the message: what the caller can do about it (may be empty)
     */
    public static void commit(Connection c, String what, String hint) throws SQLException {
        try {
            c.commit();
        } catch (SQLException e) {
            if (isConnectionFailure(e)) {
                throw new UnknownOutcomeException(
                        "the connection failed during COMMIT of " + what + "; it may or may not have committed" + hint
                                + " (" + e.getMessage() + ")",
                        e);
            }
            throw e;
        }
    }

    public static void rollbackQuietly(Connection c, Throwable primary) {
        try {
            if (!c.isClosed() && !c.getAutoCommit()) {
                c.rollback();
            }
        } catch (SQLException e) {
            primary.addSuppressed(e);
        }
    }

    public static void closeQuietly(AutoCloseable c) {
        if (c != null) {
            try {
                c.close();
            } catch (Exception ignored) {
                // Nothing useful to do: the resource is being discarded.
            }
        }
    }

    /** Sends {@code payload} on {@code channel}; PostgreSQL delivers it when the transaction commits. */
    public static void notify(Connection c, String channel, String payload) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_notify(?, ?)")) {
            ps.setString(1, channel);
            ps.setString(2, payload);
            ps.execute();
        }
    }

    public static void execute(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    /**
     * Bounds a statement on the server side too (PgJDBC sends a cancel request when it expires), so a
     * statement the caller has given up on does not run on later, e.g. once a lock it waits for frees.
     * The cancel request travels on a new connection; prefer {@link #prepareBounded} where possible.
     */
    /** Prefix that sets a transaction-local statement timeout for the statement that follows. */
    private static final String BOUND_PREFIX = "SELECT set_config('statement_timeout', ?, true);\n";

    /**
     * Prepares {@code sql} so that the server itself abandons it after {@code millis} (when positive):
     * a transaction-local {@code statement_timeout} is set by a first statement sent in the same
     * round trip and the same implicit transaction. A client that gave up waiting (and aborted its
     * connection) can then be sure the statement does not commit later, e.g. once a lock it queued
     * for is released. In an explicit transaction the setting lasts until that transaction ends: use it
     * only in Baton's own transactions, never on a caller's connection. Bind the statement's own parameters from index
     * {@code 1 + boundOffset(millis)} and read its results with {@link #executeBounded}.
     */
    public static PreparedStatement prepareBounded(Connection c, String sql, long millis) throws SQLException {
        if (millis <= 0) {
            return c.prepareStatement(sql);
        }
        PreparedStatement ps = c.prepareStatement(BOUND_PREFIX + sql);
        ps.setString(1, millis + "ms");
        return ps;
    }

    public static int boundOffset(long millis) {
        return millis > 0 ? 1 : 0;
    }

    /** Executes a statement from {@link #prepareBounded} and returns the result set of the real statement. */
    public static java.sql.ResultSet executeBounded(PreparedStatement ps, long millis) throws SQLException {
        ps.execute();
        if (millis > 0) {
            ps.getMoreResults();
        }
        return ps.getResultSet();
    }

    public static void queryTimeout(Statement s, long millis) throws SQLException {
        if (millis <= 0) {
            return;
        }
        if (s.isWrapperFor(org.postgresql.jdbc.PgStatement.class)) {
            s.unwrap(org.postgresql.jdbc.PgStatement.class).setQueryTimeoutMs(millis);
        } else {
            s.setQueryTimeout((int) Math.max(1, (millis + 999) / 1000));
        }
    }

    /** The timestamp in {@code column}, which must not be null. */
    public static Instant instant(ResultSet rs, String column) throws SQLException {
        Instant i = instantOrNull(rs, column);
        if (i == null) {
            throw new SQLException("column " + column + " is unexpectedly null");
        }
        return i;
    }

    /** The timestamp in {@code column}, or null. */
    public static Instant instantOrNull(ResultSet rs, String column) throws SQLException {
        Timestamp t = rs.getTimestamp(column);
        return t == null ? null : t.toInstant();
    }
}
