package dev.baton.cli;

import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;

/**
 * The fault schedule of one chaos run, derived from a seed alone: the same seed, duration, node count,
 * fault kinds and lease TTL give the same plan, so a failing run's seed reproduces its schedule (the
 * timing of the system under test still varies from run to run).
 *
 * <p>Faults start after a warm-up and end before a quiet tail, so the run begins from a healthy cluster
 * and every fault is healed before the checker runs. A node is never the target of two overlapping
 * faults, and database restarts never overlap each other.
 */
record ChaosPlan(long seed, Duration duration, int nodes, List<Fault> faults) {
    /** Quiet time at the start, before the first fault. */
    static final Duration WARM_UP = Duration.ofSeconds(5);
    /** Quiet time at the end, after the last fault has healed, for the cluster to show progress again. */
    static final Duration QUIET_TAIL = Duration.ofSeconds(8);

    enum Kind {
        /** SIGSTOP the node for longer than a lease, then SIGCONT: a paused former owner wakes up. */
        PAUSE("pause (SIGSTOP/SIGCONT)"),
        /** SIGKILL the node, restart it after the given downtime. */
        KILL("SIGKILL + restart"),
        /** SIGTERM the node (graceful drain), restart it after the given downtime. */
        GRACEFUL_RESTART("SIGTERM + restart"),
        /** pg_terminate_backend of one of the node's database sessions. */
        TERMINATE_BACKEND("backend terminated"),
        /** The node's network path to the database drops every byte for the given time. */
        BLACK_HOLE("network black hole"),
        /** The node's network path to the database delays every chunk for the given time. */
        LATENCY("network latency"),
        /** The PostgreSQL server stops and starts again after the given downtime (owned server only). */
        DB_RESTART("PostgreSQL restart");

        final String label;

        Kind(String label) {
            this.label = label;
        }
    }

    /**
     * One fault. {@code node} is the 0-based target (-1 for database restarts); {@code length} is how
     * long the fault lasts (the pause, the downtime, the black hole); {@code latency} is only set for
     * {@link Kind#LATENCY}.
     */
    record Fault(Duration at, Kind kind, int node, Duration length, Duration latency) {
        Duration end() {
            return at.plus(length);
        }

        String describe() {
            String target = node < 0 ? "database" : "node-" + (node + 1);
            String what = switch (kind) {
                case PAUSE -> "paused for " + Durations.human(length);
                case KILL, GRACEFUL_RESTART, DB_RESTART -> "down for " + Durations.human(length);
                case TERMINATE_BACKEND -> "one session terminated";
                case BLACK_HOLE -> "cut off for " + Durations.human(length);
                case LATENCY -> "+" + Durations.human(latency) + " per chunk for " + Durations.human(length);
            };
            return String.format(Locale.ROOT, "t+%-7s %-20s %-9s %s", Durations.human(at), kind.label, target, what);
        }
    }

    /**
     * Derives the plan.
     *
     * @param leaseTtl the nodes' lease TTL: pauses last 1.2 to 2.5 of it, so most outlive the lease
     */
    static ChaosPlan generate(long seed, Duration duration, int nodes, Set<Kind> kinds, Duration leaseTtl) {
        if (nodes < 2) {
            throw new IllegalArgumentException("a chaos run needs at least 2 nodes, but got " + nodes);
        }
        if (kinds.isEmpty()) {
            throw new IllegalArgumentException("a chaos run needs at least one fault kind");
        }
        List<Kind> pool = List.copyOf(EnumSet.copyOf(kinds)); // enum order, whatever order the caller used
        SplittableRandom random = new SplittableRandom(seed);
        long end = duration.minus(QUIET_TAIL).toMillis();
        long[] busyUntil = new long[nodes];
        long dbBusyUntil = 0;
        List<Fault> faults = new ArrayList<>();
        for (long t = WARM_UP.toMillis(); ; t += random.nextLong(1_000, 4_000)) {
            Kind kind = pool.get(random.nextInt(pool.size()));
            long length = switch (kind) {
                case PAUSE -> (long) (leaseTtl.toMillis() * (1.2 + random.nextDouble() * 1.3));
                case KILL, GRACEFUL_RESTART -> random.nextLong(300, 3_000);
                case TERMINATE_BACKEND -> 0;
                case BLACK_HOLE -> random.nextLong(500, 4_000);
                case LATENCY -> random.nextLong(1_000, 5_000);
                case DB_RESTART -> random.nextLong(200, 2_000);
            };
            long latency = kind == Kind.LATENCY ? random.nextLong(20, 400) : 0;
            int node = kind == Kind.DB_RESTART ? -1 : random.nextInt(nodes);
            if (t + length > end) {
                break;
            }
            final long at = t;
            if (node >= 0 && busyUntil[node] > at) {
                // Take the next free node instead, if any; else drop this fault (still deterministic).
                node = -1;
                for (int i = 1; i < nodes; i++) {
                    int candidate = (random.nextInt(nodes) + i) % nodes;
                    if (busyUntil[candidate] <= at) {
                        node = candidate;
                        break;
                    }
                }
                if (node < 0) {
                    continue;
                }
            }
            if (kind == Kind.DB_RESTART) {
                if (dbBusyUntil > at) {
                    continue;
                }
                dbBusyUntil = at + length;
            } else {
                busyUntil[node] = at + length;
            }
            faults.add(new Fault(
                    Duration.ofMillis(at), kind, node, Duration.ofMillis(length), Duration.ofMillis(latency)));
        }
        return new ChaosPlan(seed, duration, nodes, List.copyOf(faults));
    }

    Map<Kind, Integer> counts() {
        Map<Kind, Integer> counts = new EnumMap<>(Kind.class);
        for (Fault f : faults) {
            counts.merge(f.kind(), 1, Integer::sum);
        }
        return counts;
    }
}
