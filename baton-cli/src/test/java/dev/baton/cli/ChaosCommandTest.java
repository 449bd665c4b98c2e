package dev.baton.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.testkit.BatonPostgres;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** {@code baton chaos} (E03): a short real run, and bad input. CI runs a two-minute one from {@code .ci/run}. */
class ChaosCommandTest {
    @RegisterExtension
    static final BatonPostgres PG = new BatonPostgres();

    @TempDir
    Path dir;

    private String schema;

    @BeforeEach
    void freshSchema() {
        schema = PG.freshSchemaName();
    }

    @AfterEach
    void dropSchema() {
        PG.dropSchema(schema);
    }

    /**
     * E03, short: two node processes behind fault proxies, process and session faults from a fixed seed,
     * then the checker. The checker's power to find violations is shown per invariant in VerifyCommandTest;
     * here the run must pass, record its seed and fault counts, and show progress after healing.
     */
    @Test
    void E03_aShortSeededRunPassesTheCheckerAndReportsItsFaults() throws Exception {
        Path report = dir.resolve("chaos.json");
        CliRun r = CliRun.of(
                "chaos",
                "--jdbc-url",
                PG.jdbcUrl(),
                "--schema",
                schema,
                "--seed",
                "3",
                "--duration",
                "25s",
                "--nodes",
                "2",
                "--faults",
                "pause,kill,terminate_backend,black_hole",
                "--report",
                report.toString(),
                "--log-dir",
                dir.resolve("logs").toString());
        assertThat(r.exitCode()).as(r.toString()).isZero();
        assertThat(r.out()).contains("Baton chaos run (E03): PASS   seed 3", "verdict: PASS", "progress         yes");
        String json = Files.readString(report);
        assertThat(json).contains("\"verdict\": \"PASS\"", "\"seed\": 3", "\"faultsInjected\"");
        // the checker's typed result, not its printed output
        assertThat(json).contains("\"checker\"", "\"invariants\"", "\"externalDuplicates\"");
        assertThat(json).containsAnyOf("\"PAUSE\"", "\"KILL\"", "\"TERMINATE_BACKEND\"", "\"BLACK_HOLE\"");
    }

    @Test
    void badInputIsRefusedWithExitCode2() {
        CliRun oneNode = CliRun.of("chaos", "--nodes", "1");
        assertThat(oneNode.exitCode()).isEqualTo(2);
        assertThat(oneNode.err()).contains("--nodes must be 2 to 9, but was 1");

        CliRun shortRun = CliRun.of("chaos", "--duration", "5s");
        assertThat(shortRun.exitCode()).isEqualTo(2);
        assertThat(shortRun.err()).contains("--duration must be 20s to 24h");

        CliRun unknownKind = CliRun.of("chaos", "--faults", "meteor");
        assertThat(unknownKind.exitCode()).isEqualTo(2);
        assertThat(unknownKind.err()).contains("meteor");

        CliRun restartElsewhere =
                CliRun.of("chaos", "--jdbc-url", "jdbc:postgresql://127.0.0.1:1/x", "--faults", "db_restart");
        assertThat(restartElsewhere.exitCode()).isEqualTo(2);
        assertThat(restartElsewhere.err()).contains("needs the embedded server");

        CliRun badSchema = CliRun.of("chaos", "--schema", "Robert'); DROP");
        assertThat(badSchema.exitCode()).isEqualTo(2);
        assertThat(badSchema.err()).contains("--schema must be lower-case letters");
    }
}
