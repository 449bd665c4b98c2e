package dev.baton;

import java.sql.SQLException;
import java.time.Duration;
import java.util.Objects;
import java.util.Set;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Housekeeping, in two parts, each run by one node at a time to save load. Every statement is bounded
 * (batches) and stays safe if two nodes ever run it at once (SKIP LOCKED; predicates re-checked on
 * locked rows).
 *
 * <ul>
 *   <li>{@link Part#CLUSTER}, under {@value MaintenanceTask#LEASE} on every started node, worker or not: keeps
 *       the tables of leases, nodes, schedules and the coordination primitives bounded by their retention
 *       (idle lease rows and ended terms, departed nodes, schedules disabled long ago, expired deliveries,
 *       tokens, slots and rate state).
 *   <li>{@link Part#JOBS}, under {@value #JOBS_LEASE} on nodes that run a worker, with that worker's
 *       settings: returns expired attempts to their queue (or fails them after max stalls), prunes
 *       finished jobs, and fails jobs whose kind no live node handles once they waited longer than the
 *       unhandled-kind timeout. A node without a worker never applies job settings it was not given.
 * </ul>
 */
final class Maintenance implements LeaderTask {
    private static final Logger log = LoggerFactory.getLogger(Maintenance.class);
    /** The lease of the job part, held by one node that runs a worker. */
    static final String JOBS_LEASE = "baton.jobs.maintenance";
    static final int BATCH = 1000;
    /** Prune at most this many batches per table and run, so one run never holds the database long. */
    static final int MAX_PRUNE_BATCHES = 20;
    static final Duration PRUNE_INTERVAL = Duration.ofMinutes(1);

    /** Which housekeeping a {@link Maintenance} does. */
    enum Part { CLUSTER, JOBS }

    /**
     * What maintenance keeps and for how long.
     *
     * @param worker    the job settings (rescue interval, max stalls, job retention, unhandled-kind timeout)
     *                  of the node's worker; null when the node runs none (then only {@link Part#CLUSTER})
     * @param ownKinds  the job kinds this node handles
     * @param retention how long ended lease terms, idle lease rows, departed nodes and disabled schedules are kept
     */
    record Config(WorkerConfig worker, Set<String> ownKinds, Duration retention) {
        Config {
            Objects.requireNonNull(retention, "retention");
            ownKinds = Set.copyOf(ownKinds);
        }
    }

    /** What one prune run deleted (or failed), per table. */
    record Pruned(int jobs, int coordination, int leases, int history, int nodes, int schedules) {
        int total() {
            return jobs + coordination + leases + history + nodes + schedules;
        }
    }

    private final Db db;
    private final JobStore jobs;
    private final Leases leases;
    private final Schedules schedules;
    private final Nodes nodes;
    private final Coordination coordination;
    private final Config config;
    private final Set<Part> parts;
    private final String nodeId;
    private final LongSupplier ticker;

    Maintenance(Db db, JobStore jobs, Leases leases, Schedules schedules, Nodes nodes, Coordination coordination,
                Config config, Set<Part> parts, String nodeId, LongSupplier ticker) {
        if (parts.contains(Part.JOBS) && config.worker() == null) {
            throw new IllegalArgumentException("job maintenance needs the settings of a worker");
        }
        this.db = db;
        this.jobs = jobs;
        this.leases = leases;
        this.schedules = schedules;
        this.nodes = nodes;
        this.coordination = coordination;
        this.config = config;
        this.parts = Set.copyOf(parts);
        this.nodeId = nodeId;
        this.ticker = ticker;
    }

    @Override
    public void run(LeaderContext ctx) {
        boolean jobPart = parts.contains(Part.JOBS);
        Duration pause = jobPart ? config.worker().rescueInterval() : PRUNE_INTERVAL;
        long lastPrune = 0;
        boolean first = true;
        // Jobs of unhandled kinds are failed only once this term has watched the cluster for the whole
        // timeout without a failed pass: after an outage every heartbeat looks stale for a while.
        long watchingSince = ticker.getAsLong();
        do {
            try {
                if (jobPart) {
                    rescueOnce();
                    if (ticker.getAsLong() - watchingSince >= config.worker().unhandledKindTimeout().toNanos()) {
                        failUnhandledOnce();
                    }
                }
                if (first || ticker.getAsLong() - lastPrune >= PRUNE_INTERVAL.toNanos()) {
                    pruneOnce();
                    lastPrune = ticker.getAsLong();
                    first = false;
                }
            } catch (SQLException | RuntimeException e) {
                watchingSince = ticker.getAsLong();
                log.warn("maintenance failed, retrying in {}: {}", pause, e.getMessage());
            }
        } while (!ctx.awaitCancellation(pause));
    }

    /** Rescues every expired attempt, in batches (each its own transaction); returns how many. */
    int rescueOnce() throws SQLException {
        int total = 0;
        int n;
        do {
            n = db.call("rescuing expired attempts", c -> jobs.rescue(c, BATCH, config.worker().maxStalls(), nodeId));
            total += n;
        } while (n == BATCH);
        if (total > 0) {
            log.info("rescued {} job attempts whose lease expired", total);
        }
        return total;
    }

    /**
     * Fails available jobs that have waited longer than the unhandled-kind timeout for a kind no live node
     * handles; returns how many. Runs with the rescue (an index probe per distinct kind of available jobs).
     */
    int failUnhandledOnce() throws SQLException {
        Duration timeout = config.worker().unhandledKindTimeout();
        int unhandled = batches("failing jobs of unhandled kinds",
                c -> jobs.failUnhandled(c, config.ownKinds(), timeout.toMillis(), BATCH));
        if (unhandled > 0) {
            log.warn("failed {} jobs whose kind no live node handles after waiting {} (unhandledKindTimeout)",
                    unhandled, timeout);
        }
        return unhandled;
    }

    /** One pass of the retention rules of this maintenance's parts, each table in bounded batches. */
    Pruned pruneOnce() throws SQLException {
        int finished = 0;
        if (parts.contains(Part.JOBS)) {
            long keep = config.worker().retention().toMillis();
            finished = batches("pruning finished jobs", c -> jobs.prune(c, keep, BATCH));
        }
        if (!parts.contains(Part.CLUSTER)) {
            return new Pruned(finished, 0, 0, 0, 0, 0);
        }
        int coord = coordination.purgeExpired();
        int idle = batches("pruning idle leases", c -> leases.pruneIdle(c, config.retention(), BATCH));
        int history = batches("pruning lease history", c -> leases.pruneHistory(c, config.retention(), BATCH));
        int departed = batches("pruning departed nodes", c -> nodes.prune(c, config.retention(), BATCH));
        int disabled = batches("pruning disabled schedules", c -> schedules.prune(c, config.retention(), BATCH));
        return new Pruned(finished, coord, idle, history, departed, disabled);
    }

    private int batches(String what, Db.Work<Integer> step) throws SQLException {
        return batches(db, what, step);
    }

    /**
     * Runs {@code step} (each call its own transaction, deleting at most {@value #BATCH} rows) until a batch
     * is short, at most {@value #MAX_PRUNE_BATCHES} times; returns the rows it deleted.
     */
    static int batches(Db db, String what, Db.Work<Integer> step) throws SQLException {
        int total = 0;
        for (int i = 0; i < MAX_PRUNE_BATCHES; i++) {
            int n = db.call(what, step);
            total += n;
            if (n < BATCH) {
                break;
            }
        }
        return total;
    }
}
