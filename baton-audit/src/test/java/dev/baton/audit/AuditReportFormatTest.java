package dev.baton.audit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class AuditReportFormatTest {
    static AuditReport report;

    @BeforeAll
    static void audit() {
        report = BatonAudit.forClasses(AuditRulesTest.FIXTURES)
                .sourceRoot("src/test/java")
                .exclusions(Exclusions.parse(
                        "exclusions:\n  - class: dev.baton.audit.fixtures.Statics\n    member: COUNTS\n"
                                + "    reason: test\n",
                        "t.yml"))
                .run();
    }

    @Test
    void sarifHasOneRulePerCategoryAndResultsOnTheirLines() throws Exception {
        JsonNode root = new ObjectMapper().readTree(ReportFormat.SARIF.render(report));
        assertThat(root.get("version").asText()).isEqualTo("2.1.0");
        JsonNode run = root.get("runs").get(0);
        assertThat(run.at("/tool/driver/name").asText()).isEqualTo("baton-audit");
        assertThat(run.at("/tool/driver/rules")).hasSize(Category.values().length);
        assertThat(run.at("/tool/driver/rules/0/id").asText()).isEqualTo(Category.SINGLETON_STATE.ruleId());
        JsonNode tokens = null;
        int suppressed = 0;
        for (JsonNode r : run.get("results")) {
            if (r.at("/locations/0/logicalLocations/0/fullyQualifiedName")
                    .asText()
                    .endsWith("Registry.usedTokens")) {
                tokens = r;
            }
            if (r.has("suppressions")) {
                suppressed++;
                assertThat(r.at("/suppressions/0/justification").asText()).isEqualTo("test");
            }
        }
        assertThat(suppressed).isEqualTo(1);
        assertThat(tokens).isNotNull();
        assertThat(tokens.get("ruleId").asText()).isEqualTo("baton-audit/single-use-state");
        assertThat(tokens.get("level").asText()).isEqualTo("error");
        assertThat(tokens.at("/locations/0/physicalLocation/artifactLocation/uri")
                        .asText())
                .isEqualTo("src/test/java/dev/baton/audit/fixtures/Registry.java");
        assertThat(tokens.at("/locations/0/physicalLocation/region/startLine").asInt())
                .isEqualTo(23);
        assertThat(tokens.at("/message/text").asText()).contains("tokens()");
        assertThat(run.at("/tool/driver/rules/" + tokens.get("ruleIndex").asInt() + "/id")
                        .asText())
                .isEqualTo(tokens.get("ruleId").asText());
    }

    @Test
    void jsonCarriesEveryFieldAndTheExcluded() throws Exception {
        JsonNode root = new ObjectMapper().readTree(ReportFormat.JSON.render(report));
        assertThat(root.get("findings")).hasSize(report.findings().size());
        JsonNode first = root.get("findings").get(0);
        for (String k : new String[] {
            "category",
            "ruleId",
            "severity",
            "class",
            "member",
            "sourceFile",
            "line",
            "lineSource",
            "kind",
            "evidence",
            "why",
            "remedy",
            "example"
        }) {
            assertThat(first.has(k)).as(k).isTrue();
        }
        assertThat(root.at("/excluded/0/excludedBy/reason").asText()).isEqualTo("test");
    }

    @Test
    void tableAndMarkdownAreReadable() {
        String table = ReportFormat.TABLE.render(report);
        assertThat(table).startsWith("Baton scale-out audit: 31 finding(s) (12 high, 13 medium, 6 low)");
        assertThat(table)
                .contains("SEVERITY", "Registry.usedTokens", "Registry.java:23", "why: ", "fix: ", "Excluded (1)");
        String md = ReportFormat.MARKDOWN.render(report);
        assertThat(md).startsWith("# Baton scale-out audit").contains("| # | Severity |", "```java", "## Excluded (1)");
    }

    @Test
    void parsesFormatNames() {
        assertThat(ReportFormat.parse("Sarif")).isEqualTo(ReportFormat.SARIF);
        assertThat(ReportFormat.parse("md")).isEqualTo(ReportFormat.MARKDOWN);
        assertThatThrownBy(() -> ReportFormat.parse("xml"))
                .hasMessage("format must be one of table, markdown, json, sarif, but was 'xml'");
        assertThatThrownBy(() -> Severity.parse("critical"))
                .hasMessage("severity must be one of low, medium, high, but was 'critical'");
    }
}
