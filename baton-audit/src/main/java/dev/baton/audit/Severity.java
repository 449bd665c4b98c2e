package dev.baton.audit;

import java.util.Locale;

/**
 * How much a finding matters once the service runs as several instances. Ordered: {@link #LOW} is
 * below {@link #MEDIUM}, which is below {@link #HIGH}.
 */
public enum Severity {
    /** A heuristic with weak evidence (a name, a configured path): read it, then fix or exclude it. */
    LOW,
    /** State that diverges per instance (caches, counters, maps): stale or partial answers, not a breach. */
    MEDIUM,
    /**
     * Safety-relevant state or work: single-use tokens, replay and revocation state, rate limiters,
     * concurrency caps, locks around shared writes, and schedulers that run once per instance.
     */
    HIGH;

    /** True if this severity is {@code threshold} or above it. */
    public boolean atLeast(Severity threshold) {
        return compareTo(threshold) >= 0;
    }

    /**
     * Parses {@code low}, {@code medium} or {@code high} (any case).
     *
     * @throws IllegalArgumentException naming the value and the accepted ones
     */
    public static Severity parse(String value) {
        if (value != null) {
            for (Severity s : values()) {
                if (s.name().equalsIgnoreCase(value.trim())) {
                    return s;
                }
            }
        }
        throw new IllegalArgumentException("severity must be one of low, medium, high, but was '" + value + "'");
    }

    String label() {
        return name().toLowerCase(Locale.ROOT);
    }
}
