package dev.baton.internal.schema;

import dev.baton.BatonException;
import dev.baton.MigrationResult;
import dev.baton.SchemaVersionException;
import dev.baton.internal.db.Db;
import dev.baton.internal.db.Identifiers;
import dev.baton.internal.db.Jdbc;
import dev.baton.internal.db.Sql;
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
public final class SchemaMigrator {
    /** The scripts, in order; the newest version this Baton understands is their count. */
    public static final List<String> SCRIPTS = List.of(
            "V1__leases_and_nodes.sql",
            "V2__jobs.sql",
            "V3__coordination.sql",
            "V4__schedules.sql",
            "V5__envelope.sql",
            "V6__revocations_and_grants.sql",
            "V7__job_metadata.sql",
            "V8__job_limits.sql",
            "V9__job_uniqueness.sql",
            "V10__runtime_schedules.sql",
            "V11__key_order.sql",
            "V12__operator_controls.sql",
            "V13__cheaper_queue_check.sql",
            "V14__idempotency_index_on_keys.sql",
            "V15__job_autovacuum_follows_the_work.sql");

    public static final int CURRENT_VERSION = SCRIPTS.size();
    /**
     * Per script, the oldest schema version whose code can still run against the schema it leaves (an
     * additive script keeps the previous version's code working), so that a node of an older version
     * started during a rolling deploy is not refused a schema it can use. Recorded from version 5 on and
     * read by code of version 5 and later: code before version 5 refuses any newer schema, and version 5
     * itself needs version 5 code (older code would create a pruned lease again at generation 1). Version 14
     * needs version 13 code, the first whose idempotency statements name the predicate of version 14's index;
     * version 15 only changes the job table's autovacuum setting.
     */
    public static final List<Integer> READABLE_BY = List.of(1, 2, 3, 4, 5, 5, 5, 5, 5, 5, 5, 5, 5, 13, 13);

    private SchemaMigrator() {}

    public static MigrationResult migrate(DataSource dataSource, String schema) {
        return migrate(dataSource, schema, CURRENT_VERSION);
    }

    /**
     * Migrates up to {@code target} only, leaving the schema as an older release would: for upgrade tests.
     * Refuses a target this Baton does not know.
     */
    public static MigrationResult migrate(DataSource dataSource, String schema, int target) {
        if (target < 1 || target > CURRENT_VERSION) {
            throw new IllegalArgumentException(
                    "target schema version must be between 1 and " + CURRENT_VERSION + ", but was " + target);
        }
        String quoted = Identifiers.schema(schema);
        try {
            // READ COMMITTED (Db): after the lock is granted, the version read must see the commit of an
            // instance that migrated while we waited; a REPEATABLE READ snapshot would not.
            return Db.of(dataSource).transaction("the migration of schema '" + schema + "'", c -> {
                try (PreparedStatement ps = c.prepareStatement("SELECT pg_advisory_xact_lock(hashtext(?))")) {
                    ps.setString(1, "baton.migrate:" + schema);
                    ps.execute();
                }
                if (!schemaExists(c, schema)) {
                    Jdbc.execute(c, "CREATE SCHEMA " + quoted);
                }
                Jdbc.execute(
                        c,
                        "CREATE TABLE IF NOT EXISTS " + quoted + ".schema_version ("
                                + "version int PRIMARY KEY, script text NOT NULL, "
                                + "applied_at timestamptz NOT NULL DEFAULT clock_timestamp(), applied_by text)");
                int found = installedVersion(c, quoted);
                if (found > CURRENT_VERSION) {
                    requireReadable(c, schema, quoted, found);
                    return new MigrationResult(schema, found, found, List.of());
                }
                List<String> applied = new ArrayList<>();
                for (int v = found + 1; v <= target; v++) {
                    String script = SCRIPTS.get(v - 1);
                    Jdbc.execute(c, Sql.resource("schema/" + script).replace("${schema}", quoted));
                    boolean readableBy = v >= 5; // the column exists from version 5 on
                    try (PreparedStatement ps = c.prepareStatement("INSERT INTO " + quoted
                            + ".schema_version (version, script, applied_by" + (readableBy ? ", readable_by" : "")
                            + ") VALUES (?, ?, current_user" + (readableBy ? ", ?" : "") + ")")) {
                        ps.setInt(1, v);
                        ps.setString(2, script);
                        if (readableBy) {
                            ps.setInt(3, READABLE_BY.get(v - 1));
                        }
                        ps.executeUpdate();
                    }
                    applied.add(script);
                }
                return new MigrationResult(schema, found, Math.max(found, target), List.copyOf(applied));
            });
        } catch (SQLException e) {
            throw new BatonException(
                    "migrating Baton schema '" + schema + "' failed: " + e.getMessage()
                            + (e.getSQLState() != null && e.getSQLState().equals("42501")
                                    ? " (permission denied: create the schema for this role first, e.g. CREATE SCHEMA "
                                            + schema + " AUTHORIZATION <role>)"
                                    : ""),
                    e);
        }
    }

    /** Checks that the schema is installed at exactly the version this Baton understands. */
    public static void verify(DataSource dataSource, String schema) {
        String quoted = Identifiers.schema(schema);
        try {
            Db.of(dataSource).call("checking schema '" + schema + "'", c -> {
                int found = 0;
                if (tableExists(c, schema, "schema_version")) {
                    found = installedVersion(c, quoted);
                }
                if (found > CURRENT_VERSION) {
                    requireReadable(c, schema, quoted, found);
                } else if (found < CURRENT_VERSION) {
                    throw new SchemaVersionException(
                            "Baton schema '" + schema + "' is at version " + found + " but "
                                    + "this Baton needs version " + CURRENT_VERSION
                                    + "; run the migration (Baton.migrate, "
                                    + "`baton migrate`, or the shipped SQL files) or enable migrate-on-start",
                            found,
                            CURRENT_VERSION);
                }
                return null;
            });
        } catch (SQLException e) {
            throw Db.failed("checking Baton schema '" + schema + "'", e);
        }
    }

    /**
     * A schema newer than this Baton is used as it is if its newest version says this Baton's code can
     * still run against it (an additive migration); otherwise start-up is refused.
     */
    private static void requireReadable(Connection c, String schema, String quoted, int found) throws SQLException {
        Integer readableBy = null;
        if (columnExists(c, schema, "schema_version", "readable_by")) {
            try (PreparedStatement ps =
                    c.prepareStatement("SELECT readable_by FROM " + quoted + ".schema_version WHERE version = ?")) {
                ps.setInt(1, found);
                try (ResultSet rs = ps.executeQuery()) {
                    if (rs.next()) {
                        int v = rs.getInt(1);
                        readableBy = rs.wasNull() ? null : v;
                    }
                }
            }
        }
        if (readableBy == null || readableBy > CURRENT_VERSION) {
            throw tooNew(schema, found);
        }
        org.slf4j.LoggerFactory.getLogger(SchemaMigrator.class)
                .warn(
                        "Baton schema '{}' is at version {}, newer than "
                                + "this Baton ({}); it declares itself usable by version {} and up, so this node runs on it. Upgrade "
                                + "this node when the rollout allows",
                        schema,
                        found,
                        CURRENT_VERSION,
                        readableBy);
    }

    private static boolean columnExists(Connection c, String schema, String table, String column) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT 1 FROM information_schema.columns "
                + "WHERE table_schema = ? AND table_name = ? AND column_name = ?")) {
            ps.setString(1, schema);
            ps.setString(2, table);
            ps.setString(3, column);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }

    private static SchemaVersionException tooNew(String schema, int found) {
        return new SchemaVersionException(
                "Baton schema '" + schema + "' is at version " + found + ", newer than this "
                        + "Baton understands (up to " + CURRENT_VERSION
                        + "). Refusing to start: upgrade Baton on this node, "
                        + "or point it at another schema",
                found,
                CURRENT_VERSION);
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
        try (PreparedStatement ps =
                        c.prepareStatement("SELECT coalesce(max(version), 0) FROM " + quoted + ".schema_version");
                ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getInt(1);
        }
    }
}
