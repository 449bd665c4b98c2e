package dev.baton.testkit;

import java.util.List;
import java.util.Objects;

/**
 * Outcome of {@link FencedMutexChecker#check}: a list of human-readable violations, each starting
 * with its rule id ({@code "R1: ..."}). Empty means the history is consistent with a fenced mutex.
 *
 * @param violations the violations found, in a deterministic order
 * @param grantsChecked how many grants were examined
 * @param writesChecked how many writes were examined
 */
public record CheckResult(List<String> violations, int grantsChecked, int writesChecked) {

    /**
     * Copies {@code violations} so the result is immutable.
     *
     * @param violations the violations found
     * @param grantsChecked how many grants were examined
     * @param writesChecked how many writes were examined
     */
    public CheckResult {
        violations = List.copyOf(Objects.requireNonNull(violations, "violations"));
    }

    /**
     * Returns whether no rule was violated.
     *
     * @return true for a consistent history
     */
    public boolean ok() {
        return violations.isEmpty();
    }

    /**
     * Does nothing for a consistent history; otherwise fails the test.
     *
     * @throws AssertionError listing every violation, one per line
     */
    public void assertOk() {
        if (!ok()) {
            StringBuilder sb = new StringBuilder()
                    .append("fenced-mutex history (")
                    .append(grantsChecked)
                    .append(" grants, ")
                    .append(writesChecked)
                    .append(" writes) has ")
                    .append(violations.size())
                    .append(" violation(s):");
            for (String v : violations) {
                sb.append("\n  - ").append(v);
            }
            throw new AssertionError(sb.toString());
        }
    }
}
