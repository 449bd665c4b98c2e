package dev.baton.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.Baton;
import dev.baton.LeaseGrant;
import dev.baton.Schedule;
import dev.baton.WorkerConfig;
import dev.baton.testkit.BatonPostgres;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
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
        try (Baton owner = Baton.builder(PG.dataSource())
                        .schema(schema)
                        .nodeId("node-a")
                        .build()
                        .start();
                Baton idle = Baton.builder(PG.dataSource())
                        .schema(schema)
                        .nodeId("node-b")
                        .build()
                        .start()) {
            LeaseGrant grant = owner.leases()
                    .tryAcquire("orders-sweep", "node-a", Duration.ofMinutes(5))
                    .orElseThrow();
            owner.leases()
                    .tryAcquire("released-one", "node-b", Duration.ofMinutes(5))
                    .ifPresent(g -> idle.leases().release(g));

            CliRun r = CliRun.of("status", "--jdbc-url", PG.jdbcUrl(), "--schema", schema);
            assertThat(r.exitCode()).as(r.toString()).isZero();
            // The leases held now (the application's and Baton's own maintenance lease); released ones are not.
            assertThat(r.out()).contains("LEASES (2)").contains("NODES (2)").doesNotContain("released-one");
            assertThat(lineWith(r.out(), "orders-sweep"))
                    .contains("node-a")
                    .contains(" " + grant.generation() + " ")
                    .contains("held")
                    .containsPattern("\\d+(\\.\\d)? (s|m)");
            assertThat(nodeLine(r.out(), "node-a")).contains("CURRENT_OWNER").contains("orders-sweep");
            assertThat(nodeLine(r.out(), "node-b")).contains("ACTIVE");

            CliRun json = CliRun.of("status", "--jdbc-url", PG.jdbcUrl(), "--schema", schema, "--json");
            assertThat(json.exitCode()).as(json.toString()).isZero();
            assertThat(json.out())
                    .contains("\"name\": \"orders-sweep\"")
                    .contains("\"authorizedOwner\": \"node-a\"")
                    .contains("\"generation\": " + grant.generation())
                    .contains("\"role\": \"CURRENT_OWNER\"");
        }
        CliRun after = CliRun.of("status", "--jdbc-url", PG.jdbcUrl(), "--schema", schema);
        // node-b stopped cleanly and owns nothing; node-a's directly acquired lease outlives its Baton until it
        // expires.
        assertThat(nodeLine(after.out(), "node-b")).contains("HISTORICAL").contains("stopped");
        assertThat(nodeLine(after.out(), "node-a")).contains("CURRENT_OWNER").contains("stopped");
    }

    /**
     * A node of a retired version shows as RETIRED with the control that holds it, its version and running
     * jobs; the standing controls are listed (text and JSON), as on the actuator endpoint.
     */
    @Test
    void showsRetiredNodesAndTheStandingControls() {
        Baton.migrate(PG.dataSource(), schema);
        try (Baton old = Baton.builder(PG.dataSource())
                        .schema(schema)
                        .nodeId("node-v1")
                        .application("shop", "1")
                        .nodeHeartbeat(Duration.ofMillis(200))
                        .build()
                        .start();
                Baton current = Baton.builder(PG.dataSource())
                        .schema(schema)
                        .nodeId("node-v2")
                        .application("shop", "2")
                        .build()
                        .start()) {
            current.controls().retireVersion("shop", "1", "ops-alice", "moved to 2");
            // Until its next heartbeat the retired node may still lead maintenance (CURRENT_OWNER).
            org.awaitility.Awaitility.await()
                    .atMost(Duration.ofSeconds(20))
                    .until(() -> nodeLine(
                                    CliRun.of("status", "--jdbc-url", PG.jdbcUrl(), "--schema", schema)
                                            .out(),
                                    "node-v1")
                            .contains("RETIRED"));
            CliRun r = CliRun.of("status", "--jdbc-url", PG.jdbcUrl(), "--schema", schema);
            assertThat(r.exitCode()).as(r.toString()).isZero();
            assertThat(nodeLine(r.out(), "node-v1"))
                    .contains("RETIRED")
                    .contains("shop@1")
                    .contains("retire_version by ops-alice");
            assertThat(nodeLine(r.out(), "node-v2")).contains("shop@2").doesNotContain("RETIRED");
            assertThat(r.out()).contains("CONTROLS (1)");
            assertThat(lineWith(r.out(), "RETIRE_VERSION")).contains("shop@1").contains("moved to 2");

            CliRun json = CliRun.of("status", "--jdbc-url", PG.jdbcUrl(), "--schema", schema, "--json");
            assertThat(json.out())
                    .contains("\"role\": \"RETIRED\"")
                    .contains("\"action\": \"RETIRE_VERSION\"")
                    .contains("\"by\": \"ops-alice\"");
        }
    }

    @Test
    void printsNodeStatusQueuesSchedulesStuckAndFailedJobs() throws Exception {
        Baton.migrate(PG.dataSource(), schema);
        long stuck;
        long failed;
        try (Connection c = PG.connect();
                Statement s = c.createStatement()) {
            // A running attempt whose lease expired a minute ago (its node died), and a failed job with its error.
            try (ResultSet rs = s.executeQuery(
                    "INSERT INTO " + schema + ".job (queue, kind, payload, priority, state, run_at, "
                            + "attempt, max_attempts, attempt_token, lease_expires_at, claimed_by) VALUES ('mail', 'email.send', "
                            + "'null', 50, 'running', now(), 1, 5, 1, clock_timestamp() - interval '1 minute', 'node-gone') RETURNING id")) {
                rs.next();
                stuck = rs.getLong(1);
            }
            try (ResultSet rs =
                    s.executeQuery("INSERT INTO " + schema + ".job (queue, kind, payload, priority, state, run_at, "
                            + "attempt, max_attempts, errors, finished_at) VALUES ('mail', 'email.send', 'null', 50, 'failed', now(), 5, 5, "
                            + "'[{\"message\": \"smtp refused\"}]', clock_timestamp()) RETURNING id")) {
                rs.next();
                failed = rs.getLong(1);
            }
            s.execute("INSERT INTO " + schema + ".job (queue, kind, payload, priority, state, run_at, max_attempts) "
                    + "VALUES ('mail', 'email.send', 'null', 50, 'available', now(), 5)");
        }
        // Before any node runs: a started node's maintenance would rescue the stuck job.
        CliRun r = CliRun.of("status", "--jdbc-url", PG.jdbcUrl(), "--schema", schema);
        assertThat(r.exitCode()).as(r.toString()).isZero();
        assertThat(lineWith(r.out(), "  mail ")).containsPattern("mail +1 +1 +0 +1 +0");
        assertThat(r.out())
                .contains("STUCK JOBS (1: running with an expired attempt lease)")
                .contains("FAILED JOBS (1)");
        assertThat(lineWith(r.out(), "node-gone"))
                .startsWith("  " + stuck + " ")
                .contains("email.send");
        assertThat(lineWith(r.out(), "smtp refused")).startsWith("  " + failed + " ");
        CliRun json = CliRun.of("status", "--jdbc-url", PG.jdbcUrl(), "--schema", schema, "--json");
        assertThat(json.exitCode()).as(json.toString()).isZero();
        assertThat(json.out())
                .contains("\"queue\": \"mail\"")
                .contains("\"claimed_by\": \"node-gone\"")
                .contains("\"last_error\": \"smtp refused\"");

        try (Baton draining = Baton.builder(PG.dataSource())
                .schema(schema)
                .nodeId("node-d")
                .worker(WorkerConfig.builder().queue("reports", 1).build())
                .handle("report.hourly", Object.class, (none, ctx) -> {})
                .schedule(Schedule.every("reports.hourly", Duration.ofHours(1))
                        .job("report.hourly", null)
                        .queue("reports"))
                .build()
                .start()) {
            draining.drain();
            CliRun during = CliRun.of("status", "--jdbc-url", PG.jdbcUrl(), "--schema", schema);
            assertThat(during.exitCode()).as(during.toString()).isZero();
            assertThat(nodeLine(during.out(), "node-d")).contains("draining");
            assertThat(lineWith(during.out(), "reports.hourly"))
                    .contains("every 60m")
                    .contains("report.hourly")
                    .contains("(in ")
                    .contains("enabled");
            CliRun duringJson = CliRun.of("status", "--jdbc-url", PG.jdbcUrl(), "--schema", schema, "--json");
            assertThat(duringJson.out())
                    .contains("\"status\": \"draining\"")
                    .contains("\"name\": \"reports.hourly\"")
                    .contains("\"nextRunAt\"");
        }
        CliRun after = CliRun.of("status", "--jdbc-url", PG.jdbcUrl(), "--schema", schema);
        assertThat(nodeLine(after.out(), "node-d")).contains("stopped");
    }

    /** Issue 15: declared and runtime schedules show where they come from, with version or revision. */
    @Test
    void schedulesShowTheirOriginWithVersionOrRevision() {
        Baton.migrate(PG.dataSource(), schema);
        try (Baton node = Baton.builder(PG.dataSource())
                .schema(schema)
                .nodeId("node-s")
                .application("shop", "1.4")
                .schedule(Schedule.cron("shop.close-day", "0 3 * * *").job("close-day", null))
                .build()
                .start()) {
            long revision = node.schedules()
                    .changedBy("admin@acme")
                    .create(Schedule.cron("report:acme", "0 7 * * *")
                            .zone("Asia/Tokyo")
                            .job("tenant.report", null))
                    .revision();
            CliRun r = CliRun.of("status", "--jdbc-url", PG.jdbcUrl(), "--schema", schema);
            assertThat(r.exitCode()).as(r.toString()).isZero();
            assertThat(r.out()).contains("ORIGIN");
            assertThat(lineWith(r.out(), "shop.close-day")).contains("shop 1.4");
            assertThat(lineWith(r.out(), "report:acme"))
                    .contains("runtime r" + revision + " by admin@acme")
                    .contains("Asia/Tokyo");
            CliRun json = CliRun.of("status", "--jdbc-url", PG.jdbcUrl(), "--schema", schema, "--json");
            assertThat(json.exitCode()).as(json.toString()).isZero();
            assertThat(json.out())
                    .contains("\"origin\": \"runtime\"")
                    .contains("\"origin\": \"declared\"")
                    .contains("\"revision\": " + revision)
                    .contains("\"changedBy\": \"admin@acme\"");
        }
    }

    @Test
    void unknownOptionExitsWith2() {
        CliRun r = CliRun.of("status", "--jdbc-url", PG.jdbcUrl(), "--schema", schema, "--tables");
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
        assertThat(r.err()).contains("Unknown option: '--tables'");
    }

    @Test
    void schemaWithoutBatonTablesExitsWith2() {
        CliRun r = CliRun.of("status", "--jdbc-url", PG.jdbcUrl(), "--schema", schema);
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
        assertThat(r.err())
                .contains("schema '" + schema + "' has no Baton tables")
                .contains("baton migrate");
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
        return nodes.lines()
                .filter(l -> l.startsWith("  " + id + " "))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no node row '" + id + "' in:\n" + text));
    }

    private static String lineWith(String text, String needle) {
        return text.lines()
                .filter(l -> l.contains(needle))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no line with '" + needle + "' in:\n" + text));
    }
}
