package dev.baton.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.Baton;
import dev.baton.LeaseGrant;
import dev.baton.testkit.BatonPostgres;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class StatusCommandTest {
    @RegisterExtension
    static final BatonPostgres PG = new BatonPostgres();

    private String schema;

    @BeforeEach
    void freshSchema() {
        schema = PG.freshSchemaName();
    }

    @AfterEach
    void dropSchema() {
        PG.dropSchema(schema);
    }

    @Test
    void printsLeasesWithOwnerGenerationAndNodesWithRoles() {
        Baton.migrate(PG.dataSource(), schema);
        try (Baton owner = Baton.builder(PG.dataSource()).schema(schema).nodeId("node-a").build().start();
             Baton idle = Baton.builder(PG.dataSource()).schema(schema).nodeId("node-b").build().start()) {
            LeaseGrant grant = owner.leases().tryAcquire("orders-sweep", "node-a", Duration.ofMinutes(5)).orElseThrow();
            owner.leases().tryAcquire("released-one", "node-b", Duration.ofMinutes(5))
                    .ifPresent(g -> idle.leases().release(g));

            CliRun r = CliRun.of("status", "--jdbc-url", PG.jdbcUrl(), "--schema", schema);
            assertThat(r.exitCode()).as(r.toString()).isZero();
            assertThat(r.out()).contains("LEASES (2)").contains("NODES (2)");
            assertThat(lineWith(r.out(), "orders-sweep")).contains("node-a").contains(" " + grant.generation() + " ")
                    .contains("held").containsPattern("\\d+(\\.\\d)? (s|m)");
            assertThat(lineWith(r.out(), "released-one")).contains("free (released)");
            assertThat(nodeLine(r.out(), "node-a")).contains("CURRENT_OWNER").contains("orders-sweep");
            assertThat(nodeLine(r.out(), "node-b")).contains("ACTIVE");

            CliRun json = CliRun.of("status", "--jdbc-url", PG.jdbcUrl(), "--schema", schema, "--json");
            assertThat(json.exitCode()).as(json.toString()).isZero();
            assertThat(json.out()).contains("\"name\": \"orders-sweep\"").contains("\"authorizedOwner\": \"node-a\"")
                    .contains("\"generation\": " + grant.generation()).contains("\"role\": \"CURRENT_OWNER\"")
                    .contains("\"authorizedOwner\": null");
        }
        CliRun after = CliRun.of("status", "--jdbc-url", PG.jdbcUrl(), "--schema", schema);
        // node-b stopped cleanly and owns nothing; node-a's directly acquired lease outlives its Baton until it expires.
        assertThat(nodeLine(after.out(), "node-b")).contains("HISTORICAL").contains("stopped");
        assertThat(nodeLine(after.out(), "node-a")).contains("CURRENT_OWNER").contains("stopped");
    }

    @Test
    void schemaWithoutBatonTablesExitsWith2() {
        CliRun r = CliRun.of("status", "--jdbc-url", PG.jdbcUrl(), "--schema", schema);
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
        assertThat(r.err()).contains("schema '" + schema + "' has no Baton tables").contains("baton migrate");
    }

    @Test
    void unreachableDatabaseExitsWith2() {
        CliRun r = CliRun.of("status", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/postgres?user=postgres");
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
        assertThat(r.err()).contains("cannot connect");
    }

    /** The node table's row of {@code id} (the first column, below the NODES heading). */
    private static String nodeLine(String text, String id) {
        String nodes = text.substring(text.indexOf("NODES ("));
        return nodes.lines().filter(l -> l.startsWith("  " + id + " ")).findFirst()
                .orElseThrow(() -> new AssertionError("no node row '" + id + "' in:\n" + text));
    }

    private static String lineWith(String text, String needle) {
        return text.lines().filter(l -> l.contains(needle)).findFirst()
                .orElseThrow(() -> new AssertionError("no line with '" + needle + "' in:\n" + text));
    }
}
