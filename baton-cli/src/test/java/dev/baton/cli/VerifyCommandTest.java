package dev.baton.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariDataSource;
import dev.baton.Baton;
import dev.baton.LeadershipListener;
import dev.baton.testkit.BatonPostgres;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The checker: passes on a real run of the workload, and names each invariant that a directly inserted bad row
 * breaks. Each violation test is the check's "remove the protection" counterpart: the row it inserts is what a
 * missing fence (I1), a lost or doubly completed job (I2) or a doubly fired schedule (I3) would leave behind.
 */
class VerifyCommandTest {
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
    void passesOnARealRunOfTheWorkload() throws Exception {
        Baton.migrate(PG.dataSource(), schema);
        VerifyWorkload.install(PG.dataSource(), schema);
        VerifyWorkload.Settings s = new VerifyWorkload.Settings(
                Duration.ofMillis(800),
                Duration.ofMillis(150),
                Duration.ofMillis(20),
                100,
                Duration.ofSeconds(2),
                Duration.ofMillis(200),
                Duration.ofMillis(500),
                Duration.ofMillis(200),
                4,
                Duration.ofSeconds(2));
        try (HikariDataSource pool = PG.newPool("verify-test", 12)) {
            VerifyWorkload work = new VerifyWorkload(schema, "node-a", s, pool, line -> {});
            try (Baton baton = work.configure(Baton.builder(pool).schema(schema).nodeId("node-a"))
                    .build()
                    .start()) {
                work.lead(baton, new LeadershipListener() {});
                await().atMost(Duration.ofSeconds(60)).until(() -> work.effects.get() >= 30 && work.ticks.get() >= 2);
                // Checking while the node still works: pending jobs are not violations.
                CliRun live = CliRun.of("verify", "--jdbc-url", PG.jdbcUrl(), "--schema", schema);
                assertThat(live.exitCode()).as(live.toString()).isZero();
            }
        }
        CliRun r = CliRun.of("verify", "--jdbc-url", PG.jdbcUrl(), "--schema", schema);
        assertThat(r.exitCode()).as(r.toString()).isZero();
        assertThat(r.out())
                .contains("I1  PASS")
                .contains("I2  PASS")
                .contains("I3  PASS")
                .contains("verdict: PASS");
        assertThat(count("verify_effect")).isGreaterThanOrEqualTo(30);
        assertThat(count("verify_tick")).isGreaterThanOrEqualTo(2);

        CliRun json = CliRun.of("verify", "--jdbc-url", PG.jdbcUrl(), "--schema", schema, "--json");
        assertThat(json.exitCode()).as(json.toString()).isZero();
        assertThat(json.out())
                .contains("\"verdict\": \"PASS\"")
                .contains("\"id\": \"I3\"")
                .contains("\"externalDuplicates\"");
    }

    @Test
    void i1GenerationGoingBackIsAViolation() throws Exception {
        installed();
        sql("INSERT INTO %s.verify_ledger (lease_name, generation, node_id) VALUES "
                + "('verify-leader', 1, 'a'), ('verify-leader', 2, 'b'), ('verify-leader', 1, 'a')");
        assertViolated("I1", "has generation 1 after seq 2 with generation 2");
    }

    @Test
    void i1TwoNodesInOneGenerationIsAViolation() throws Exception {
        installed();
        sql("INSERT INTO %s.verify_ledger (lease_name, generation, node_id) VALUES "
                + "('verify-leader', 1, 'a'), ('verify-leader', 2, 'b'), ('verify-leader', 2, 'c')");
        assertViolated("I1", "generation 2 was written by more than one node: b, c");
    }

    @Test
    void i2LostJobIsAViolationButAPendingOneIsNot() throws Exception {
        installed();
        long pending = job("available", 0);
        sql("INSERT INTO %s.verify_enqueued (job_id) VALUES (" + pending + ")");
        CliRun ok = CliRun.of("verify", "--jdbc-url", PG.jdbcUrl(), "--schema", schema);
        assertThat(ok.exitCode()).as(ok.toString()).isZero();
        assertThat(ok.out()).contains("1 still pending");

        long lost = job("succeeded", 1);
        sql("INSERT INTO %s.verify_enqueued (job_id) VALUES (" + lost + ")");
        assertViolated("I2", "job " + lost + " was lost: no effect row, and the job is succeeded");
    }

    @Test
    void i2TwoEffectRowsIsAViolation() throws Exception {
        installed();
        long id = job("succeeded", 2);
        sql("INSERT INTO %s.verify_enqueued (job_id) VALUES (" + id + ")");
        sql("INSERT INTO %s.verify_effect (job_id, attempt, node_id) VALUES (" + id + ", 2, 'a'), (" + id
                + ", 2, 'b')");
        assertViolated("I2", "job " + id + " has 2 effect rows");
    }

    @Test
    void i2EffectOfAnAttemptThatDidNotCompleteIsAViolation() throws Exception {
        installed();
        long id = job("succeeded", 2);
        sql("INSERT INTO %s.verify_enqueued (job_id) VALUES (" + id + ")");
        sql("INSERT INTO %s.verify_effect (job_id, attempt, node_id) VALUES (" + id + ", 1, 'a')");
        assertViolated("I2", "job " + id + " has an effect row of attempt 1 but the job is succeeded by attempt 2");
    }

    @Test
    void i3TwoTicksForOneDueInstantIsAViolation() throws Exception {
        installed();
        sql(
                "INSERT INTO %s.verify_tick (due_at, job_id, node_id) VALUES "
                        + "('2026-01-01T00:00:01Z', 1, 'a'), ('2026-01-01T00:00:02Z', 2, 'a'), ('2026-01-01T00:00:02Z', 3, 'b')");
        assertViolated("I3", "has 2 tick rows (jobs 2, 3)");
    }

    @Test
    void i4RepeatedExternalEffectIsReportedNotAViolation() throws Exception {
        installed();
        long id = job("succeeded", 2);
        sql("INSERT INTO %s.verify_enqueued (job_id) VALUES (" + id + ")");
        sql("INSERT INTO %s.verify_external (job_id, attempt, node_id) VALUES (" + id + ", 1, 'a'), (" + id
                + ", 2, 'b')");
        sql("INSERT INTO %s.verify_effect (job_id, attempt, node_id) VALUES (" + id + ", 2, 'b')");
        CliRun r = CliRun.of("verify", "--jdbc-url", PG.jdbcUrl(), "--schema", schema);
        assertThat(r.exitCode()).as(r.toString()).isZero();
        assertThat(r.out())
                .contains("1 job(s) ran their external effect more than once")
                .contains("job " + id + ": attempts 1, 2 (nodes a, b)");
        CliRun json = CliRun.of("verify", "--jdbc-url", PG.jdbcUrl(), "--schema", schema, "--json");
        assertThat(json.out()).contains("\"jobs\": 1").contains("\"extraRows\": 1");
    }

    @Test
    void nonVerifyDatabaseExitsWith2() {
        Baton.migrate(PG.dataSource(), schema);
        CliRun r = CliRun.of("verify", "--jdbc-url", PG.jdbcUrl(), "--schema", schema);
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
        assertThat(r.err()).contains("is not a verification-workload database").contains("verify_ledger");
    }

    @Test
    void missingSchemaExitsWith2() {
        CliRun r = CliRun.of("verify", "--jdbc-url", PG.jdbcUrl(), "--schema", schema);
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
        assertThat(r.err()).contains("has no Baton or verification tables");
    }

    @Test
    void unreachableDatabaseExitsWith2() {
        CliRun r = CliRun.of("verify", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/postgres?user=postgres");
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
        assertThat(r.err()).contains("cannot connect");
    }

    private void assertViolated(String invariant, String detail) {
        CliRun r = CliRun.of("verify", "--jdbc-url", PG.jdbcUrl(), "--schema", schema);
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(1);
        assertThat(r.out())
                .contains(invariant + "  FAIL")
                .contains("VIOLATION")
                .contains(detail)
                .contains("verdict: FAIL (" + invariant + " violated)");
        CliRun json = CliRun.of("verify", "--jdbc-url", PG.jdbcUrl(), "--schema", schema, "--json");
        assertThat(json.exitCode()).as(json.toString()).isEqualTo(1);
        assertThat(json.out()).contains("\"verdict\": \"FAIL\"").contains(detail);
    }

    private void installed() throws SQLException {
        Baton.migrate(PG.dataSource(), schema);
        VerifyWorkload.install(PG.dataSource(), schema);
    }

    /** A job row in {@code state} whose last attempt is {@code attempt}, written directly. */
    private long job(String state, int attempt) throws SQLException {
        try (Connection c = PG.connect();
                Statement s = c.createStatement();
                ResultSet rs =
                        s.executeQuery("INSERT INTO " + schema + ".job (queue, kind, payload, priority, state, run_at, "
                                + "attempt, max_attempts) VALUES ('verify', 'verify.effect', 'null', 50, '" + state
                                + "', now(), "
                                + attempt + ", 25) RETURNING id")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private void sql(String template) throws SQLException {
        try (Connection c = PG.connect();
                Statement s = c.createStatement()) {
            s.execute(String.format(template, schema));
        }
    }

    private long count(String table) throws SQLException {
        try (Connection c = PG.connect();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT count(*) FROM " + schema + "." + table)) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
