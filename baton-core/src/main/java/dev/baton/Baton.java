package dev.baton;

import dev.baton.internal.db.Db;
import dev.baton.internal.db.Identifiers;
import dev.baton.internal.job.Interceptors;
import dev.baton.internal.job.JobSettings;
import dev.baton.internal.job.JobStore;
import dev.baton.internal.job.Worker;
import dev.baton.internal.maintenance.Maintenance;
import dev.baton.internal.maintenance.MaintenanceTask;
import dev.baton.internal.node.ControlStore;
import dev.baton.internal.node.NodeRegistrar;
import dev.baton.internal.notify.Notifier;
import dev.baton.internal.schedule.ScheduleStore;
import dev.baton.internal.schedule.Scheduler;
import dev.baton.internal.schema.SchemaMigrator;
import dev.baton.internal.service.Hooks;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.LongSupplier;
import java.util.stream.Stream;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One Baton instance per process: the entry point to leases, fenced writes, leadership and the node
 * registry, all sharing one PostgreSQL database with every other instance.
 *
 * <pre>{@code
 * Baton baton = Baton.builder(dataSource).nodeId("orders-7f9c").build().start();
 * Leadership sweeper = baton.leadership("nightly-sweep", LeadershipConfig.defaults(), ctx -> {
 *     while (!ctx.awaitCancellation(Duration.ofSeconds(30))) {
 *         ctx.fenced(tx -> sweep(tx));   // rejected once another instance leads
 *     }
 * }).start();
 * ...
 * baton.close();                          // releases leases, records the node as stopped
 * }</pre>
 *
 * <p>Guarantees: at most one database-authorized owner per lease name; a generation (fencing token)
 * that strictly increases on every change of ownership; protected writes that cannot commit once a
 * newer generation exists. Not "exactly once": a process can crash after an external effect and
 * before recording it.
 */
public final class Baton implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Baton.class);

    /** The default schema. */
    public static final String DEFAULT_SCHEMA = "baton";
    /** The queue sweeps run on (added to the worker with 2 slots when sweeps are registered). */
    public static final String SWEEP_QUEUE = "baton.sweeps";
    /** Sweep names: the schedule {@code sweep:<name>} must fit {@link Schedule#MAX_NAME_LENGTH}. */
    public static final int MAX_SWEEP_NAME_LENGTH = Schedule.MAX_NAME_LENGTH - "sweep:".length();
    /** Nodes beat every 5 s; a node is stale after three missed beats. */
    public static final Duration DEFAULT_NODE_HEARTBEAT = Duration.ofSeconds(5);
    /**
     * 7 days: ended lease terms, idle lease rows, departed nodes and disabled schedules are kept this long
     * for operators, then pruned, so every Baton table stays bounded however often nodes restart.
     */
    public static final Duration DEFAULT_RETENTION = Duration.ofDays(7);

    private final DataSource dataSource;
    private final DataSource coordination;
    private final String schema;
    private final String nodeId;
    private final boolean migrateOnStart;
    private final Hooks hooks;
    private final LongSupplier ticker;
    private final Notifier notifier;
    private final Leases leases;
    private final Nodes nodes;
    private final NodeRegistrar registrar;
    private final JobStore jobStore;
    private final Jobs jobs;
    private final Worker worker;
    private final Coordination primitives;
    private final Schedules schedules;
    private final Admin admin;
    private final String app;
    private final String appVersion;
    private final BatonMetrics metrics;
    /** The job interceptors of this node (see {@link Builder#interceptor}). */
    private final Interceptors interceptors;

    private final List<Schedule> declared;
    /** Job limits declared with {@link Builder#jobLimit}, set in the database at start. */
    private final List<JobLimit> declaredLimits;

    private final List<Leadership> leaderships = new CopyOnWriteArrayList<>();
    /** Baton's own runner (maintenance and the scheduler), started with the node. */
    private final Leadership maintenance;

    private volatile boolean started;
    private volatile boolean closed;
    /** Operators' controls (issued through the database); this node obeys them after every heartbeat. */
    private final Controls controls;

    private final Object controlLock = new Object();
    /** Held by an operator's drain or a retirement of this version. Written under controlLock. */
    private volatile boolean held;
    /** When (ticker) the standing controls were last read; a campaign reads them again when stale. */
    private volatile long controlsReadAt;

    private final long controlsStaleNanos;
    /** The application called {@link #drain()}: an operator's resume does not make the node active again. */
    private volatile boolean drainedByApp;

    private Baton(Builder b) {
        this.dataSource = b.dataSource;
        this.coordination = b.coordinationDataSource != null ? b.coordinationDataSource : b.dataSource;
        this.schema = b.schema;
        this.nodeId = b.nodeId != null ? b.nodeId : NodeRegistrar.defaultNodeId();
        this.migrateOnStart = b.migrateOnStart;
        this.hooks = b.hooks;
        this.ticker = b.ticker;
        DataSource listen = b.listenDataSource != null ? b.listenDataSource : coordination;
        // A listen or coordination data source is Baton's own: LISTEN may keep one of its connections.
        this.notifier = new Notifier(
                listen, schema, b.notifications, b.listenDataSource != null || b.coordinationDataSource != null);
        this.leases = new Leases(dataSource, schema, hooks, ticker, notifier);
        this.nodes = new Nodes(dataSource, schema, leases);
        this.registrar = new NodeRegistrar(
                coordination,
                schema,
                nodeId,
                b.nodeHeartbeat,
                b.app,
                b.appVersion,
                b.worker != null ? List.copyOf(b.handlers.keySet()) : null,
                b.worker != null ? JobSettings.of(b.worker) : null,
                b.ticker);
        this.app = b.app;
        this.appVersion = b.appVersion;
        this.controlsStaleNanos = b.nodeHeartbeat.multipliedBy(2).toNanos();
        this.declared = List.copyOf(b.schedules.values());
        this.declaredLimits = List.copyOf(b.jobLimits.values());
        this.metrics = BatonMetrics.safe(b.metrics);
        this.primitives = new Coordination(dataSource, schema, leases, nodeId, ticker)
                .metrics(metrics)
                .hooks(hooks);
        this.jobStore = new JobStore(schema).metrics(metrics);
        int maxPayload = b.worker != null ? b.worker.maxPayloadBytes() : WorkerConfig.DEFAULT_MAX_PAYLOAD_BYTES;
        this.interceptors = new Interceptors(b.interceptors);
        this.jobs = new Jobs(
                dataSource, jobStore, b.codec, maxPayload, b.transactionBinding, b.jobDefaults, interceptors, ticker);
        this.schedules = new Schedules(dataSource, schema, jobStore, jobs, app, appVersion);
        this.controls = new Controls(dataSource, schema, leases.store().channel(), schedules);
        this.admin = new Admin(dataSource, jobStore, jobs, schedules, leases, nodes, controls);
        if (!b.sweeps.isEmpty() && b.worker == null) {
            throw new IllegalArgumentException("sweeps " + b.sweeps + " were registered but no worker is configured; "
                    + "sweeps run as jobs: add .worker(WorkerConfig.builder()...build())");
        }
        WorkerConfig workerConfig = b.worker;
        if (workerConfig != null
                && !b.sweeps.isEmpty()
                && !workerConfig.queues().containsKey(SWEEP_QUEUE)) {
            workerConfig = workerConfig.toBuilder().queue(SWEEP_QUEUE, 2).build();
        }
        if (workerConfig == null && !b.handlers.isEmpty()) {
            throw new IllegalArgumentException("job handlers " + b.handlers.keySet() + " were registered but no "
                    + "worker is configured; add .worker(WorkerConfig.builder().queue(\"default\", 10).build())");
        }
        this.worker = workerConfig == null
                ? null
                : new Worker(
                        dataSource,
                        coordination,
                        jobStore,
                        b.handlers,
                        workerConfig,
                        nodeId,
                        b.codec,
                        notifier,
                        hooks,
                        ticker,
                        metrics,
                        b.transactionBinding,
                        interceptors);
        // Every started node takes part in maintenance, worker or not: a service that only uses leases or
        // the coordination primitives must still get their rows pruned. One node at a time runs it.
        Maintenance housekeeping = new Maintenance(
                Db.of(dataSource),
                jobStore,
                leases.store(),
                schedules.store(),
                nodes.store(),
                primitives.store(),
                new ControlStore(schema, null),
                new Maintenance.Config(
                        workerConfig, workerConfig == null ? Set.of() : b.handlers.keySet(), b.retention),
                nodeId,
                ticker);
        Duration schedulerPoll =
                (workerConfig != null ? workerConfig : WorkerConfig.builder().build()).pollInterval();
        Db db = Db.of(dataSource);
        ScheduleStore scheduleStore = schedules.store();
        // Baton's own runner: test pause points are for the application's leases, never for this one.
        Leases ownLeases = new Leases(dataSource, schema, Hooks.NONE, ticker, notifier);
        this.maintenance = new Leadership(
                ownLeases,
                coordination,
                dataSource,
                notifier,
                MaintenanceTask.LEASE,
                nodeId,
                b.maintenance,
                new MaintenanceTask(Stream.concat(
                                housekeeping.services().stream(),
                                Stream.of(() -> new Scheduler(
                                        db,
                                        scheduleStore,
                                        jobStore,
                                        notifier,
                                        schedulerPoll,
                                        app,
                                        appVersion,
                                        metrics,
                                        ticker,
                                        interceptors)))
                        .toList()),
                LeadershipListener.NONE,
                Hooks.NONE,
                ticker,
                metrics);
        maintenance.campaignGate(this::mayCampaign);
        leaderships.add(maintenance);
    }

    /** A builder of a Baton node on {@code dataSource}, the pool its statements run on. */
    public static Builder builder(DataSource dataSource) {
        return new Builder(dataSource);
    }

    /**
     * Applies Baton's schema migrations to {@code schema}; safe to run from many instances at once.
     *
     * @throws SchemaVersionException if the schema is newer than this Baton understands
     */
    public static MigrationResult migrate(DataSource dataSource, String schema) {
        return SchemaMigrator.migrate(Objects.requireNonNull(dataSource, "dataSource"), schema);
    }

    /** The newest schema version this Baton understands. */
    public static int schemaVersion() {
        return SchemaMigrator.CURRENT_VERSION;
    }

    /**
     * Migrates (or, with {@code migrateOnStart(false)}, verifies) the schema, registers this node,
     * starts its heartbeat and the release-notification listener. Idempotent.
     *
     * @throws SchemaVersionException if the schema is newer than this Baton, or not migrated
     */
    public synchronized Baton start() {
        if (started) {
            return this;
        }
        if (closed) {
            throw new IllegalStateException("this Baton instance was closed; build a new one");
        }
        Db.of(dataSource).requireWritable("main");
        if (coordination != dataSource) {
            Db.of(coordination).requireWritable("coordination");
        }
        if (migrateOnStart) {
            MigrationResult r = migrate(dataSource, schema);
            if (r.changed()) {
                log.info("Baton schema '{}' migrated from version {} to {}", schema, r.from(), r.to());
            }
        } else {
            SchemaMigrator.verify(dataSource, schema);
        }
        registrar.register();
        registrar.onControls(this::applyControls);
        registrar.start();
        try {
            registrar.readControls(); // a drained or retired node starts held: before any claim or campaign
            declaredLimits.forEach(jobs::setLimit); // before the worker claims
            if (!declared.isEmpty()) {
                schedules.declare(app, appVersion, declared);
            }
            schedules.reconcile(app, appVersion);
        } catch (RuntimeException e) {
            registrar.stop();
            registrar.setState(NodeState.STOPPED); // a node that failed to start is not left "active"
            throw e;
        }
        notifier.listen();
        if (worker != null) {
            worker.start();
        }
        maintenance.start();
        started = true;
        log.info(
                "Baton node '{}' started on schema '{}' (notifications: {})",
                nodeId,
                schema,
                notifier.listening() ? "LISTEN" : "polling");
        return this;
    }

    /**
     * The operator's API of this Baton's schema: search jobs and act on many at once, queue depth, lag and
     * throughput, and the schedules, leases and nodes. Usable on a node that was never started.
     */
    public Admin admin() {
        return admin;
    }

    /** The leases of this Baton's schema. */
    public Leases leases() {
        return leases;
    }

    /** Durable jobs: enqueue, inspect, cancel, retry, pause queues. Usable without a worker. */
    public Jobs jobs() {
        return jobs;
    }

    /**
     * The kinds of available jobs on this node's queues that no live node handles, each with the queues its
     * jobs wait on, as this node's worker last saw them (checked every {@link WorkerConfig#rescueInterval()});
     * empty without a worker or before the first check. Such jobs use no attempt while they wait and fail
     * after {@link WorkerConfig#unhandledKindTimeout()}; each kind is logged at WARN once per queue and node.
     */
    public Map<String, Set<String>> unhandledKinds() {
        return worker == null ? Map.of() : worker.unhandledKinds().current();
    }

    /**
     * Shared replacements for per-instance state: delivery dedupe, single-use tokens, claim locks,
     * waiting leases, concurrency caps and rate limiters.
     */
    public Coordination coordination() {
        return primitives;
    }

    /** Recurring schedules: list with next and last run, pause, resume, trigger now. */
    public Schedules schedules() {
        return schedules;
    }

    /** The node registry and the ownership view. */
    public Nodes nodes() {
        return nodes;
    }

    /** This node's id, also the owner id of the leases it acquires through {@link Leadership}. */
    public String nodeId() {
        return nodeId;
    }

    /** The schema Baton's tables live in. */
    public String schema() {
        return schema;
    }

    /** Outcomes of finished attempts waiting for the completer (tests). */
    int pendingOutcomes() {
        return worker == null ? 0 : worker.pendingOutcomes();
    }

    /** True while release notifications are known to arrive (false: polling only). */
    public boolean notificationsActive() {
        return notifier.listening();
    }

    /** A leadership runner for {@code name} owned by this node (not started; call {@link Leadership#start()}). */
    public Leadership leadership(String name, LeadershipConfig config, LeaderTask task) {
        return leadership(name, config, task, LeadershipListener.NONE);
    }

    /**
     * Operators' controls: drain or resume a node, retire a version, disable a job kind, pause a schedule,
     * expire a lease, with their record. Usable without starting this node.
     */
    public Controls controls() {
        return controls;
    }

    /** A leadership runner with callbacks (not started). Stopped by {@link #close()}. */
    public Leadership leadership(String name, LeadershipConfig config, LeaderTask task, LeadershipListener listener) {
        Leadership l = new Leadership(
                leases,
                coordination,
                dataSource,
                notifier,
                name,
                nodeId,
                config,
                task,
                listener,
                hooks,
                ticker,
                metrics);
        l.campaignGate(this::mayCampaign);
        synchronized (controlLock) {
            if (held) {
                l.hold(true);
            }
            leaderships.add(l);
        }
        return l;
    }

    /**
     * Obeys the operators' standing controls as the last heartbeat (or the start) read them: disabled kinds
     * are left out of claims; a drain of this node or a retirement of its version holds the worker (no new
     * claims; running jobs handed back after the drain timeout) and every leadership runner (stepping down,
     * releasing the lease, not campaigning) until lifted.
     */
    private void applyControls(ControlStore.ForNode f) {
        controlsReadAt = ticker.getAsLong();
        synchronized (controlLock) {
            if (closed) {
                return;
            }
            if (worker != null) {
                worker.disableKinds(f.disabledKinds());
            }
            if (f.drained() == held) {
                return;
            }
            held = f.drained();
            if (held) {
                ControlRecord by = f.drainedBy().orElseThrow();
                log.warn(
                        "node '{}' held by an operator ({} of '{}' by '{}' at {}{}): it claims nothing new, hands back "
                                + "its running jobs after the drain timeout and steps down from its leases until resumed",
                        nodeId,
                        by.action().name().toLowerCase(Locale.ROOT),
                        by.target(),
                        by.createdBy(),
                        by.createdAt(),
                        by.reason().map(r -> ": " + r).orElse(""));
            } else {
                log.info("node '{}' resumed by an operator: claiming and campaigning again", nodeId);
            }
            if (worker != null) {
                worker.hold(held);
            }
            leaderships.forEach(l -> l.hold(held));
            if (held || !drainedByApp) {
                registrar.setState(held ? NodeState.DRAINING : NodeState.ACTIVE);
            }
        }
    }

    /** True while an operator's drain (or a retirement of this node's version) holds this node. */
    public boolean heldByOperator() {
        return held;
    }

    /**
     * Asked before every campaign (on the campaign thread, which holds no lock of this node): not while held;
     * and when the controls were not read for two heartbeat intervals (the node could not reach the
     * database, or its heartbeats fail), they are read first, bounded by one interval, so a node back from an
     * outage obeys a drain or retirement issued meanwhile before it takes a lease.
     */
    private boolean mayCampaign() {
        if (held) {
            return false;
        }
        if (ticker.getAsLong() - controlsReadAt < controlsStaleNanos) {
            return true;
        }
        return registrar.refreshControls() && !held;
    }

    /**
     * Starts a graceful shutdown: this node claims no new jobs (running ones go on) and is recorded as
     * draining, visible to operators. Leadership is unaffected until {@link #close()}.
     */
    public void drain() {
        drainedByApp = true;
        if (worker != null) {
            worker.stopClaiming();
        }
        registrar.setState(NodeState.DRAINING);
    }

    /** Stops every leadership runner (releasing their leases), records the node as stopped. Idempotent. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (started) {
            registrar.setState(NodeState.DRAINING);
        }
        if (worker != null) {
            worker.stop();
        }
        leaderships.forEach(Leadership::stop);
        jobs.close();
        notifier.close();
        registrar.stop();
        if (started) {
            registrar.setState(NodeState.STOPPED);
            log.info("Baton node '{}' stopped", nodeId);
        }
    }

    /** Builds a {@link Baton}. Every setting is validated when set; the defaults suit production. */
    public static final class Builder {
        private final DataSource dataSource;
        private DataSource coordinationDataSource;
        private DataSource listenDataSource;
        private String schema = DEFAULT_SCHEMA;
        private String nodeId;
        private boolean migrateOnStart = true;
        private NotificationMode notifications = NotificationMode.AUTO;
        private Duration nodeHeartbeat = DEFAULT_NODE_HEARTBEAT;
        private Hooks hooks = Hooks.NONE;
        private LongSupplier ticker = System::nanoTime;
        private WorkerConfig worker;
        private PayloadCodec codec = PayloadCodec.jackson();
        private final Map<String, Worker.Registration<?>> handlers = new LinkedHashMap<>();
        private final Map<String, JobDefaults> jobDefaults = new LinkedHashMap<>();
        private LeadershipConfig maintenance = LeadershipConfig.defaults();
        private String app = "default";
        private String appVersion = "0";
        private Duration retention = DEFAULT_RETENTION;
        private final Map<String, Schedule> schedules = new LinkedHashMap<>();
        private final List<String> sweeps = new java.util.ArrayList<>();
        private BatonMetrics metrics = BatonMetrics.NONE;
        private TransactionBinding transactionBinding = TransactionBinding.NONE;
        private final List<JobInterceptor> interceptors = new ArrayList<>();
        private final Map<String, JobLimit> jobLimits = new LinkedHashMap<>();

        private Builder(DataSource dataSource) {
            this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
        }

        /** The schema holding Baton's tables: lower-case letters, digits and underscores. */
        public Builder schema(String schema) {
            Identifiers.schema(schema);
            this.schema = schema;
            return this;
        }

        /** This node's id (1 to 200 characters); by default host-pid-random. Unique per running process. */
        public Builder nodeId(String nodeId) {
            this.nodeId = Identifiers.name("nodeId", nodeId);
            return this;
        }

        /**
         * A separate data source for lease renewals and acquisition, job heartbeats and node heartbeats,
         * so that an exhausted application pool cannot starve them (without one, they borrow from the
         * main pool call by call, and a leader whose pool stays exhausted for half its lease steps down).
         * Baton borrows a connection per call and returns it, holding none between calls, except one for
         * LISTEN (unless a {@link #listenDataSource} is given). Recommended: a small pool of its own, about
         * one connection per {@link Leadership} that renews at the same moment, plus two (heartbeats) plus
         * one (LISTEN).
         */
        public Builder coordinationDataSource(DataSource ds) {
            this.coordinationDataSource = Objects.requireNonNull(ds, "coordinationDataSource");
            return this;
        }

        /**
         * A data source with direct (not transaction-pooled) connections for LISTEN, when the main one
         * goes through PgBouncer in transaction mode.
         */
        public Builder listenDataSource(DataSource ds) {
            this.listenDataSource = Objects.requireNonNull(ds, "listenDataSource");
            return this;
        }

        /** Apply migrations on {@link #start()} (default) or only verify the version. */
        public Builder migrateOnStart(boolean migrate) {
            this.migrateOnStart = migrate;
            return this;
        }

        /** How nodes wake each other (LISTEN/NOTIFY or polling); default {@link NotificationMode#AUTO}. */
        public Builder notifications(NotificationMode mode) {
            this.notifications = Objects.requireNonNull(mode, "notifications");
            return this;
        }

        /** How often this node records its heartbeat; at least 100 ms. */
        public Builder nodeHeartbeat(Duration interval) {
            Checks.requirePositive("nodeHeartbeat", interval, false);
            if (interval.compareTo(Duration.ofMillis(100)) < 0) {
                throw new IllegalArgumentException("nodeHeartbeat must be at least PT0.1S, but was " + interval);
            }
            this.nodeHeartbeat = interval;
            return this;
        }

        /** Pause points for tests (see {@code dev.baton.testkit.PausePoints}); not part of the API. */
        Builder testHooks(Hooks hooks) {
            this.hooks = Objects.requireNonNull(hooks, "hooks");
            return this;
        }

        /** The monotonic clock (nanoseconds); tests only. */
        Builder ticker(LongSupplier ticker) {
            this.ticker = Objects.requireNonNull(ticker, "ticker");
            return this;
        }

        /**
         * Work jobs on this node: which queues, how many at once, and the timing (validated). A node has one worker,
         * which works every queue it names ({@code WorkerConfig.builder().queue("a", 8).queue("b", 4)}); a second
         * call replaces the first (a Spring customizer's worker replaces the one from properties).
         */
        public Builder worker(WorkerConfig worker) {
            this.worker = Objects.requireNonNull(worker, "worker");
            return this;
        }

        /** How payloads are encoded; default Jackson. */
        public Builder codec(PayloadCodec codec) {
            this.codec = Objects.requireNonNull(codec, "codec");
            return this;
        }

        /** Handles jobs of {@code kind} with payloads decoded as {@code type}, retried with the default backoff. */
        public <T> Builder handle(String kind, Class<T> type, JobHandler<T> handler) {
            return handle(kind, type, handler, RetryPolicy.DEFAULT);
        }

        /** Handles jobs of {@code kind}, retried with {@code retry} between attempts. */
        public <T> Builder handle(String kind, Class<T> type, JobHandler<T> handler, RetryPolicy retry) {
            Identifiers.name("job kind", kind);
            Objects.requireNonNull(type, "type");
            Objects.requireNonNull(handler, "handler");
            Objects.requireNonNull(retry, "retry");
            if (handlers.containsKey(kind)) {
                throw new IllegalArgumentException("a handler for job kind '" + kind + "' is already registered");
            }
            handlers.put(kind, new Worker.Registration<>(kind, type, handler, retry));
            return this;
        }

        /**
         * Defaults for jobs of {@code kind} enqueued through this node: the queue, max attempts and timeout a
         * {@link JobRequest} leaves unset are taken from {@code defaults}. Independent of handlers: a node that
         * only enqueues may declare them too. A second call for the same kind replaces the first.
         */
        public Builder jobDefaults(String kind, JobDefaults defaults) {
            Identifiers.name("job kind", kind);
            jobDefaults.put(kind, Objects.requireNonNull(defaults, "defaults"));
            return this;
        }

        /**
         * The application this node belongs to and its version. Schedules are owned by their
         * application; a version never rewrites schedules stored by a newer version, and a schedule is
         * disabled only when no live node of a declaring version remains. Default "default" / "0".
         */
        public Builder application(String name, String version) {
            this.app = Identifiers.name("application name", name);
            this.appVersion = Identifiers.name("application version", version);
            return this;
        }

        /** Declares a recurring schedule, upserted at start-up (see {@link Schedule}). */
        public Builder schedule(Schedule schedule) {
            Objects.requireNonNull(schedule, "schedule");
            schedule.requireJob();
            if (schedules.putIfAbsent(schedule.name(), schedule) != null) {
                throw new IllegalArgumentException("schedule '" + schedule.name() + "' is declared twice");
            }
            return this;
        }

        /**
         * Housekeeping that runs once per {@code interval} across all instances: a schedule named
         * {@code sweep:<name>} enqueueing a job on queue {@value #SWEEP_QUEUE} that runs {@code task}.
         * Missed intervals are skipped. Needs a worker.
         */
        public Builder sweep(String name, Duration interval, SweepTask task) {
            Identifiers.name("sweep name", name);
            if (name.length() > MAX_SWEEP_NAME_LENGTH) {
                throw new IllegalArgumentException("sweep name must be 1 to " + MAX_SWEEP_NAME_LENGTH + " characters "
                        + "(its schedule is named sweep:<name>), but was " + name.length() + " characters");
            }
            Objects.requireNonNull(task, "task");
            String kind = "baton.sweep:" + name;
            schedule(Schedule.every("sweep:" + name, interval)
                    .job(kind, null)
                    .queue(SWEEP_QUEUE)
                    .misfire(MisfirePolicy.SKIP)
                    .maxAttempts(3));
            handle(kind, Object.class, (ignored, ctx) -> task.run(ctx));
            sweeps.add(name);
            return this;
        }

        /**
         * Where Baton reports its events for metrics (see {@link BatonMetrics}; {@code baton-micrometer}
         * has a Micrometer implementation). Default: none.
         */
        public Builder metrics(BatonMetrics metrics) {
            this.metrics = Objects.requireNonNull(metrics, "metrics");
            return this;
        }

        /**
         * How long ended lease terms, idle lease rows, departed nodes (stopped, or silent past their staleness
         * bound, that long) and disabled schedules are kept before the maintenance leader prunes them
         * (finished jobs: {@link WorkerConfig#retention()}); at least
         * one second (days, in production), default {@link #DEFAULT_RETENTION}. Use the same value on every node.
         */
        public Builder retention(Duration retention) {
            Checks.requirePositive("retention", retention, false);
            if (retention.compareTo(Duration.ofSeconds(1)) < 0) {
                throw new IllegalArgumentException("retention must be at least PT1S, but was " + retention);
            }
            this.retention = retention;
            return this;
        }

        /**
         * How Baton meets the transactions a framework keeps per thread (see {@link TransactionBinding}):
         * {@link Jobs#enqueue(JobRequest)} joins the caller's open transaction on the data source, and the
         * work of {@link JobContext#transaction} runs with the job's completion transaction bound as the
         * thread's current one. Default {@link TransactionBinding#NONE}; the Spring Boot starter sets
         * Spring's.
         */
        public Builder transactionBinding(TransactionBinding binding) {
            this.transactionBinding = Objects.requireNonNull(
                    binding, "transactionBinding must not be null; use TransactionBinding.NONE for none");
            return this;
        }

        /**
         * Adds a {@link JobInterceptor} around this node's enqueues, schedule firings and attempts. Several
         * run in the order added on the way in, in reverse on the way out.
         */
        public Builder interceptor(JobInterceptor interceptor) {
            interceptors.add(Objects.requireNonNull(interceptor, "interceptor must not be null"));
            return this;
        }

        /**
         * Declares a cluster-wide job limit, set in the database when this node starts (before it claims),
         * replacing the values of the limit with the same {@link JobLimit#id()}: the last node started with
         * a declaration sets its values. Limits set this way are never removed by a node that no longer
         * declares them: remove one with {@link Jobs#removeLimit}. See {@link JobLimit}.
         */
        public Builder jobLimit(JobLimit limit) {
            if (limit == null) {
                throw new IllegalArgumentException("limit must not be null (build one with JobLimit.perQueue, perKind, "
                        + "perMetadata or their rate variants)");
            }
            jobLimits.put(limit.id(), limit);
            return this;
        }

        /** Timing of the lease under which one node runs maintenance (rescue, pruning) and the scheduler. */
        public Builder maintenance(LeadershipConfig config) {
            this.maintenance = Objects.requireNonNull(config, "maintenance");
            return this;
        }

        /** Builds the node (not started; see {@link Baton#start()}). */
        public Baton build() {
            return new Baton(this);
        }
    }

    // ---------------------------------------------------------------- test support

    static {
        // The helpers of baton-test drive a node's worker and scheduler through this, not through API.
        dev.baton.internal.testsupport.TestSupport.install(new TestAccess());
    }

    /** What baton-test's helpers reach of a node (see {@code dev.baton.internal.testsupport.TestSupport}). */
    private static final class TestAccess implements dev.baton.internal.testsupport.TestSupport.Access {
        @Override
        public dev.baton.internal.job.InlineExecution inline(Object node) {
            Baton baton = (Baton) node;
            if (baton.worker == null) {
                throw new IllegalStateException("Baton node '" + baton.nodeId + "' has no worker, so no job handlers: "
                        + "register them with Baton.Builder#handle and configure .worker(...)");
            }
            return baton.worker.inline();
        }

        @Override
        public Scheduler scheduler(Object node) {
            Baton baton = (Baton) node;
            synchronized (baton) {
                if (!baton.started && !baton.declared.isEmpty()) {
                    baton.schedules.declare(baton.app, baton.appVersion, baton.declared);
                }
            }
            return new Scheduler(
                    Db.of(baton.dataSource),
                    baton.schedules.store(),
                    baton.jobStore,
                    baton.notifier,
                    WorkerConfig.DEFAULT_POLL_INTERVAL,
                    baton.app,
                    baton.appVersion,
                    baton.metrics,
                    baton.ticker,
                    baton.interceptors);
        }

        @Override
        public DataSource dataSource(Object node) {
            return ((Baton) node).dataSource;
        }

        @Override
        public PayloadCodec codec(Object node) {
            return ((Baton) node).jobs.codec();
        }
    }
}
