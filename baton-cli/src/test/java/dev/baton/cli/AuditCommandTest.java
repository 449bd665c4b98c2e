package dev.baton.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code baton audit} on a small fixture: output formats, exit codes, exclusions and bad input. */
class AuditCommandTest {
    static final String FIXTURE =
            Path.of("target/test-classes/dev/baton/cli/auditfixture").toString();

    @Test
    void findingsAtOrAboveFailOnExitWith1() {
        CliRun r = CliRun.of("audit", FIXTURE);
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(1);
        assertThat(r.out())
                .startsWith("Baton scale-out audit: 2 finding(s) (1 high, 1 medium, 0 low)")
                .contains("ReplayGuard.SEEN_NONCES", "ReplayGuard.java:10", "ReplayGuard.CHECKS")
                .doesNotContain("ALLOWED")
                .contains("fix: Use baton.coordination().tokens()");
        assertThat(r.err()).contains("1 unexcluded finding(s) at high or above");
    }

    @Test
    void failOnDecidesTheExitCode() {
        assertThat(CliRun.of("audit", FIXTURE, "--fail-on", "none").exitCode()).isZero();
        assertThat(CliRun.of("audit", FIXTURE, "--fail-on", "MEDIUM").err())
                .contains("2 unexcluded finding(s) at medium");
        CliRun bad = CliRun.of("audit", FIXTURE, "--fail-on", "critical");
        assertThat(bad.exitCode()).isEqualTo(2);
        assertThat(bad.err())
                .contains("--fail-on: severity must be one of low, medium, high, none, but was 'critical'");
    }

    @Test
    void exclusionsWithAReasonClearTheFinding(@TempDir Path dir) throws Exception {
        Path ex = dir.resolve("baton-audit.yml");
        Files.writeString(ex, """
                exclusions:
                  - class: dev.baton.cli.auditfixture.ReplayGuard
                    member: SEEN_NONCES
                    reason: nonces are also checked against the database by the caller
                    owner: auth-team
                """);
        CliRun r = CliRun.of("audit", FIXTURE, "--exclusions", ex.toString());
        assertThat(r.exitCode()).as(r.toString()).isZero();
        assertThat(r.out())
                .contains(
                        "Excluded (1)", "nonces are also checked against the database by the caller (owner auth-team)");

        Files.writeString(ex, "exclusions:\n  - class: dev.baton.cli.auditfixture.ReplayGuard\n");
        CliRun noReason = CliRun.of("audit", FIXTURE, "--exclusions", ex.toString());
        assertThat(noReason.exitCode()).isEqualTo(2);
        assertThat(noReason.err()).contains("entry 1 (class dev.baton.cli.auditfixture.ReplayGuard) has no 'reason'");
    }

    @Test
    void sarifToAFile(@TempDir Path dir) throws Exception {
        Path out = dir.resolve("reports/audit.sarif");
        CliRun r = CliRun.of(
                "audit", FIXTURE, "--format", "sarif", "--output", out.toString(), "--source-root", "src/main/java");
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(1);
        assertThat(r.out()).contains("2 finding(s)", "sarif report written to " + out);
        JsonNode sarif = new ObjectMapper().readTree(out.toFile());
        assertThat(sarif.get("version").asText()).isEqualTo("2.1.0");
        JsonNode result = sarif.at("/runs/0/results/0");
        assertThat(result.get("ruleId").asText()).isEqualTo("baton-audit/single-use-state");
        assertThat(result.at("/locations/0/physicalLocation/artifactLocation/uri")
                        .asText())
                .isEqualTo("src/main/java/dev/baton/cli/auditfixture/ReplayGuard.java");
        assertThat(result.at("/locations/0/physicalLocation/region/startLine").asInt())
                .isEqualTo(10);
    }

    @Test
    void badInputIsAUsageError(@TempDir Path dir) throws Exception {
        CliRun missing = CliRun.of("audit", dir.resolve("nope.jar").toString());
        assertThat(missing.exitCode()).isEqualTo(2);
        assertThat(missing.err())
                .contains("nope.jar does not exist; pass a jar, a class directory or a Spring Boot fat jar");

        Path notAJar = dir.resolve("broken.jar");
        Files.writeString(notAJar, "not a zip");
        CliRun broken = CliRun.of("audit", notAJar.toString());
        assertThat(broken.exitCode()).isEqualTo(2);
        assertThat(broken.err()).contains("cannot read " + notAJar + " as a jar");

        CliRun format = CliRun.of("audit", FIXTURE, "--format", "xml");
        assertThat(format.exitCode()).isEqualTo(2);
        assertThat(format.err())
                .contains("--format: format must be one of table, markdown, json, sarif, but was 'xml'");

        CliRun noPath = CliRun.of("audit");
        assertThat(noPath.exitCode()).isEqualTo(2);
        assertThat(noPath.err()).contains("Missing required parameter");

        CliRun noExclusions = CliRun.of(
                "audit", FIXTURE, "--exclusions", dir.resolve("none.yml").toString());
        assertThat(noExclusions.exitCode()).isEqualTo(2);
        assertThat(noExclusions.err()).contains("none.yml does not exist");
    }
}
