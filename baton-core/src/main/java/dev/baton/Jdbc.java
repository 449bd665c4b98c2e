package dev.baton;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;

/** Small JDBC helpers shared by Baton's services. */
final class Jdbc {
    private Jdbc() {}

    /**
     * True when an exception means the connection (or the server behind it) failed, so the outcome
     * of a statement in flight, a COMMIT above all, is unknown rather than failed: SQLSTATE class 08
     * (connection exception) and 57P01..57P03 (the server terminated the backend or is shutting down).
     */
    static boolean isConnectionFailure(SQLException e) {
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

    static void rollbackQuietly(Connection c, Throwable primary) {
        try {
            if (!c.isClosed() && !c.getAutoCommit()) {
                c.rollback();
            }
        } catch (SQLException e) {
            primary.addSuppressed(e);
        }
    }

    static void closeQuietly(AutoCloseable c) {
        if (c != null) {
            try {
                c.close();
            } catch (Exception ignored) {
                // Nothing useful to do: the resource is being discarded.
            }
        }
    }

    static void execute(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    /**
     * Bounds a statement on the server side too (PgJDBC sends a cancel request when it expires), so a
     * statement the caller has given up on does not run on later, e.g. once a lock it waits for frees.
     */
    static void queryTimeout(Statement s, long millis) throws SQLException {
        if (millis <= 0) {
            return;
        }
        if (s.isWrapperFor(org.postgresql.jdbc.PgStatement.class)) {
            s.unwrap(org.postgresql.jdbc.PgStatement.class).setQueryTimeoutMs(millis);
        } else {
            s.setQueryTimeout((int) Math.max(1, (millis + 999) / 1000));
        }
    }
}
