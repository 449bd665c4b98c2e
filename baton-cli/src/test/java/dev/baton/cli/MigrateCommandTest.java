package dev.baton.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.Baton;
import dev.baton.testkit.BatonPostgres;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class MigrateCommandTest {
    @RegisterExtension
    static final BatonPostgres PG = new BatonPostgres();

    @Test
    void migratesAFreshSchemaThenFindsNothingToDo() throws Exception {
        String schema = PG.freshSchemaName();
        try {
            CliRun first = CliRun.of("migrate", "--jdbc-url", PG.jdbcUrl(), "--schema", schema);
            assertThat(first.exitCode()).as(first.toString()).isZero();
            assertThat(first.out())
                    .contains("schema '" + schema + "': migrated from version 0 to " + Baton.schemaVersion())
                    .contains("applied V1__");

            try (Connection c = PG.connect();
                    Statement s = c.createStatement();
                    ResultSet rs = s.executeQuery("SELECT max(version) FROM " + schema + ".schema_version")) {
                rs.next();
                assertThat(rs.getInt(1)).isEqualTo(Baton.schemaVersion());
            }

            CliRun again = CliRun.of("migrate", "--jdbc-url", PG.jdbcUrl(), "--schema", schema);
            assertThat(again.exitCode()).as(again.toString()).isZero();
            assertThat(again.out()).contains("already at version " + Baton.schemaVersion() + ", nothing to apply");
        } finally {
            PG.dropSchema(schema);
        }
    }

    @Test
    void unreachableDatabaseExitsWith2() {
        // Port 1 on the loopback: nothing listens there, so the connection is refused at once.
        CliRun r = CliRun.of(
                "migrate",
                "--jdbc-url",
                "jdbc:postgresql://127.0.0.1:1/postgres?user=postgres&password=hunter2&connectTimeout=3");
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
        assertThat(r.err())
                .contains("cannot connect to jdbc:postgresql://127.0.0.1:1/postgres")
                .doesNotContain("hunter2");
        assertThat(r.out()).isEmpty();
    }

    @Test
    void notAPostgresUrlIsAUsageError() {
        CliRun r = CliRun.of("migrate", "--jdbc-url", "jdbc:mysql://localhost/x");
        assertThat(r.exitCode()).isEqualTo(2);
        assertThat(r.err()).contains("must be a PostgreSQL JDBC URL");
    }

    @Test
    void invalidSchemaNameIsAUsageError() {
        CliRun r = CliRun.of("migrate", "--jdbc-url", PG.jdbcUrl(), "--schema", "Bad-Name");
        assertThat(r.exitCode()).isEqualTo(2);
        assertThat(r.err()).contains("--schema must be lower-case");
    }
}
