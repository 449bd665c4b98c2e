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
    void shortDemoAgainstTheTestDatabasePassesItsHistoryCheck() throws Exception {
        String schema = PG.freshSchemaName();
        Path dir = Files.createDirectories(Path.of("target", "demo-test"));
        Path report = dir.resolve(schema + "-report.json");
        try {
            CliRun r = CliRun.of("demo", "--duration", "12s", "--nodes", "3", "--jdbc-url", PG.jdbcUrl(),
                    "--schema", schema, "--report", report.toString(), "--log-dir", dir.resolve(schema + "-logs").toString());
            System.out.println(r);
            assertThat(r.exitCode()).as(r.toString()).isZero();
            assertThat(r.out())
                    .contains("FAULT 1/3").contains("FAULT 2/3").contains("FAULT 3/3")
                    .contains("STALE WRITE REJECTED")
                    .containsPattern("takeover after SIGKILL +[\\d,]+ ms")
                    .containsPattern("hand-off after release +[\\d,]+ ms")
                    .containsPattern("history check +PASS")
                    .containsPattern("verdict +PASS")
                    .doesNotContainIgnoringCase("exactly" + " once"); // the contract is "at most one owner"
            String json = Files.readString(report);
            assertThat(json).contains("\"verdict\": \"PASS\"").contains("\"ok\": true").contains("\"violations\": []")
                    .containsPattern("\"takeoverAfterKillMs\": \\d+").containsPattern("\"handOffAfterReleaseMs\": \\d+")
                    .contains("\"deliberateStaleWrite\": \"rejected by the database\"");
            assertThat(ProcessHandle.current().children().filter(ProcessHandle::isAlive)
                    .filter(p -> p.info().commandLine().orElse("").contains(Main.class.getName())).count())
                    .as("node processes left running").isZero();
        } finally {
            PG.dropSchema(schema);
        }
    }
}
