package dev.baton.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.testkit.BatonPostgres;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

class DemoCommandTest {
    @RegisterExtension
    static final BatonPostgres PG = new BatonPostgres();

    @Test
    @Timeout(value = 240, unit = TimeUnit.SECONDS)
    void shortDemoInjectsFourFaultsAndPassesTheInvariants() throws Exception {
        String schema = PG.freshSchemaName();
        Path dir = Files.createDirectories(Path.of("target", "demo-test"));
        Path report = dir.resolve(schema + "-report.json");
        try {
            CliRun r = CliRun.of(
                    "demo",
                    "--duration",
                    "15s",
                    "--nodes",
                    "3",
                    "--jdbc-url",
                    PG.jdbcUrl(),
                    "--schema",
                    schema,
                    "--report",
                    report.toString(),
                    "--log-dir",
                    dir.resolve(schema + "-logs").toString());
            System.out.println(r);
            assertThat(r.exitCode()).as(r.toString()).isZero();
            assertThat(r.out())
                    .contains("FAULT 1/4")
                    .contains("FAULT 2/4")
                    .contains("FAULT 3/4")
                    .contains("FAULT 4/4")
                    .contains("STALE WRITE REJECTED")
                    .contains("progress   [") // not a terminal: plain progress lines
                    .containsPattern("faults injected +4 of 4")
                    .containsPattern("takeover after SIGKILL [\\d,]+ ms")
                    .containsPattern("backend\\(s\\) terminated; fenced writes resumed [\\d,]+ ms later|no backend of")
                    .containsPattern("hand-off after release [\\d,]+ ms")
                    .containsPattern("I1 PASS")
                    .containsPattern("I2 PASS")
                    .containsPattern("I3 PASS")
                    .containsPattern("jobs +[\\d,]+ enqueued, [\\d,]+ completed with one effect row")
                    .containsPattern("history check +PASS")
                    .containsPattern("verdict +PASS")
                    .doesNotContainIgnoringCase("exactly" + " once"); // the contract is "at most one owner"
            String json = Files.readString(report);
            assertThat(json)
                    .contains("\"faultsInjected\": 4")
                    .containsPattern("\"backendsTerminated\": \\d+")
                    .contains("\"id\": \"I2\"")
                    .doesNotContain("\"ok\": false")
                    .contains("\"verdict\": \"PASS\"")
                    .contains("\"ok\": true")
                    .contains("\"violations\": []")
                    .containsPattern("\"takeoverAfterKillMs\": \\d+")
                    .containsPattern("\"handOffAfterReleaseMs\": \\d+")
                    .contains("\"deliberateStaleWrite\": \"rejected by the database\"");
            assertThat(ProcessHandle.current()
                            .children()
                            .filter(ProcessHandle::isAlive)
                            .filter(p -> p.info().commandLine().orElse("").contains(Main.class.getName()))
                            .count())
                    .as("node processes left running")
                    .isZero();
        } finally {
            PG.dropSchema(schema);
        }
    }
}
