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
}
