package dev.baton.internal.maintenance;

import dev.baton.WorkerConfig;
import dev.baton.internal.coord.CoordinationStore;
import dev.baton.internal.db.Db;
import dev.baton.internal.job.JobSettings;
import dev.baton.internal.job.JobStore;
import dev.baton.internal.lease.LeaseStore;
import dev.baton.internal.node.ControlStore;
import dev.baton.internal.node.NodeStore;
import dev.baton.internal.schedule.ScheduleStore;
import dev.baton.internal.service.Service;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The cluster's housekeeping statements, run by one node at a time under the {@value MaintenanceTask#LEASE}
 * lease to save load, on every started node whether it works jobs or not, by the services of each
 * maintenance term ({@link #services()}): the {@link Pruner} keeps every Baton table bounded by its retention
 * (finished jobs, idle lease rows and ended terms, departed nodes, schedules disabled long ago, the record of
 * operators' controls that ended long ago); the
 * {@link CoordinationPurger} deletes expired deliveries, tokens, slots and rate state; the {@link JobRescuer}
 * returns expired attempts to their queue (or fails them after max stalls) and fails jobs whose kind no live
 * node handles after a timeout. Every statement is bounded (batches) and stays safe if two nodes ever run it
 * at once (SKIP LOCKED; predicates re-checked on locked rows).
 *
 * <p>The job settings applied are the cluster's, not the leader's: the most conservative of those the live
 * nodes that run a worker declare in their node rows, and the leader's own if it runs one (the longest job
 * retention, the most stalls, the longest unhandled-kind timeout). A node without a worker may lead, and
 * never applies job settings it was not given; with no worker live, job maintenance waits (and looks again
 * at every pass).
 */
public final class Maintenance {
    private static final Logger log = LoggerFactory.getLogger(Maintenance.class);
    public static final int BATCH = 1000;
    /** Prune at most this many batches per table and run, so one run never holds the database long. */
    public static final int MAX_PRUNE_BATCHES = 20;

    public static final Duration PRUNE_INTERVAL = Duration.ofMinutes(1);

    /**
     * The pause before the next prune run when a run ended with more due ({@link Pruned#more()}): a run of
     * {@value #MAX_PRUNE_BATCHES} batches took about 0.2 s at 10⁷ retained jobs (docs/benchmarks/retention.md), so
     * the pruner keeps up with about 16,000 finished jobs/s instead of the 333/s one run a minute removes.
     */
    public static final Duration PRUNE_CATCH_UP = Duration.ofSeconds(1);

    /**
     * What this node brings to maintenance.
     *
     * @param worker    this node's worker settings (its rescue interval sets the pace of maintenance when it
     *                  leads), or null when it runs none
     * @param ownKinds  the job kinds this node handles
     * @param retention how long ended lease terms, idle lease rows, departed nodes and disabled schedules are kept
     */
    public record Config(WorkerConfig worker, Set<String> ownKinds, Duration retention) {
        public Config {
            Objects.requireNonNull(retention, "retention");
            ownKinds = Set.copyOf(ownKinds);
        }

        /** This node's own job settings, if it runs a worker. */
        public Optional<JobSettings> ownJobSettings() {
            return Optional.ofNullable(worker).map(JobSettings::of);
        }
    }

    /** What one prune run deleted (or failed), per table. */
    public record Pruned(int jobs, int leases, int history, int nodes, int schedules, int controls) {
        public int total() {
            return jobs + leases + history + nodes + schedules + controls;
        }

        /** Some table gave every batch of the run full: more of it may be due. */
        public boolean more() {
            int capped = BATCH * MAX_PRUNE_BATCHES;
            return jobs == capped
                    || leases == capped
                    || history == capped
                    || nodes == capped
                    || schedules == capped
                    || controls == capped;
        }
    }

    private final Db db;
    private final JobStore jobs;
    private final LeaseStore leases;
    private final ScheduleStore schedules;
    private final NodeStore nodes;
    private final CoordinationStore coordination;
    private final ControlStore controls;
    private final Config config;
    private final String nodeId;
    private final LongSupplier ticker;

    public Maintenance(
            Db db,
            JobStore jobs,
            LeaseStore leases,
            ScheduleStore schedules,
            NodeStore nodes,
            CoordinationStore coordination,
            ControlStore controls,
            Config config,
            String nodeId,
            LongSupplier ticker) {
        this.db = db;
        this.jobs = jobs;
        this.leases = leases;
        this.schedules = schedules;
        this.nodes = nodes;
        this.coordination = coordination;
        this.controls = controls;
        this.config = config;
        this.nodeId = nodeId;
        this.ticker = ticker;
    }

    /** How often the rescue runs, and how soon a failed maintenance pass is tried again. */
    public Duration pace() {
        return config.worker() != null ? config.worker().rescueInterval() : WorkerConfig.DEFAULT_RESCUE_INTERVAL;
    }

    /** The services of one maintenance term, new instances at each call: rescuer, pruner and purger. */
    public List<Supplier<? extends Service>> services() {
        return List.of(
                () -> new JobRescuer(this, ticker),
                () -> new Pruner(this, ticker),
                () -> new CoordinationPurger(this, ticker));
    }

    /**
     * The job settings to apply: the most conservative of those the live workers declare and this node's
     * own (it counts whatever its heartbeat looks like); empty when neither exists.
     */
    public Optional<JobSettings> clusterJobSettings() throws SQLException {
        Optional<JobSettings> live = db.call("reading the job settings of the live workers", nodes::jobSettings);
        Optional<JobSettings> own = config.ownJobSettings();
        if (live.isPresent() && own.isPresent()) {
            return Optional.of(live.get().and(own.get()));
        }
        return live.isPresent() ? live : own;
    }

    /** {@link #rescueOnce(JobSettings)} with this node's own settings (it must run a worker). */
    public int rescueOnce() throws SQLException {
        return rescueOnce(config.ownJobSettings().orElseThrow());
    }

    /** Rescues every expired attempt, in batches (each its own transaction); returns how many. */
    public int rescueOnce(JobSettings settings) throws SQLException {
        int total = 0;
        int n;
        do {
            n = db.call("rescuing expired attempts", c -> jobs.rescue(c, BATCH, settings.maxStalls(), nodeId));
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
    public int failUnhandledOnce() throws SQLException {
        return failUnhandledOnce(config.ownJobSettings().orElseThrow());
    }

    public int failUnhandledOnce(JobSettings settings) throws SQLException {
        Duration timeout = settings.unhandledKindTimeout();
        int unhandled = batches(
                "failing jobs of unhandled kinds",
                c -> jobs.failUnhandled(c, config.ownKinds(), timeout.toMillis(), BATCH));
        if (unhandled > 0) {
            log.warn(
                    "failed {} jobs whose kind no live node handles after waiting {} (unhandledKindTimeout)",
                    unhandled,
                    timeout);
        }
        return unhandled;
    }

    /** {@link #pruneOnce(Optional)} with this node's own job settings. */
    public Pruned pruneOnce() throws SQLException {
        return pruneOnce(config.ownJobSettings());
    }

    /**
     * One pass of the tables' retention rules (not the coordination rows: {@link #purgeCoordination()}), each
     * table in bounded batches; finished jobs only with job settings.
     */
    public Pruned pruneOnce(Optional<JobSettings> settings) throws SQLException {
        int finished = 0;
        if (settings.isPresent()) {
            long keep = settings.get().retention().toMillis();
            finished = batches("pruning finished jobs", c -> jobs.prune(c, keep, BATCH));
            batches("pruning the uniqueness keys of pruned jobs", c -> jobs.pruneUnique(c, BATCH));
        }
        int idle = batches("pruning idle leases", c -> leases.pruneIdle(c, config.retention(), BATCH));
        int history = batches("pruning lease history", c -> leases.pruneHistory(c, config.retention(), BATCH));
        int departed = batches("pruning departed nodes", c -> nodes.prune(c, config.retention(), BATCH));
        int disabled = batches("pruning disabled schedules", c -> schedules.prune(c, config.retention(), BATCH));
        int ended = batches("pruning the record of ended controls", c -> controls.prune(c, config.retention(), BATCH));
        return new Pruned(finished, idle, history, departed, disabled, ended);
    }

    /** {@link #purgeCoordination(Db, CoordinationStore)} on this node's database. */
    public int purgeCoordination() throws SQLException {
        return purgeCoordination(db, coordination);
    }

    /** Deletes expired deliveries, tokens, slots and rate state, each kind in bounded batches; returns how many. */
    public static int purgeCoordination(Db db, CoordinationStore coordination) throws SQLException {
        int total = 0;
        for (CoordinationStore.Purge what : CoordinationStore.Purge.values()) {
            total += batches(db, "purging expired coordination rows", c -> coordination.purge(c, what, BATCH));
        }
        return total;
    }

    private int batches(String what, Db.Work<Integer> step) throws SQLException {
        return batches(db, what, step);
    }

    /**
     * Runs {@code step} (each call its own transaction, deleting at most {@value #BATCH} rows) until a batch
     * is short, at most {@value #MAX_PRUNE_BATCHES} times; returns the rows it deleted.
     */
    public static int batches(Db db, String what, Db.Work<Integer> step) throws SQLException {
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
