package dev.baton.audit;

/**
 * What kind of process-local state a finding is. Each category has a stable rule id (used in SARIF
 * and in exclusion files, where the enum name is accepted too) and a one-line summary.
 */
public enum Category {
    /** Mutable collections, maps, caches and counters held by a singleton bean or a static field. */
    SINGLETON_STATE(
            "baton-audit/singleton-state",
            "Mutable state in a singleton or a static field: each instance keeps its own copy"),
    /** {@code @Scheduled} methods, scheduled executors, timers, start-up hooks that start loops or threads, Quartz RAM store. */
    IN_PROCESS_SCHEDULING(
            "baton-audit/in-process-scheduling", "In-process scheduling or background loop: runs once per instance"),
    /** Rate limiters, semaphores, bulkheads, and JVM locks held around writes to shared rows. */
    LOCAL_LIMITER("baton-audit/local-limiter", "In-process limiter, cap or lock: each instance enforces its own share"),
    /** Single-use tokens, replay and dedupe sets, revocation epochs, session and socket registries. */
    SINGLE_USE_STATE(
            "baton-audit/single-use-state", "Single-use, replay, revocation or session state kept in one process"),
    /** Files written to fixed or configured local paths by singletons. */
    LOCAL_FILE_STATE("baton-audit/local-file-state", "Local file used as shared state: other instances do not see it");

    private final String ruleId;
    private final String summary;

    Category(String ruleId, String summary) {
        this.ruleId = ruleId;
        this.summary = summary;
    }

    /** The stable rule id, e.g. {@code baton-audit/local-limiter}. */
    public String ruleId() {
        return ruleId;
    }

    /** One line saying what the category covers and why it breaks. */
    public String summary() {
        return summary;
    }

    /**
     * Parses an enum name ({@code LOCAL_LIMITER}, any case, '-' for '_') or a rule id, with or
     * without the {@code baton-audit/} prefix.
     *
     * @throws IllegalArgumentException naming the value and the accepted ones
     */
    public static Category parse(String value) {
        if (value != null) {
            String v = value.trim();
            for (Category c : values()) {
                if (c.name().equalsIgnoreCase(v.replace('-', '_'))
                        || c.ruleId.equalsIgnoreCase(v)
                        || c.ruleId.equalsIgnoreCase("baton-audit/" + v)) {
                    return c;
                }
            }
        }
        StringBuilder names = new StringBuilder();
        for (Category c : values()) {
            names.append(names.length() == 0 ? "" : ", ").append(c.name());
        }
        throw new IllegalArgumentException(
                "category must be one of " + names + " (or its rule id), but was '" + value + "'");
    }
}
