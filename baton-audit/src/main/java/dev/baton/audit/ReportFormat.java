package dev.baton.audit;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/** The report formats: a console table, Markdown, JSON, and SARIF 2.1.0 for code scanning. */
public enum ReportFormat {
    /** A table for the console, then why and how to fix, grouped by remedy. */
    TABLE,
    /** The same as a Markdown document (for a pull request or a wiki). */
    MARKDOWN,
    /** Every field of every finding, excluded ones and warnings; for tools. */
    JSON,
    /** SARIF 2.1.0: one rule per category, one result per finding with its source line (GitHub code scanning). */
    SARIF;

    private static final ObjectMapper JSON_MAPPER = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    /**
     * Parses {@code table}, {@code markdown} (or {@code md}), {@code json} or {@code sarif}, any case.
     *
     * @throws IllegalArgumentException naming the value and the accepted ones
     */
    public static ReportFormat parse(String value) {
        if (value != null) {
            String v = value.trim().toUpperCase(Locale.ROOT);
            if (v.equals("MD")) {
                return MARKDOWN;
            }
            for (ReportFormat f : values()) {
                if (f.name().equals(v)) {
                    return f;
                }
            }
        }
        throw new IllegalArgumentException(
                "format must be one of table, markdown, json, sarif, but was '" + value + "'");
    }

    /** The usual file extension: txt, md, json or sarif. */
    public String extension() {
        return switch (this) {
            case TABLE -> "txt";
            case MARKDOWN -> "md";
            case JSON -> "json";
            case SARIF -> "sarif";
        };
    }

    /** Renders {@code report} in this format; the text ends with a newline. */
    public String render(AuditReport report) {
        return switch (this) {
            case TABLE -> table(report);
            case MARKDOWN -> markdown(report);
            case JSON -> json(jsonReport(report));
            case SARIF -> json(sarif(report));
        };
    }

    static String version() {
        String v = ReportFormat.class.getPackage().getImplementationVersion();
        return v != null ? v : "0.1.0-SNAPSHOT";
    }

    // ------------------------------------------------------------------ table

    private static String summary(AuditReport r) {
        return r.findings().size() + " finding(s) (" + r.severityCounts() + ") in " + r.classesAudited()
                + " classes audited (" + r.classesRead() + " read, " + r.singletons() + " singletons) from "
                + String.join(", ", r.inputs()) + "; " + r.excluded().size() + " excluded";
    }

    private static String table(AuditReport r) {
        StringBuilder sb = new StringBuilder();
        sb.append("Baton scale-out audit: ").append(summary(r)).append("\n");
        if (r.findings().isEmpty()) {
            sb.append("\nNo process-local state found that breaks with several instances.\n");
        } else {
            List<String[]> rows = new ArrayList<>();
            rows.add(new String[] {"#", "SEVERITY", "CATEGORY", "WHERE", "SOURCE", "WHAT"});
            int i = 0;
            for (Finding f : r.findings()) {
                rows.add(new String[] {
                    Integer.toString(++i),
                    f.severity().name(),
                    shortRule(f.category()),
                    f.resource()
                            ? f.location().substring(f.location().lastIndexOf('/') + 1)
                            : shortClass(f.className()) + (f.member().isEmpty() ? "" : "." + f.member()),
                    shortSource(f),
                    f.kind()
                });
            }
            sb.append("\n");
            TextTable.render(sb, rows);
            sb.append("\nWhy each breaks with N instances, and the Baton remedy:\n");
            for (Map.Entry<String, List<Integer>> g : groups(r).entrySet()) {
                Finding f = r.findings().get(g.getValue().get(0) - 1);
                sb.append("\n")
                        .append(numbers(g.getValue()))
                        .append(" ")
                        .append(f.category().summary())
                        .append("\n");
                for (int n : g.getValue()) {
                    Finding x = r.findings().get(n - 1);
                    sb.append("  #")
                            .append(n)
                            .append(" ")
                            .append(x.location())
                            .append(": ")
                            .append(x.evidence())
                            .append("\n");
                }
                sb.append("  why: ").append(f.why()).append("\n");
                sb.append("  fix: ").append(f.remedy()).append("\n");
                for (String line : f.example().split("\n")) {
                    sb.append("      ").append(line).append("\n");
                }
            }
        }
        appendTail(sb, r, "");
        return sb.toString();
    }

    private static void appendTail(StringBuilder sb, AuditReport r, String bullet) {
        if (!r.excluded().isEmpty()) {
            sb.append("\nExcluded (").append(r.excluded().size()).append("):\n");
            for (AuditReport.Excluded e : r.excluded()) {
                sb.append(bullet.isEmpty() ? "  " : bullet)
                        .append(e.finding().location())
                        .append(" [")
                        .append(shortRule(e.finding().category()))
                        .append("]: ")
                        .append(e.by().reason())
                        .append(e.by().owner() == null ? "" : " (owner " + e.by().owner() + ")")
                        .append(e.by().expires() == null ? "" : " (until " + e.by().expires() + ")")
                        .append("\n");
            }
        }
        if (!r.warnings().isEmpty()) {
            sb.append("\nWarnings (").append(r.warnings().size()).append("):\n");
            for (String w : r.warnings()) {
                sb.append(bullet.isEmpty() ? "  " : bullet).append(w).append("\n");
            }
        }
    }

    /** Findings grouped by what fixes them (category and remedy), in report order. */
    private static Map<String, List<Integer>> groups(AuditReport r) {
        Map<String, List<Integer>> out = new LinkedHashMap<>();
        int i = 0;
        for (Finding f : r.findings()) {
            i++;
            out.computeIfAbsent(f.category() + "|" + f.remedy(), k -> new ArrayList<>())
                    .add(i);
        }
        return out;
    }

    private static String numbers(List<Integer> ns) {
        StringBuilder sb = new StringBuilder();
        for (int n : ns) {
            sb.append(sb.length() == 0 ? "" : " ").append("#").append(n);
        }
        return sb.toString();
    }

    private static String shortRule(Category c) {
        return c.ruleId().substring(c.ruleId().indexOf('/') + 1);
    }

    private static String shortClass(String name) {
        return name.substring(name.lastIndexOf('.') + 1);
    }

    private static String shortSource(Finding f) {
        String file = f.sourceFile() == null
                ? (f.resource() ? f.className() : shortClass(f.className()) + ".class")
                : f.sourceFile().substring(f.sourceFile().lastIndexOf('/') + 1);
        return f.line() > 0 ? file + ":" + f.line() : file;
    }

    // ------------------------------------------------------------------ markdown

    private static String md(String s) {
        return s.replace("|", "\\|").replace("<", "&lt;").replace(">", "&gt;");
    }

    private static String markdown(AuditReport r) {
        StringBuilder sb = new StringBuilder("# Baton scale-out audit\n\n");
        sb.append(md(summary(r))).append(".\n");
        if (r.findings().isEmpty()) {
            sb.append("\nNo process-local state found that breaks with several instances.\n");
        } else {
            sb.append("\n| # | Severity | Category | Where | Source | What |\n|---|---|---|---|---|---|\n");
            int i = 0;
            for (Finding f : r.findings()) {
                sb.append("| ")
                        .append(++i)
                        .append(" | ")
                        .append(f.severity())
                        .append(" | ")
                        .append(shortRule(f.category()))
                        .append(" | `")
                        .append(md(f.location()))
                        .append("` | ")
                        .append(md(f.sourceLocation()))
                        .append(" (")
                        .append(md(f.lineSource()))
                        .append(") | ")
                        .append(md(f.kind()))
                        .append(" |\n");
            }
            sb.append("\n## Why each breaks with N instances, and the remedy\n");
            for (Map.Entry<String, List<Integer>> g : groups(r).entrySet()) {
                Finding f = r.findings().get(g.getValue().get(0) - 1);
                sb.append("\n### ")
                        .append(numbers(g.getValue()))
                        .append(": ")
                        .append(md(f.category().summary()))
                        .append("\n\n");
                for (int n : g.getValue()) {
                    Finding x = r.findings().get(n - 1);
                    sb.append("- #")
                            .append(n)
                            .append(" `")
                            .append(md(x.location()))
                            .append("`: ")
                            .append(md(x.evidence()))
                            .append("\n");
                }
                sb.append("\n**Why:** ")
                        .append(md(f.why()))
                        .append("\n\n**Fix:** ")
                        .append(md(f.remedy()))
                        .append("\n\n```java\n")
                        .append(f.example())
                        .append("\n```\n");
            }
        }
        if (!r.excluded().isEmpty() || !r.warnings().isEmpty()) {
            StringBuilder tail = new StringBuilder();
            appendTail(tail, r, "- ");
            sb.append(tail.toString()
                    .replace("\nExcluded (", "\n## Excluded (")
                    .replace("\nWarnings (", "\n## Warnings ("));
        }
        return sb.toString();
    }

    // ------------------------------------------------------------------ json

    private static String json(Object tree) {
        try {
            return JSON_MAPPER.writeValueAsString(tree) + "\n";
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("a report of plain maps and lists always serialises", e);
        }
    }

    private static Map<String, Object> jsonFinding(Finding f) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("category", f.category().name());
        m.put("ruleId", f.category().ruleId());
        m.put("severity", f.severity().name());
        m.put("class", f.className());
        m.put("member", f.member());
        m.put("sourceFile", f.sourceFile());
        m.put("line", f.line());
        m.put("lineSource", f.lineSource());
        m.put("kind", f.kind());
        m.put("evidence", f.evidence());
        m.put("why", f.why());
        m.put("remedy", f.remedy());
        m.put("example", f.example());
        return m;
    }

    private static Map<String, Object> jsonReport(AuditReport r) {
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("tool", "baton-audit");
        root.put("version", version());
        root.put("inputs", r.inputs());
        root.put("classesRead", r.classesRead());
        root.put("classesAudited", r.classesAudited());
        root.put("singletons", r.singletons());
        root.put(
                "findings", r.findings().stream().map(ReportFormat::jsonFinding).toList());
        List<Object> excluded = new ArrayList<>();
        for (AuditReport.Excluded e : r.excluded()) {
            Map<String, Object> m = jsonFinding(e.finding());
            Map<String, Object> by = new LinkedHashMap<>();
            by.put("where", e.by().where());
            by.put("reason", e.by().reason());
            by.put("owner", e.by().owner());
            by.put("expires", e.by().expires() == null ? null : e.by().expires().toString());
            m.put("excludedBy", by);
            excluded.add(m);
        }
        root.put("excluded", excluded);
        root.put("warnings", r.warnings());
        return root;
    }

    // ------------------------------------------------------------------ sarif

    private static String level(Severity s) {
        return switch (s) {
            case HIGH -> "error";
            case MEDIUM -> "warning";
            case LOW -> "note";
        };
    }

    private static Map<String, Object> text(String s) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("text", s);
        return m;
    }

    private static Map<String, Object> sarif(AuditReport r) {
        List<Object> rules = new ArrayList<>();
        for (Category c : Category.values()) {
            Map<String, Object> rule = new LinkedHashMap<>();
            rule.put("id", c.ruleId());
            rule.put("name", camel(c.name()));
            rule.put("shortDescription", text(c.summary()));
            rule.put(
                    "fullDescription",
                    text(c.summary() + ". See docs/audit.md of Baton for the evidence each finding "
                            + "rests on and the remedy."));
            Map<String, Object> help = text(c.summary());
            rule.put("help", help);
            Map<String, Object> config = new LinkedHashMap<>();
            config.put("level", c == Category.SINGLETON_STATE || c == Category.LOCAL_FILE_STATE ? "warning" : "error");
            rule.put("defaultConfiguration", config);
            rule.put("properties", Map.of("tags", List.of("scale-out", "concurrency")));
            rules.add(rule);
        }
        List<Object> results = new ArrayList<>();
        for (Finding f : r.findings()) {
            results.add(result(f, null));
        }
        for (AuditReport.Excluded e : r.excluded()) {
            results.add(result(e.finding(), e.by()));
        }
        Map<String, Object> driver = new LinkedHashMap<>();
        driver.put("name", "baton-audit");
        driver.put("version", version());
        driver.put("semanticVersion", version().replace("-SNAPSHOT", ""));
        driver.put("rules", rules);
        Map<String, Object> run = new LinkedHashMap<>();
        run.put("tool", Map.of("driver", driver));
        run.put("results", results);
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("$schema", "https://json.schemastore.org/sarif-2.1.0.json");
        root.put("version", "2.1.0");
        root.put("runs", List.of(run));
        return root;
    }

    private static Map<String, Object> result(Finding f, Exclusions.Entry by) {
        Map<String, Object> res = new LinkedHashMap<>();
        res.put("ruleId", f.category().ruleId());
        res.put("ruleIndex", f.category().ordinal());
        res.put("level", level(f.severity()));
        res.put(
                "message",
                text(f.location() + ": " + f.kind() + ". " + f.evidence() + ". " + f.why() + " Fix: " + f.remedy()));
        Map<String, Object> artifact = new LinkedHashMap<>();
        artifact.put(
                "uri", f.sourceFile() != null ? f.sourceFile() : f.className().replace('.', '/') + ".class");
        Map<String, Object> physical = new LinkedHashMap<>();
        physical.put("artifactLocation", artifact);
        if (f.line() > 0) {
            physical.put("region", Map.of("startLine", f.line()));
        }
        Map<String, Object> logical = new LinkedHashMap<>();
        logical.put("fullyQualifiedName", f.location());
        logical.put("kind", f.member().isEmpty() ? "type" : "member");
        Map<String, Object> location = new LinkedHashMap<>();
        location.put("physicalLocation", physical);
        location.put("logicalLocations", List.of(logical));
        res.put("locations", List.of(location));
        res.put(
                "partialFingerprints",
                Map.of("batonAuditFinding/v1", f.category().name() + ":" + f.location()));
        res.put("properties", Map.of("severity", f.severity().name(), "kind", f.kind(), "example", f.example()));
        if (by != null) {
            Map<String, Object> s = new LinkedHashMap<>();
            s.put("kind", "external");
            s.put("justification", by.reason());
            res.put("suppressions", List.of(s));
        }
        return res;
    }

    private static String camel(String enumName) {
        StringBuilder sb = new StringBuilder();
        for (String part : enumName.split("_")) {
            sb.append(part.charAt(0)).append(part.substring(1).toLowerCase(Locale.ROOT));
        }
        return sb.toString();
    }
}
