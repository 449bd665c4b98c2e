package dev.baton;

import java.sql.SQLException;
import java.time.Duration;
import java.util.Objects;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The cluster's housekeeping, run by one node at a time under the {@value MaintenanceTask#LEASE} lease to
 * save load, on every started node whether it works jobs or not: the rescuer returns expired attempts to
 * their queue (or fails them after max stalls); the pruner keeps every Baton table bounded by its
 * retention: finished jobs, idle lease rows and ended terms, departed nodes, schedules disabled long ago,
 * expired deliveries, tokens, slots and rate state; and jobs whose kind no live node handles end failed after a timeout. Every
 * statement is bounded (batches) and stays safe if two nodes ever run it at once (SKIP LOCKED;
 * predicates re-checked on locked rows).
 */
final class Maintenance implements LeaderTask {
    private static final Logger log = LoggerFactory.getLogger(Maintenance.class);
    static final int BATCH = 1000;
    /** Prune at most this many batches per table and run, so one run never holds the database long. */
    static final int MAX_PRUNE_BATCHES = 20;
    static final Duration PRUNE_INTERVAL = Duration.ofMinutes(1);

    /**
     * What maintenance keeps and for how long.
     *
     * @param rescueInterval        how often expired attempts are rescued
     * @param maxStalls             after this many expired attempts a job ends failed
     * @param jobRetention          how long finished jobs are kept
     * @param unhandledKindTimeout  how long an available job whose kind no live node handles waits before it fails
     * @param retention             how long ended lease terms, idle lease rows, departed nodes and disabled
     *                              schedules are kept
     */
    record Config(Duration rescueInterval, int maxStalls, Duration jobRetention, Duration unhandledKindTimeout,
                  Duration retention) {
        Config {
            Objects.requireNonNull(rescueInterval, "rescueInterval");
            Objects.requireNonNull(jobRetention, "jobRetention");
            Objects.requireNonNull(unhandledKindTimeout, "unhandledKindTimeout");
            Objects.requireNonNull(retention, "retention");
        }

        static Config of(WorkerConfig w, Duration retention) {
            return new Config(w.rescueInterval(), w.maxStalls(), w.retention(), w.unhandledKindTimeout(), retention);
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
    private final String nodeId;
    private final LongSupplier ticker;

    Maintenance(Db db, JobStore jobs, Leases leases, Schedules schedules, Nodes nodes, Coordination coordination,
                Config config, String nodeId, LongSupplier ticker) {
        this.db = db;
        this.jobs = jobs;
        this.leases = leases;
        this.schedules = schedules;
        this.nodes = nodes;
        this.coordination = coordination;
        this.config = config;
        this.nodeId = nodeId;
        this.ticker = ticker;
    }

    @Override
    public void run(LeaderContext ctx) {
        long lastPrune = 0;
        boolean first = true;
        do {
            try {
                rescueOnce();
                failUnhandledOnce();
                if (first || ticker.getAsLong() - lastPrune >= PRUNE_INTERVAL.toNanos()) {
                    pruneOnce();
                    lastPrune = ticker.getAsLong();
                    first = false;
                }
            } catch (SQLException | RuntimeException e) {
                log.warn("maintenance failed, retrying in {}: {}", config.rescueInterval(), e.getMessage());
            }
        } while (!ctx.awaitCancellation(config.rescueInterval()));
    }

    /** Rescues every expired attempt, in batches (each its own transaction); returns how many. */
    int rescueOnce() throws SQLException {
        int total = 0;
        int n;
        do {
            n = db.call("rescuing expired attempts", c -> jobs.rescue(c, BATCH, config.maxStalls(), nodeId));
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
        int unhandled = batches("failing jobs of unhandled kinds",
                c -> jobs.failUnhandled(c, config.unhandledKindTimeout().toMillis(), BATCH));
        if (unhandled > 0) {
            log.warn("failed {} jobs whose kind no live node handles after waiting {} (unhandledKindTimeout)",
                    unhandled, config.unhandledKindTimeout());
        }
        return unhandled;
    }

    /** One pass of every retention rule, each table in bounded batches. */
    Pruned pruneOnce() throws SQLException {
        int finished = batches("pruning finished jobs", c -> jobs.prune(c, config.jobRetention().toMillis(), BATCH));
        int coord = coordination.purgeExpired();
        int idle = batches("pruning idle leases", c -> leases.pruneIdle(c, config.retention(), BATCH));
        int history = batches("pruning lease history", c -> leases.pruneHistory(c, config.retention(), BATCH));
        int departed = batches("pruning departed nodes", c -> nodes.prune(c, config.retention(), BATCH));
        int disabled = batches("pruning disabled schedules", c -> schedules.prune(c, config.retention(), BATCH));
        return new Pruned(finished, coord, idle, history, departed, disabled);
    }

    /** Runs {@code step} (each call its own transaction) until a batch is short, at most MAX_PRUNE_BATCHES times. */
    private int batches(String what, Db.Work<Integer> step) throws SQLException {
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
