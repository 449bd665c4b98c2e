package dev.baton.testkit;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * Checks a recorded history against the fenced-mutex model: a lease is held by at most one owner
 * per generation, and the protected resource only ever accepts writes whose fencing token is the
 * newest it has seen, from the owner that was granted it.
 *
 * <p>Rules (each violation string starts with its id):
 *
 * <ul>
 *   <li><b>R1</b> at most one owner per (lease, generation) among the grants. Recording the same
 *       grant twice is harmless. (Grants carry no trustworthy global order, since they are recorded
 *       from several threads after the fact, so "generations strictly increase per lease" is
 *       enforced in this form: a generation is never handed to two owners.)
 *   <li><b>R3</b> per lease, committed writes ordered by {@link Write#seq()} never go back in
 *       generation (equal is fine: one holder writing repeatedly). Two writes of one lease with
 *       the same seq are also reported, as their order is ambiguous.
 *   <li><b>R4</b> every write's (lease, generation) was granted to that write's owner; a write
 *       with a generation never granted, or granted only to someone else, is a violation.
 * </ul>
 *
 * <p>The check is complete for the history given and is deterministic: violations are ordered by
 * rule, then lease, then generation or seq.
 */
public final class FencedMutexChecker {

    private FencedMutexChecker() {}

    /**
     * Checks {@code grants} and {@code writes}; neither needs to be in any particular order.
     *
     * @param grants every grant that happened (a grant missing here makes its writes fail R4)
     * @param writes every write known to have committed
     * @return the violations found; empty for a consistent (including an empty) history
     * @throws NullPointerException if a collection or an element is null
     */
    public static CheckResult check(Collection<Grant> grants, Collection<Write> writes) {
        Objects.requireNonNull(grants, "grants");
        Objects.requireNonNull(writes, "writes");
        List<String> violations = new ArrayList<>();

        // lease -> generation -> owners
        Map<String, Map<Long, Set<String>>> owners = new TreeMap<>();
        for (Grant g : grants) {
            Objects.requireNonNull(g, "grants contains null");
            owners.computeIfAbsent(g.lease(), l -> new TreeMap<>())
                    .computeIfAbsent(g.generation(), gen -> new TreeSet<>())
                    .add(g.owner());
        }

        // R1
        owners.forEach((lease, byGeneration) -> byGeneration.forEach((generation, who) -> {
            if (who.size() > 1) {
                violations.add("R1: lease '" + lease + "' generation " + generation
                        + " was granted to more than one owner: " + quoted(who));
            }
        }));

        // R3
        Map<String, List<Write>> writesByLease = new TreeMap<>();
        for (Write w : writes) {
            Objects.requireNonNull(w, "writes contains null");
            writesByLease.computeIfAbsent(w.lease(), l -> new ArrayList<>()).add(w);
        }
        writesByLease.forEach((lease, ws) -> {
            ws.sort(Comparator.comparingLong(Write::seq));
            Write highest = null; // the earlier-committed write with the highest generation
            Write previous = null;
            for (Write w : ws) {
                if (previous != null && previous.seq() == w.seq()) {
                    violations.add("R3: lease '" + lease + "' has more than one write with seq " + w.seq() + " ("
                            + previous + " and " + w + "); commit order is ambiguous");
                }
                if (highest != null && w.generation() < highest.generation()) {
                    violations.add("R3: lease '" + lease + "': " + w + " committed after " + highest
                            + "; generations must never go back");
                }
                if (highest == null || w.generation() > highest.generation()) {
                    highest = w;
                }
                previous = w;
            }
        });

        // R4
        writesByLease.forEach((lease, ws) -> {
            for (Write w : ws) {
                Set<String> grantedTo = owners.getOrDefault(lease, Map.of()).get(w.generation());
                if (grantedTo == null) {
                    violations.add("R4: " + w + " carries generation " + w.generation()
                            + ", which was never granted on lease '" + lease + "'");
                } else if (!grantedTo.contains(w.owner())) {
                    violations.add("R4: " + w + " carries generation " + w.generation() + ", which was granted to "
                            + quoted(grantedTo) + ", not '" + w.owner() + "'");
                }
            }
        });

        return new CheckResult(violations, grants.size(), writes.size());
    }

    private static String quoted(Set<String> names) {
        return names.stream().map(n -> "'" + n + "'").collect(Collectors.joining(", ", "[", "]"));
    }
}
