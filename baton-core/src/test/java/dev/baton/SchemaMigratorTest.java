package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.baton.internal.db.Jdbc;
import dev.baton.internal.db.Sql;
import dev.baton.internal.schema.SchemaMigrator;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class SchemaMigratorTest extends DbTest {

    @Test
    void manyInstancesMigratingAtOnceApplyEachScriptOnce() throws Exception {
        String fresh = PG.freshSchemaName();
        int instances = 8;
        ExecutorService pool = Executors.newFixedThreadPool(instances);
        try {
            CyclicBarrier start = new CyclicBarrier(instances);
            List<Future<MigrationResult>> results = new ArrayList<>();
            for (int i = 0; i < instances; i++) {
                results.add(pool.submit(() -> {
                    start.await();
                    return Baton.migrate(this.pool, fresh);
                }));
            }
            int applied = 0;
            for (Future<MigrationResult> f : results) {
                MigrationResult r = f.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
                assertThat(r.to()).isEqualTo(Baton.schemaVersion());
                applied += r.applied().size();
            }
            assertThat(applied).as("each script applied once in total").isEqualTo(Baton.schemaVersion());
            assertThat(count("SELECT count(*) FROM " + fresh + ".schema_version"))
                    .isEqualTo(Baton.schemaVersion());
        } finally {
            pool.shutdownNow();
            PG.dropSchema(fresh);
        }
    }

    @Test
    void instanceRefusesSchemaNewerThanItUnderstands() throws Exception {
        try (Connection c = pool.getConnection()) {
            Jdbc.execute(
                    c, "INSERT INTO " + schema + ".schema_version (version, script) VALUES (99, 'V99__future.sql')");
        }
        assertThatThrownBy(() -> Baton.migrate(pool, schema))
                .isInstanceOf(SchemaVersionException.class)
                .hasMessageContaining(
                        "is at version 99, newer than this Baton understands (up to " + Baton.schemaVersion() + ")");
        Baton b = Baton.builder(pool).schema(schema).migrateOnStart(false).build();
        assertThatThrownBy(b::start)
                .isInstanceOf(SchemaVersionException.class)
                .hasMessageContaining("Refusing to start");
        assertThat(count("SELECT count(*) FROM " + schema + ".node"))
                .as("nothing registered")
                .isZero();
    }

    /**
     * Rolling deploys, the schema side: a node of this version started after a newer one migrated the
     * schema runs on it when the newer script says this version can (an additive migration), and is refused
     * when it does not. Protection removed and seen failing: the readable_by check in
     * {@code SchemaMigrator.requireReadable} (any newer schema refused, as before schema 5): the first start
     * failed with "Refusing to start".
     */
    @Test
    void anOlderNodeRunsOnANewerSchemaOnlyWhenTheSchemaSaysItCan() throws Exception {
        int next = Baton.schemaVersion() + 1;
        try (Connection c = pool.getConnection()) {
            Jdbc.execute(
                    c,
                    "INSERT INTO " + schema + ".schema_version (version, script, readable_by) VALUES (" + next + ", 'V"
                            + next + "__additive.sql', " + Baton.schemaVersion() + ")");
        }
        Baton older =
                closeLater(Baton.builder(appPool).schema(schema).nodeId("older").build());
        older.start();
        assertThat(older.jobs()).isNotNull();
        assertThat(count("SELECT count(*) FROM " + schema + ".node WHERE id = 'older'"))
                .isEqualTo(1);

        try (Connection c = pool.getConnection()) {
            Jdbc.execute(
                    c, "UPDATE " + schema + ".schema_version SET readable_by = " + next + " WHERE version = " + next);
        }
        Baton refused = closeLater(
                Baton.builder(appPool).schema(schema).nodeId("refused").build());
        assertThatThrownBy(refused::start)
                .isInstanceOf(SchemaVersionException.class)
                .hasMessageContaining("Refusing to start");
        assertThat(count("SELECT count(*) FROM " + schema + ".node WHERE id = 'refused'"))
                .isZero();
    }

    @Test
    void verifyOnlyStartRefusesUnmigratedSchema() {
        String fresh = PG.freshSchemaName();
        Baton b = Baton.builder(pool).schema(fresh).migrateOnStart(false).build();
        assertThatThrownBy(b::start)
                .isInstanceOf(SchemaVersionException.class)
                .hasMessageContaining("is at version 0 but this Baton needs version " + Baton.schemaVersion());
    }

    /**
     * A role that is not a superuser and cannot create schemas in the database, but owns the Baton
     * schema, can migrate and run. Runs as that role through SET ROLE on each pooled connection,
     * which needs session state: not through a transaction pooler.
     */
    @Test
    void nonSuperuserOwningTheSchemaCanMigrate() throws Exception {
        assumeFalse(PG.pooled(), "SET ROLE per connection is session state, lost under transaction pooling");
        String fresh = PG.freshSchemaName();
        String role = fresh + "_app";
        try (Connection c = pool.getConnection()) {
            Jdbc.execute(c, "CREATE ROLE " + role + " NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE");
            Jdbc.execute(c, "REVOKE CREATE ON DATABASE " + c.getCatalog() + " FROM PUBLIC");
            Jdbc.execute(c, "CREATE SCHEMA " + fresh + " AUTHORIZATION " + role);
        }
        HikariConfig cfg = new HikariConfig();
        cfg.setJdbcUrl(PG.jdbcUrl());
        cfg.setConnectionInitSql("SET ROLE " + role);
        cfg.setMaximumPoolSize(4);
        try (HikariDataSource asApp = new HikariDataSource(cfg)) {
            MigrationResult r = Baton.migrate(asApp, fresh);
            assertThat(r.applied()).isNotEmpty();
            try (Baton baton = Baton.builder(asApp)
                    .schema(fresh)
                    .nodeId("app-node")
                    .build()
                    .start()) {
                assertThat(baton.leases().tryAcquire("x", "app-node", java.time.Duration.ofSeconds(1)))
                        .isPresent();
            }
            assertThatThrownBy(() -> Baton.migrate(asApp, PG.freshSchemaName()))
                    .hasMessageContaining("permission denied");
        } finally {
            PG.dropSchema(fresh);
            try (Connection c = pool.getConnection()) {
                Jdbc.execute(c, "GRANT CREATE ON DATABASE " + c.getCatalog() + " TO PUBLIC");
                Jdbc.execute(c, "DROP ROLE " + role);
            }
        }
    }

    @Test
    void shippedSqlFilesUseOnlyTheSchemaPlaceholder() {
        String sql = Sql.resource("schema/" + SchemaMigrator.SCRIPTS.get(0));
        assertThat(sql).contains("${schema}.lease").doesNotContain("baton.");
    }

    /**
     * The job table's queue check (schema version 13's cheaper form) accepts exactly the names the API accepts:
     * plain SQL writing a job is held to the same rule as {@link JobRequest#QUEUE_NAME}.
     *
     * <p>Protection removed and seen failing: {@code AND length(queue) <= 63} left out of V13's check: the
     * 64-character name was stored.
     */
    @Test
    void theDatabaseAcceptsExactlyTheQueueNamesTheApiAccepts() throws Exception {
        String fresh = PG.freshSchemaName();
        try {
            Baton.migrate(pool, fresh);
            List<String> names = List.of(
                    "a",
                    "default",
                    "a.b_c-9",
                    "0",
                    "a".repeat(63), // accepted
                    "",
                    "A",
                    "-a",
                    ".a",
                    "_a",
                    "a b",
                    "a/b",
                    "caf\u00e9",
                    "a\n",
                    "a".repeat(64)); // refused
            try (Connection c = pool.getConnection()) {
                c.setAutoCommit(true);
                for (String name : names) {
                    boolean api = JobRequest.QUEUE_NAME.matcher(name).matches();
                    boolean db;
                    try (var ps = c.prepareStatement("INSERT INTO " + fresh
                            + ".job (queue, kind, payload, priority, state, run_at, max_attempts)"
                            + " VALUES (?, 'k', '{}', 0, 'available', now(), 1)")) {
                        ps.setString(1, name);
                        ps.executeUpdate();
                        db = true;
                    } catch (java.sql.SQLException e) {
                        assertThat(e.getSQLState()).as("refusal of %s", name).isEqualTo("23514");
                        db = false;
                    }
                    assertThat(db).as("the database on queue name '%s'", name).isEqualTo(api);
                }
            }
            assertThat(names.stream()
                            .filter(n -> JobRequest.QUEUE_NAME.matcher(n).matches()))
                    .hasSize(5);
        } finally {
            PG.dropSchema(fresh);
        }
    }

    /**
     * Schema version 14 moves the idempotency key's uniqueness from a constraint to an index on the keys alone,
     * on a table that already holds keyed and keyless jobs, and an invalid index of the same name (what an
     * interrupted {@code CREATE INDEX CONCURRENTLY} leaves, here on the wrong column) is replaced rather than
     * trusted: after the migration a duplicate key is refused, keyless jobs are not.
     *
     * <p>Protection removed and seen failing: V14's DO block (the check of an existing index's validity and
     * definition): the leftover stayed, the constraint went, and the duplicate key was stored.
     */
    @Test
    void J10_version14HoldsTheKeysUniqueThroughAnIndexAndReplacesAnInvalidOne() throws Exception {
        String fresh = PG.freshSchemaName();
        try {
            SchemaMigrator.migrate(pool, fresh, 13);
            try (Connection c = pool.getConnection()) {
                c.setAutoCommit(true);
                Jdbc.execute(
                        c,
                        "INSERT INTO " + fresh + ".job (queue, kind, payload, priority, state, run_at, "
                                + "max_attempts, idempotency_key) SELECT 'q1', 'k', '{}', 0, 'available', now(), 1, "
                                + "CASE WHEN i % 2 = 0 THEN 'key-' || i END FROM generate_series(1, 10) i");
                // Two keyed jobs share queue q1, so this unique build fails and leaves an invalid index behind.
                assertThatThrownBy(() -> Jdbc.execute(
                                c,
                                "CREATE UNIQUE INDEX CONCURRENTLY job_idempotency_key ON " + fresh
                                        + ".job (queue) WHERE idempotency_key IS NOT NULL"))
                        .hasMessageContaining("could not create unique index");
            }
            assertThat(count("SELECT count(*) FROM pg_index WHERE indexrelid = to_regclass('" + fresh
                            + ".job_idempotency_key') AND NOT indisvalid"))
                    .as("the invalid leftover, before")
                    .isOne();

            MigrationResult r = SchemaMigrator.migrate(pool, fresh, 14);
            assertThat(r.applied()).containsExactly("V14__idempotency_index_on_keys.sql");

            assertThat(count("SELECT count(*) FROM " + fresh + ".job")).isEqualTo(10);
            try (Connection c = pool.getConnection()) {
                c.setAutoCommit(true);
                String insert = "INSERT INTO " + fresh + ".job (queue, kind, payload, priority, state, run_at, "
                        + "max_attempts, idempotency_key) VALUES ('q2', 'k', '{}', 0, 'available', now(), 1, ?)";
                assertThatThrownBy(() -> {
                            try (var ps = c.prepareStatement(insert)) {
                                ps.setString(1, "key-4");
                                ps.executeUpdate();
                            }
                        })
                        .isInstanceOfSatisfying(
                                java.sql.SQLException.class,
                                e -> assertThat(e.getSQLState()).isEqualTo("23505"));
                for (int i = 0; i < 2; i++) {
                    try (var ps = c.prepareStatement(insert)) {
                        ps.setString(1, null);
                        assertThat(ps.executeUpdate()).as("a keyless job").isOne();
                    }
                }
            }
            assertThat(indexDefinition(fresh))
                    .endsWith("USING btree (idempotency_key) WHERE (idempotency_key IS NOT NULL)");
            assertThat(uniqueConstraintsOfTheJobTable(fresh))
                    .as("the unique constraint is gone")
                    .isZero();
        } finally {
            PG.dropSchema(fresh);
        }
    }

    /**
     * The way to skip the write-blocking build on a large job table: the index built beforehand with the
     * statement in V14's header (concurrently, writes going on) is kept, not built again.
     */
    @Test
    void version14KeepsTheIndexAnOperatorBuiltConcurrentlyBeforehand() throws Exception {
        String fresh = PG.freshSchemaName();
        try {
            SchemaMigrator.migrate(pool, fresh, 13);
            try (Connection c = pool.getConnection()) {
                c.setAutoCommit(true);
                Jdbc.execute(
                        c,
                        "CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS job_idempotency_key ON " + fresh
                                + ".job (idempotency_key) WHERE idempotency_key IS NOT NULL");
            }
            long before = count("SELECT to_regclass('" + fresh + ".job_idempotency_key')::oid::bigint");

            Baton.migrate(pool, fresh);

            assertThat(count("SELECT to_regclass('" + fresh + ".job_idempotency_key')::oid::bigint"))
                    .as("the same index")
                    .isEqualTo(before);
            assertThat(uniqueConstraintsOfTheJobTable(fresh)).isZero();
        } finally {
            PG.dropSchema(fresh);
        }
    }

    /**
     * Version 15 has autovacuum visit the job table after 1 % of its rows died, not 20 % (decision 0033), and
     * keeps a value an operator set on that table before. Removing the script's check for an existing value
     * (setting 0.01 always) failed the second half: the operator's 0.05 was overwritten.
     */
    @Test
    void version15SetsTheJobTablesAutovacuumScaleFactorAndKeepsAnOperatorsOwn() throws Exception {
        String fresh = PG.freshSchemaName();
        String tuned = PG.freshSchemaName();
        try {
            Baton.migrate(pool, fresh);
            assertThat(jobTableOptions(fresh)).containsExactly("autovacuum_vacuum_scale_factor=0.01");

            SchemaMigrator.migrate(pool, tuned, 14);
            try (Connection c = pool.getConnection()) {
                c.setAutoCommit(true);
                Jdbc.execute(
                        c,
                        "ALTER TABLE " + tuned + ".job SET (autovacuum_vacuum_scale_factor = 0.05, fillfactor = 90)");
            }
            Baton.migrate(pool, tuned);
            assertThat(jobTableOptions(tuned))
                    .containsExactlyInAnyOrder("autovacuum_vacuum_scale_factor=0.05", "fillfactor=90");
        } finally {
            PG.dropSchema(fresh);
            PG.dropSchema(tuned);
        }
    }

    @Test
    void migratingToAVersionThisBatonDoesNotKnowIsRefused() {
        assertThatThrownBy(() -> SchemaMigrator.migrate(pool, schema, Baton.schemaVersion() + 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("target schema version must be between 1 and " + Baton.schemaVersion() + ", but was "
                        + (Baton.schemaVersion() + 1));
    }

    private List<String> jobTableOptions(String schema) throws Exception {
        try (Connection c = pool.getConnection();
                var ps = c.prepareStatement(
                        "SELECT coalesce(reloptions, '{}') FROM pg_class WHERE oid = to_regclass(? || '.job')")) {
            ps.setString(1, schema);
            try (var rs = ps.executeQuery()) {
                rs.next();
                return List.of((String[]) rs.getArray(1).getArray());
            }
        }
    }

    private long uniqueConstraintsOfTheJobTable(String schema) throws Exception {
        return count(
                "SELECT count(*) FROM pg_constraint WHERE conrelid = '" + schema + ".job'::regclass AND contype = 'u'");
    }

    private String indexDefinition(String schema) throws Exception {
        try (Connection c = pool.getConnection();
                var ps = c.prepareStatement("SELECT pg_get_indexdef(i.indexrelid) FROM pg_index i"
                        + " WHERE i.indexrelid = to_regclass(?) AND i.indisvalid AND i.indisunique")) {
            ps.setString(1, schema + ".job_idempotency_key");
            try (var rs = ps.executeQuery()) {
                assertThat(rs.next())
                        .as("a valid unique index job_idempotency_key")
                        .isTrue();
                return rs.getString(1);
            }
        }
    }
}
