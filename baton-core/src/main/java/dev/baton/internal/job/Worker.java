package dev.baton.internal.job;

import dev.baton.BatonMetrics;
import dev.baton.JobContext;
import dev.baton.JobHandler;
import dev.baton.PayloadCodec;
import dev.baton.RetryPolicy;
import dev.baton.TransactionBinding;
import dev.baton.WorkerConfig;
import dev.baton.internal.db.Db;
import dev.baton.internal.job.RunningAttempt.StopReason;
import dev.baton.internal.notify.Notifier;
import dev.baton.internal.service.Hooks;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Works jobs on this node: per queue, a {@link JobProducer} that claims only as many jobs as there are
 * free slots and hands them to that queue's handler threads, which run them through the
 * {@link JobExecutor} (the handler, and how it ended mapped to an outcome). Two services finish the work: the {@link JobHeartbeater} extends the leases of running
 * attempts in one bounded statement and stops handlers whose lease it cannot confirm; the
 * {@link JobCompleter} records outcomes in batches, each fenced by id, attempt token and state.
 *
 * <p>Self-stop: an attempt's local deadline is half the job lease after the send time of its last
 * answered heartbeat (or of its claim). Past it the handler is cancelled and the attempt writes
 * nothing; the rescuer returns the job to the queue once its lease expires on the database clock.
 */
public final class Worker {
    private static final Logger log = LoggerFactory.getLogger(Worker.class);
    /**
     * After the drain timeout, how long handlers told to stop get to return before the worker stops: one
     * that returns in time has its attempt released (or recorded); one that ignores the interrupt keeps
     * its attempt until its lease runs out on the database clock.
     */
    public static final long STOP_GRACE_NANOS = 500_000_000L;

    /** A registered handler with its payload type and retry policy. */
    public record Registration<T>(String kind, Class<T> type, JobHandler<T> handler, RetryPolicy retry) {
        void invoke(Object payload, JobContext ctx) throws Exception {
            handler.handle(type.cast(payload), ctx);
        }
    }

    private final Db db;
    private final DataSource coordination;
    private final JobStore store;
    private final Map<String, Registration<?>> handlers;
    /** The kinds this node claims: only those it has a handler for. */
    private final String[] kinds;

    private final WorkerConfig config;
    private final String nodeId;
    private final PayloadCodec codec;
    private final Notifier notifier;
    private final Hooks hooks;
    private final LongSupplier ticker;
    private final BatonMetrics metrics;
    private final TransactionBinding binding;
    private final Interceptors interceptors;

    private final Map<Long, RunningAttempt> running = new ConcurrentHashMap<>();
    private final List<JobProducer> queues = new ArrayList<>();
    private final JobCompleter completer;
    private final JobExecutor executor;
    private boolean stopped = true; // guarded by this

    private final JobHeartbeater heartbeater;
    private final UnhandledKindWatch unhandledKinds;
    /** Operators' controls over this node's claims: held while drained, disabled kinds left out. */
    private final ClaimGate gate;
    /** Bumped by every hold, so that a hand-back thread of an earlier hold gives up. */
    private final AtomicLong holds = new AtomicLong();
    /** Which cluster-wide job limits apply to this node's claims (decision 0019). */
    private final JobLimits limits;

    public Worker(
            DataSource dataSource,
            DataSource coordination,
            JobStore store,
            Map<String, Registration<?>> handlers,
            WorkerConfig config,
            String nodeId,
            PayloadCodec codec,
            Notifier notifier,
            Hooks hooks,
            LongSupplier ticker,
            BatonMetrics metrics,
            TransactionBinding binding,
            Interceptors interceptors) {
        this.db = Db.of(dataSource);
        this.coordination = coordination;
        this.store = store;
        this.handlers = Map.copyOf(handlers);
        this.kinds = handlers.keySet().toArray(new String[0]);
        this.gate = new ClaimGate(kinds);
        this.config = config;
        this.nodeId = nodeId;
        this.codec = codec;
        this.notifier = notifier;
        this.hooks = hooks;
        this.ticker = ticker;
        this.metrics = metrics;
        this.binding = binding;
        this.completer = new JobCompleter(db, store, hooks, ticker);
        this.interceptors = interceptors;
        this.executor = new JobExecutor(handlers, nodeId, codec, completer, hooks, ticker, metrics, interceptors);
        this.heartbeater = new JobHeartbeater(
                running, coordination, store, hooks, config.jobLease(), config.heartbeatInterval(), ticker);
        this.limits = new JobLimits(db, store.limits(), ticker, kinds);
        this.unhandledKinds = new UnhandledKindWatch(
                db,
                store,
                config.queues().keySet(),
                handlers.keySet(),
                config.rescueInterval(),
                config.unhandledKindTimeout(),
                metrics,
                ticker);
    }

    public synchronized void start() {
        if (!stopped) {
            return;
        }
        stopped = false;
        completer.start();
        heartbeater.start();
        config.queues()
                .forEach((queue, concurrency) -> queues.add(new JobProducer(
                        queue,
                        concurrency,
                        db,
                        store,
                        gate,
                        config,
                        nodeId,
                        notifier,
                        hooks,
                        ticker,
                        running,
                        executor,
                        heartbeater,
                        binding,
                        limits)));
        queues.forEach(JobProducer::start);
        unhandledKinds.start();
    }

    /**
     * Stops claiming new jobs (running ones go on). Returns once no claim statement is in flight, so
     * a job enqueued after this returns is never claimed by this node.
     */
    public void stopClaiming() {
        JobProducer.stopClaiming(producers());
    }

    /**
     * An operator's drain (or a retirement of this node's version): while {@code hold} is true no claim
     * is made (returns once no claim statement is in flight); running attempts get the drain timeout to
     * finish, and those still running then are told to stop and are released once their handlers return
     * (handed back to other nodes, no attempt used), as in {@link #stop()}, unless the hold was lifted
     * meanwhile. With {@code hold} false, claiming resumes at once.
     */
    public void hold(boolean hold) {
        if (gate.held() == hold) {
            return;
        }
        gate.hold(hold);
        long generation = holds.incrementAndGet();
        List<JobProducer> producers = producers();
        JobProducer.awaitClaimsInFlight(producers);
        if (!hold) {
            return;
        }
        Thread handBack = new Thread(() -> handBack(producers, generation), "baton-job-hand-back");
        handBack.setDaemon(true);
        handBack.start();
    }

    /** After the drain timeout, tells the attempts still running to stop, if the hold is still the same. */
    private void handBack(List<JobProducer> producers, long generation) {
        long deadline = ticker.getAsLong() + config.drainTimeout().toNanos();
        for (JobProducer q : producers) {
            q.awaitIdle(deadline);
        }
        if (holds.get() != generation || !gate.held()) {
            return;
        }
        for (RunningAttempt a : running.values()) {
            if (!a.finished && a.stop(StopReason.DRAIN)) {
                log.info(
                        "job {} (attempt {}) still running {} after this node was drained: told to stop; it is "
                                + "handed back once its handler returns",
                        a.job.id(),
                        a.job.attempt(),
                        config.drainTimeout());
            }
        }
    }

    /** Claims leave out the kinds an operator disabled, from the next claim on. */
    public void disableKinds(Set<String> disabled) {
        if (gate.disable(disabled)) {
            log.info("job kinds disabled by an operator: {}; claiming {}", disabled, Arrays.toString(gate.kinds()));
            JobProducer.awaitClaimsInFlight(producers());
        }
    }

    private synchronized List<JobProducer> producers() {
        return List.copyOf(queues);
    }

    /** True while an operator's drain holds this worker's claims. */
    public boolean held() {
        return gate.held();
    }

    /**
     * Graceful stop: no new claims; running jobs get the drain timeout to finish; those still running
     * then are told to stop (flag and interrupt) and get a short grace. An attempt is released for other
     * nodes (not counted as an attempt) only once its handler has returned. A handler still running after
     * the grace keeps its attempt, and with it its concurrency key, until the attempt's lease expires on
     * the database clock (it is no longer renewed), so no other node runs the job (or another job of its
     * key) before then; the job is then rescued, counted as a stall, and whatever the handler does after
     * this method returned is not recorded. Outcomes are flushed. Returns when done.
     */
    public synchronized void stop() {
        if (stopped) {
            return;
        }
        unhandledKinds.requestStop(); // ends alongside the claims: each may wait out its stop grace
        stopClaiming();
        unhandledKinds.stop();
        long deadline = ticker.getAsLong() + config.drainTimeout().toNanos();
        for (JobProducer q : queues) {
            q.awaitIdle(deadline);
        }
        for (RunningAttempt a : running.values()) {
            if (!a.finished && a.stop(StopReason.DRAIN)) {
                log.info(
                        "job {} (attempt {}) still running after the drain timeout: told to stop; it is released "
                                + "once its handler returns",
                        a.job.id(),
                        a.job.attempt());
            }
        }
        // Stopped attempts are no longer renewed; the grace is far shorter than their leases.
        long grace = ticker.getAsLong() + STOP_GRACE_NANOS;
        for (JobProducer q : queues) {
            q.awaitIdle(grace);
        }
        for (RunningAttempt a : running.values()) {
            if (!a.finished) {
                log.warn(
                        "job {} (attempt {}): its handler ignored the stop and still runs; the attempt keeps the job "
                                + "(and its concurrency key) until its lease expires on the database clock (within {}), then "
                                + "the job is rescued (counted as a stall)",
                        a.job.id(),
                        a.job.attempt(),
                        config.jobLease());
            }
        }
        stopped = true;
        queues.forEach(JobProducer::requestStop); // all at once: each may wait out its stop grace
        queues.forEach(JobProducer::stop);
        heartbeater.stop();
        completer.stop();
        queues.clear();
    }

    /** The watch over jobs of kinds no live node handles. */
    public UnhandledKindWatch unhandledKinds() {
        return unhandledKinds;
    }

    public int runningCount() {
        return running.size();
    }

    /** Outcomes queued for the completer and not yet taken (tests). */
    public int pendingOutcomes() {
        return completer.pending();
    }

    /**
     * Test support (the inline runner of baton-test): an execution of this worker's handlers on the calling
     * thread, with its own completer, never started. If this worker is started, it stops claiming first
     * (for good; running jobs go on), so from then on only the caller runs this node's jobs.
     */
    public InlineExecution inline() {
        synchronized (this) {
            if (!stopped) {
                stopClaiming();
            }
        }
        JobCompleter own = new JobCompleter(db, store, hooks, ticker);
        return new InlineExecution(
                db,
                store,
                kinds,
                config.queues().keySet(),
                config.jobLease(),
                nodeId,
                hooks,
                ticker,
                binding,
                new JobExecutor(handlers, nodeId, codec, own, hooks, ticker, metrics, interceptors),
                own);
    }
}
