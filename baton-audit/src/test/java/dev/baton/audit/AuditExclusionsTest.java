package dev.baton.audit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class AuditExclusionsTest {
    static final Path FIXTURES = AuditRulesTest.FIXTURES;

    @Test
    void excludedFindingsMoveToTheExcludedListWithTheirReason() {
        Exclusions ex = Exclusions.parse("""
                exclusions:
                  - class: dev.baton.audit.fixtures.Registry
                    member: requests
                    reason: a statistic for the logs only
                    owner: platform
                  - class: dev.baton.audit.fixtures.Tick*
                    category: in-process-scheduling
                    reason: a test fixture
                """, "test.yml");
        AuditReport r = BatonAudit.forClasses(FIXTURES).exclusions(ex).run();
        assertThat(r.findings())
                .extracting(Finding::location)
                .doesNotContain("dev.baton.audit.fixtures.Registry.requests", "dev.baton.audit.fixtures.Ticker.start");
        assertThat(r.excluded())
                .extracting(e -> e.finding().member())
                .containsExactlyInAnyOrder("requests", "start", "startTimer");
        assertThat(r.excluded()).extracting(e -> e.by().reason()).contains("a statistic for the logs only");
        assertThat(r.warnings()).isEmpty();
    }

    @Test
    void staleAndExpiredExclusionsAreReported() {
        Exclusions ex = Exclusions.parse("""
                exclusions:
                  - class: dev.baton.audit.fixtures.Gone
                    reason: removed last year
                  - class: dev.baton.audit.fixtures.Registry
                    member: names
                    reason: until the migration
                    expires: 2026-01-31
                """, "test.yml");
        AuditReport r = BatonAudit.forClasses(FIXTURES)
                .exclusions(ex)
                .today(LocalDate.of(2026, 2, 1))
                .run();
        assertThat(r.findings()).extracting(Finding::member).contains("names");
        assertThat(r.warnings()).hasSize(2);
        assertThat(r.warnings().get(0))
                .startsWith("stale exclusion: test.yml entry 1 for dev.baton.audit.fixtures.Gone");
        assertThat(r.warnings().get(1))
                .startsWith("expired exclusion: test.yml entry 2")
                .contains("expired on 2026-01-31");
        AuditReport before = BatonAudit.forClasses(FIXTURES)
                .exclusions(ex)
                .today(LocalDate.of(2026, 1, 31))
                .run();
        assertThat(before.findings()).extracting(Finding::member).doesNotContain("names");
    }

    @Test
    void anEntryWithoutAReasonIsAnErrorNamingTheEntry() {
        assertThatThrownBy(() -> Exclusions.parse("""
                exclusions:
                  - class: a.B
                    reason: fine
                  - class: com.example.Flags
                    member: flags
                """, "baton-audit.yml"))
                .isInstanceOf(AuditException.class)
                .hasMessage(
                        "baton-audit.yml entry 2 (class com.example.Flags) has no 'reason'; every exclusion must say "
                                + "why the state is deliberate, so the next sweep does not re-litigate it");
    }

    @Test
    void badEntriesAreErrorsNamingValueAndRule() {
        assertThatThrownBy(() -> Exclusions.parse("exclusions:\n  - class: a.B\n    reason: r\n    categroy: x\n", "f"))
                .hasMessageContaining("f entry 1 has unknown key 'categroy'");
        assertThatThrownBy(() ->
                        Exclusions.parse("exclusions:\n  - class: a.B\n    reason: r\n    category: caches\n", "f"))
                .hasMessageContaining("category must be one of SINGLETON_STATE")
                .hasMessageContaining("but was 'caches'");
        assertThatThrownBy(
                        () -> Exclusions.parse("exclusions:\n  - class: a.B\n    reason: r\n    expires: soon\n", "f"))
                .hasMessageContaining("expires must be a date like 2027-01-31, but was 'soon'");
        assertThatThrownBy(() -> Exclusions.parse("exclusions: [ {", "f"))
                .hasMessageStartingWith("exclusions file f is not valid YAML or JSON");
        assertThatThrownBy(() -> Exclusions.parse("rules: []", "f"))
                .hasMessageContaining("must hold a list under 'exclusions:'");
        assertThatThrownBy(() -> Exclusions.parse("exclusions:\n  - reason: r\n", "f"))
                .hasMessageContaining("f entry 1 has no 'class'");
    }

    @Test
    void jsonAndMissingFiles(@TempDir Path dir) throws Exception {
        Path json = dir.resolve("ex.json");
        Files.writeString(json, "{\"exclusions\": [{\"class\": \"a.B\", \"reason\": \"r\"}]}");
        assertThat(Exclusions.load(json).entries())
                .singleElement()
                .extracting(Exclusions.Entry::className)
                .isEqualTo("a.B");
        assertThatThrownBy(() -> Exclusions.load(dir.resolve("nope.yml")))
                .isInstanceOf(AuditException.class)
                .hasMessageContaining("nope.yml does not exist");
    }
}
