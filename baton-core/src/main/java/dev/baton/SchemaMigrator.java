package dev.baton;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import javax.sql.DataSource;

/**
 * Applies Baton's versioned SQL ({@code dev/baton/schema/V<n>__*.sql}) in one transaction under a
 * transaction-scoped advisory lock, so any number of instances may start at once: the first applies,
 * the others wait for its commit and find nothing to do. No session state is used, so this works
 * through PgBouncer in transaction mode. A schema the application role already owns is used as is
 * (no database-level CREATE privilege needed).
 */
final class SchemaMigrator {
    /** The scripts, in order; the newest version this Baton understands is their count. */
    static final List<String> SCRIPTS = List.of("V1__leases_and_nodes.sql", "V2__jobs.sql", "V3__coordination.sql",
            "V4__schedules.sql");
    static final int CURRENT_VERSION = SCRIPTS.size();

    private SchemaMigrator() {}

    static MigrationResult migrate(DataSource dataSource, String schema) {
        String quoted = Identifiers.schema(schema);
        try (Connection c = dataSource.getConnection()) {
            boolean autoCommit = c.getAutoCommit();
            c.setAutoCommit(false);
            try {
                try (PreparedStatement ps = c.prepareStatement("SELECT pg_advisory_xact_lock(hashtext(?))")) {
                    ps.setString(1, "baton.migrate:" + schema);
                    ps.execute();
                }
                if (!schemaExists(c, schema)) {
                    Jdbc.execute(c, "CREATE SCHEMA " + quoted);
                }
                Jdbc.execute(c, "CREATE TABLE IF NOT EXISTS " + quoted + ".schema_version ("
                        + "version int PRIMARY KEY, script text NOT NULL, "
                        + "applied_at timestamptz NOT NULL DEFAULT clock_timestamp(), applied_by text)");
                int found = installedVersion(c, quoted);
                if (found > CURRENT_VERSION) {
                    throw tooNew(schema, found);
                }
                List<String> applied = new ArrayList<>();
                for (int v = found + 1; v <= CURRENT_VERSION; v++) {
                    String script = SCRIPTS.get(v - 1);
                    Jdbc.execute(c, Sql.resource("schema/" + script).replace("${schema}", quoted));
                    try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + quoted
                            + ".schema_version (version, script, applied_by) VALUES (?, ?, current_user)")) {
                        ps.setInt(1, v);
                        ps.setString(2, script);
                        ps.executeUpdate();
                    }
                    applied.add(script);
                }
                c.commit();
                return new MigrationResult(schema, found, CURRENT_VERSION, List.copyOf(applied));
            } catch (Throwable t) {
                Jdbc.rollbackQuietly(c, t);
                throw t;
            } finally {
                if (autoCommit && !c.isClosed()) {
                    c.setAutoCommit(true);
                }
            }
        } catch (SQLException e) {
            throw new BatonException("migrating Baton schema '" + schema + "' failed: " + e.getMessage()
                    + (e.getSQLState() != null && e.getSQLState().equals("42501")
                    ? " (permission denied: create the schema for this role first, e.g. CREATE SCHEMA " + schema
                    + " AUTHORIZATION <role>)" : ""), e);
        }
    }

    /** Checks that the schema is installed at exactly the version this Baton understands. */
    static void verify(DataSource dataSource, String schema) {
        String quoted = Identifiers.schema(schema);
        try (Connection c = dataSource.getConnection()) {
            int found = 0;
            if (tableExists(c, schema, "schema_version")) {
                found = installedVersion(c, quoted);
            }
            if (found > CURRENT_VERSION) {
                throw tooNew(schema, found);
            }
            if (found < CURRENT_VERSION) {
                throw new SchemaVersionException("Baton schema '" + schema + "' is at version " + found + " but this "
                        + "Baton needs version " + CURRENT_VERSION + "; run the migration (Baton.migrate, "
                        + "`baton migrate`, or the shipped SQL files) or enable migrate-on-start",
                        found, CURRENT_VERSION);
            }
        } catch (SQLException e) {
            throw new BatonException("checking Baton schema '" + schema + "' failed: " + e.getMessage(), e);
        }
    }

    private static SchemaVersionException tooNew(String schema, int found) {
        return new SchemaVersionException("Baton schema '" + schema + "' is at version " + found + ", newer than this "
                + "Baton understands (up to " + CURRENT_VERSION + "). Refusing to start: upgrade Baton on this node, "
                + "or point it at another schema", found, CURRENT_VERSION);
    }

    private static boolean schemaExists(Connection c, String schema) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT 1 FROM pg_namespace WHERE nspname = ?")) {
            ps.setString(1, schema);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }

    private static boolean tableExists(Connection c, String schema, String table) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT to_regclass(?) IS NOT NULL")) {
            ps.setString(1, '"' + schema + "\"." + table);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getBoolean(1);
            }
        }
    }

    private static int installedVersion(Connection c, String quoted) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT coalesce(max(version), 0) FROM " + quoted + ".schema_version");
             ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getInt(1);
        }
    }
}
