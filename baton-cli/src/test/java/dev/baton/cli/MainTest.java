package dev.baton.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class MainTest {

    @Test
    void unknownOptionIsAUsageError() {
        CliRun r = CliRun.of("status", "--jdbc-url", "jdbc:postgresql://localhost/x", "--bogus");
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
        assertThat(r.err()).contains("Unknown option: '--bogus'").contains("Usage: baton status");
    }

    @Test
    void everyCommandRefusesAnUnknownOption() {
        for (String command : new String[] {"demo", "node", "verify", "status", "migrate"}) {
            CliRun r = command.equals("node")
                    ? CliRun.of(
                            command,
                            "--jdbc-url",
                            "jdbc:postgresql://localhost/x",
                            "--node-id",
                            "n1",
                            "--no-such-option")
                    : CliRun.of(command, "--jdbc-url", "jdbc:postgresql://localhost/x", "--no-such-option");
            assertThat(r.exitCode()).as(command + ": " + r).isEqualTo(2);
            assertThat(r.err()).as(command).contains("Unknown option: '--no-such-option'");
        }
    }

    @Test
    void unreachableDatabaseExitsWith2ForEveryDatabaseCommand() {
        String url = "jdbc:postgresql://127.0.0.1:1/postgres?user=postgres&connectTimeout=3";
        for (String[] args : new String[][] {
            {"verify", "--jdbc-url", url},
            {"status", "--jdbc-url", url},
            {"migrate", "--jdbc-url", url},
            {"node", "--jdbc-url", url, "--node-id", "n1"}
        }) {
            CliRun r = CliRun.of(args);
            assertThat(r.exitCode()).as(String.join(" ", args) + ": " + r).isEqualTo(2);
            assertThat(r.err()).as(args[0]).contains("cannot connect");
        }
    }

    @Test
    void nodeValidatesItsOptions() {
        CliRun noId = CliRun.of("node", "--jdbc-url", "jdbc:postgresql://localhost/x");
        assertThat(noId.exitCode()).isEqualTo(2);
        assertThat(noId.err()).contains("Missing required option: '--node-id=ID'");

        CliRun workload = CliRun.of(
                "node", "--jdbc-url", "jdbc:postgresql://localhost/x", "--node-id", "n1", "--workload", "chaos");
        assertThat(workload.exitCode()).isEqualTo(2);
        assertThat(workload.err()).contains("--workload").contains("verify");

        CliRun timing = CliRun.of(
                "node",
                "--jdbc-url",
                "jdbc:postgresql://localhost/x",
                "--node-id",
                "n1",
                "--ttl",
                "1s",
                "--renew",
                "900ms");
        assertThat(timing.exitCode()).isEqualTo(2);
        assertThat(timing.err()).contains("invalid timing");

        CliRun rate =
                CliRun.of("node", "--jdbc-url", "jdbc:postgresql://localhost/x", "--node-id", "n1", "--job-rate", "-1");
        assertThat(rate.exitCode()).isEqualTo(2);
        assertThat(rate.err()).contains("--job-rate must be 0 to 1000");
    }

    @Test
    void unknownCommandIsAUsageError() {
        CliRun r = CliRun.of("frobnicate");
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(2);
        assertThat(r.err()).contains("frobnicate");
    }

    @Test
    void noArgumentsPrintsUsage() {
        CliRun r = CliRun.of();
        assertThat(r.exitCode()).isEqualTo(2);
        assertThat(r.err())
                .contains("Usage: baton")
                .contains("demo")
                .contains("migrate")
                .contains("status");
    }

    @Test
    void everyCommandHasHelp() {
        for (String command : new String[] {"demo", "node", "verify", "status", "migrate"}) {
            CliRun r = CliRun.of(command, "--help");
            assertThat(r.exitCode()).as(command + ": " + r).isZero();
            assertThat(r.out()).contains("Usage: baton " + command);
        }
        assertThat(CliRun.of("--help").out()).contains("Exit codes:");
    }

    @Test
    void missingRequiredOptionIsAUsageError() {
        CliRun r = CliRun.of("migrate");
        assertThat(r.exitCode()).isEqualTo(2);
        assertThat(r.err()).contains("--jdbc-url");
    }

    @Test
    void demoValidatesItsOptions() {
        CliRun nodes = CliRun.of("demo", "--nodes", "1");
        assertThat(nodes.exitCode()).isEqualTo(2);
        assertThat(nodes.err()).contains("--nodes must be 2 to 9");

        CliRun duration = CliRun.of("demo", "--duration", "thirty");
        assertThat(duration.exitCode()).isEqualTo(2);
        assertThat(duration.err()).contains("'thirty' is not a duration");

        CliRun tooShort = CliRun.of("demo", "--duration", "5s");
        assertThat(tooShort.exitCode()).isEqualTo(2);
        assertThat(tooShort.err()).contains("--duration must be 10s to 1h");

        CliRun url = CliRun.of("demo", "--jdbc-url", "mysql://nope");
        assertThat(url.exitCode()).isEqualTo(2);
        assertThat(url.err()).contains("must be a PostgreSQL JDBC URL");
    }

    @Test
    void parsesDurations() {
        assertThat(Durations.parse("30s")).isEqualTo(Duration.ofSeconds(30));
        assertThat(Durations.parse("1m")).isEqualTo(Duration.ofMinutes(1));
        assertThat(Durations.parse("1m30s")).isEqualTo(Duration.ofSeconds(90));
        assertThat(Durations.parse("500ms")).isEqualTo(Duration.ofMillis(500));
        assertThat(Durations.parse("1.5s")).isEqualTo(Duration.ofMillis(1500));
        assertThat(Durations.parse("PT30S")).isEqualTo(Duration.ofSeconds(30));
        assertThat(Durations.parse("pt1m")).isEqualTo(Duration.ofMinutes(1));
        assertThat(Durations.parse("2h")).isEqualTo(Duration.ofHours(2));
        assertThatThrownBy(() -> Durations.parse("30")).hasMessageContaining("not a duration");
        assertThatThrownBy(() -> Durations.parse("s")).hasMessageContaining("not a duration");
        assertThatThrownBy(() -> Durations.parse("PT-5S")).hasMessageContaining("negative");
    }

    @Test
    void redactsPasswords() {
        assertThat(Db.redact("jdbc:postgresql://h/db?user=u&password=secret&ssl=true"))
                .isEqualTo("jdbc:postgresql://h/db?user=u&password=***&ssl=true");
        assertThat(Db.redact("jdbc:postgresql://u:secret@h/db")).isEqualTo("jdbc:postgresql://u:***@h/db");
    }
}
