package dev.baton.audit;

import java.time.Duration;
import java.util.List;

/**
 * The result of one audit: the findings that are not excluded (most severe first), the excluded ones
 * with the exclusion that covered each, and warnings about the exclusions themselves (stale entries
 * that matched nothing, expired entries whose findings are reported again). Immutable.
 */
public final class AuditReport {
    /**
     * A finding hidden by an exclusion.
     *
     * @param finding the finding
     * @param by      the exclusion entry that covered it
     */
    public record Excluded(Finding finding, Exclusions.Entry by) {}

    private final List<String> inputs;
    private final int classesRead;
    private final int classesAudited;
    private final int singletons;
    private final List<Finding> findings;
    private final List<Excluded> excluded;
    private final List<String> warnings;
    private final Duration elapsed;

    AuditReport(
            List<String> inputs,
            int classesRead,
            int classesAudited,
            int singletons,
            List<Finding> findings,
            List<Excluded> excluded,
            List<String> warnings,
            Duration elapsed) {
        this.inputs = List.copyOf(inputs);
        this.classesRead = classesRead;
        this.classesAudited = classesAudited;
        this.singletons = singletons;
        this.findings = List.copyOf(findings);
        this.excluded = List.copyOf(excluded);
        this.warnings = List.copyOf(warnings);
        this.elapsed = elapsed;
    }

    /** The paths audited, as given. */
    public List<String> inputs() {
        return inputs;
    }

    /** Class files read, libraries included. */
    public int classesRead() {
        return classesRead;
    }

    /** Class files whose findings are reported. */
    public int classesAudited() {
        return classesAudited;
    }

    /** Classes recognised as singletons (beans, enums, and the classes they hold). */
    public int singletons() {
        return singletons;
    }

    /** Findings not covered by an exclusion: most severe first, then by category, class and member. */
    public List<Finding> findings() {
        return findings;
    }

    /** Findings at {@code threshold} or above, not excluded. */
    public List<Finding> findingsAtLeast(Severity threshold) {
        return findings.stream().filter(f -> f.severity().atLeast(threshold)).toList();
    }

    /** Findings covered by an unexpired exclusion. */
    public List<Excluded> excluded() {
        return excluded;
    }

    /** Stale and expired exclusions, one sentence each. */
    public List<String> warnings() {
        return warnings;
    }

    /** How long the audit took, reading included. */
    public Duration elapsed() {
        return elapsed;
    }

    /** Counts by severity, e.g. {@code "3 high, 1 medium, 0 low"}. */
    public String severityCounts() {
        long h = findings.stream().filter(f -> f.severity() == Severity.HIGH).count();
        long m = findings.stream().filter(f -> f.severity() == Severity.MEDIUM).count();
        long l = findings.stream().filter(f -> f.severity() == Severity.LOW).count();
        return h + " high, " + m + " medium, " + l + " low";
    }
}
