package dev.baton.test;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.regex.Pattern;
import javax.sql.DataSource;

/** The helpers' few reads of Baton's tables: quoting and one read on a borrowed connection. */
final class SqlNames {
    /** The schema names Baton accepts are plain lower-case identifiers; anything else is refused here too. */
    private static final Pattern IDENTIFIER = Pattern.compile("[a-z_][a-z0-9_]{0,62}");

    private SqlNames() {}

    /** A connection's work. */
    interface Read<T> {
        T apply(Connection c) throws SQLException;
    }

    static String table(String schema, String table) {
        if (!IDENTIFIER.matcher(schema).matches()) {
            throw new IllegalArgumentException(
                    "schema must be a lower-case SQL identifier ([a-z_][a-z0-9_]*, at most 63), but was '" + schema
                            + "'");
        }
        return '"' + schema + "\"." + table;
    }

    /**
     * Runs {@code read} on a connection of {@code dataSource}. A pool set to {@code autoCommit=false} opened
     * a transaction for it: it is rolled back (nothing was written), so no transaction is left open.
     */
    static <T> T read(DataSource dataSource, String what, Read<T> read) {
        try (Connection c = dataSource.getConnection()) {
            try {
                return read.apply(c);
            } finally {
                if (!c.getAutoCommit()) {
                    c.rollback();
                }
            }
        } catch (SQLException e) {
            throw new IllegalStateException(what + " failed: " + e.getMessage(), e);
        }
    }
}
