package dev.baton.internal.job;

import dev.baton.AttemptLostException;
import dev.baton.BatonMetrics;
import dev.baton.JobContext;
import dev.baton.JobHandler;
import dev.baton.PayloadCodec;
import dev.baton.RetryPolicy;
import dev.baton.UnknownOutcomeException;
import dev.baton.WorkerConfig;
import dev.baton.internal.db.Db;
import dev.baton.internal.job.RunningAttempt.StopReason;
import dev.baton.internal.notify.Notifier;
import dev.baton.internal.service.Hooks;
import dev.baton.internal.service.Service;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Works jobs on this node: per queue, a claimer that claims only as many jobs as there are free
 * slots and hands them to that queue's handler threads, which run the handlers and map how they ended
 * to outcomes. Two services finish the work: the {@link JobHeartbeater} extends the leases of running
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

    private final Map<Long, RunningAttempt> running = new ConcurrentHashMap<>();
    private final List<QueueRunner> queues = new ArrayList<>();
    private final JobCompleter completer;
    /** How long a claimer waits for more free slots after a full claim (see claimLoop). */
    public static final long CLAIM_COALESCE_NANOS = 2_000_000L;

    private volatile boolean claiming;
    private volatile boolean stopped = true;
    private final JobHeartbeater heartbeater;

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
            BatonMetrics metrics) {
        this.db = Db.of(dataSource);
        this.coordination = coordination;
        this.store = store;
        this.handlers = Map.copyOf(handlers);
        this.kinds = handlers.keySet().toArray(new String[0]);
        this.config = config;
        this.nodeId = nodeId;
        this.codec = codec;
        this.notifier = notifier;
        this.hooks = hooks;
        this.ticker = ticker;
        this.metrics = metrics;
        this.completer = new JobCompleter(db, store, hooks, ticker);
        this.heartbeater = new JobHeartbeater(
                running, coordination, store, hooks, config.jobLease(), config.heartbeatInterval(), ticker);
    }

    public synchronized void start() {
        if (!stopped) {
            return;
        }
        stopped = false;
        claiming = true;
        completer.start();
        heartbeater.start();
        config.queues().forEach((queue, concurrency) -> queues.add(new QueueRunner(queue, concurrency)));
        queues.forEach(QueueRunner::start);
    }

    /**
     * Stops claiming new jobs (running ones go on). Returns once no claim statement is in flight, so
     * a job enqueued after this returns is never claimed by this node.
     */
    public void stopClaiming() {
        claiming = false;
        queues.forEach(QueueRunner::awaitNoClaim);
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
        stopClaiming();
        long deadline = ticker.getAsLong() + config.drainTimeout().toNanos();
        for (QueueRunner q : queues) {
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
        for (QueueRunner q : queues) {
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
        queues.forEach(QueueRunner::shutdown);
        heartbeater.stop();
        completer.stop();
        queues.clear();
    }

    public int runningCount() {
        return running.size();
    }

    /** Outcomes queued for the completer and not yet taken (tests). */
    public int pendingOutcomes() {
        return completer.pending();
    }

    // ---------------------------------------------------------------- claiming

    /** One queue: the claimer thread, the slots, and the handler threads. */
    private final class QueueRunner {
        final String queue;
        final int concurrency;
        final Semaphore slots;
        final ExecutorService handlersPool;
        final Notifier.Subscription wake;
        final AtomicInteger inFlight = new AtomicInteger();
        /** Claimed attempts waiting for a handler thread. */
        final ConcurrentLinkedQueue<RunningAttempt> ready = new ConcurrentLinkedQueue<>();
        /** Handler threads taking ready attempts (or about to). */
        final AtomicInteger drainers = new AtomicInteger();
        /** 1 while a started handler thread has not yet taken its first ready attempt. */
        final AtomicInteger starting = new AtomicInteger();
        /** Held while a claim statement runs; stopClaiming takes it to wait out a claim in flight. */
        final Object claimLock = new Object();
        /** Names the claim in an unknown-outcome message (built once, not per claim). */
        final String claimWhat;

        Thread thread;

        QueueRunner(String queue, int concurrency) {
            this.queue = queue;
            this.concurrency = concurrency;
            this.slots = new Semaphore(concurrency);
            this.claimWhat = "a claim from queue '" + queue + "'";
            AtomicInteger n = new AtomicInteger();
            this.handlersPool = Executors.newFixedThreadPool(concurrency, r -> {
                Thread t = new Thread(r, "baton-job-" + queue + "-" + n.incrementAndGet());
                t.setDaemon(true);
                return t;
            });
            this.wake = notifier.subscribe(store.channel(), queue);
        }

        void start() {
            thread = daemon("baton-claim-" + queue, this::claimLoop);
        }

        private void claimLoop() {
            // After a full claim more jobs are likely ready: wait briefly for half the slots (at most 32)
            // to free up before claiming again, so that claims come in batches, not one per freed slot.
            int coalesce = Math.max(1, Math.min(concurrency / 2, 32));
            boolean more = false;
            while (claiming && !stopped) {
                int free = slots.availablePermits();
                if (more && free < coalesce) {
                    // Real time, not the (test-controllable) ticker: a throughput heuristic, not a lease bound.
                    long until = System.nanoTime() + CLAIM_COALESCE_NANOS;
                    long left;
                    while (claiming
                            && !stopped
                            && (free = slots.availablePermits()) < coalesce
                            && (left = until - System.nanoTime()) > 0) {
                        wake.await(left);
                    }
                    free = slots.availablePermits();
                }
                int claimed = 0;
                if (free > 0) {
                    synchronized (claimLock) {
                        if (!claiming) {
                            break;
                        }
                        try {
                            claimed = claimOnce(free);
                        } catch (SQLException | RuntimeException e) {
                            log.warn("claiming from queue '{}' failed, retrying: {}", queue, e.getMessage());
                        }
                    }
                }
                // With LISTEN active, enqueues wake us at once; polling is only the safety net.
                long poll = config.pollInterval().toNanos() * (notifier.listening() ? 5 : 1);
                if (free == 0 && more) {
                    wake.await(Service.jitter(poll)); // every slot busy: wait for one, then coalesce again
                    continue;
                }
                more = claimed > 0 && claimed == free;
                if (more) {
                    continue; // maybe more are ready
                }
                wake.await(Service.jitter(poll));
            }
        }

        /** Claims up to {@code free} jobs and starts them; returns how many. */
        int claimOnce(int free) throws SQLException {
            hooks.reach(Hooks.Points.JOB_BEFORE_CLAIM);
            long send = ticker.getAsLong();
            List<JobStore.Claimed> jobs;
            try {
                jobs = db.call(
                        claimWhat,
                        c -> store.claim(
                                c, queue, kinds, free, config.jobLease().toMillis(), nodeId));
            } catch (JobStore.KeyRaceLost e) {
                jobs = List.of();
            }
            boolean watchTimeout = false;
            for (JobStore.Claimed job : jobs) {
                slots.acquireUninterruptibly();
                inFlight.incrementAndGet();
                RunningAttempt a = new RunningAttempt(job, send, config.jobLease(), db, store, hooks);
                running.put(job.id(), a);
                watchTimeout |= a.hasTimeout;
                ready.add(a);
            }
            if (watchTimeout) {
                heartbeater.wake(); // the heartbeater must watch these timeouts
            }
            startDrainer();
            hooks.reach(Hooks.Points.JOB_CLAIMED);
            return jobs.size();
        }

        /**
         * Starts one more handler thread on the ready attempts unless one is already on its way, so a
         * claim wakes one thread, not one per job: each thread that takes an attempt while more are
         * ready starts the next, and every thread takes ready attempts until none are left. Threads
         * running long handlers thus never hold up ready attempts while a pool thread is idle (each
         * is at most one thread start behind), and short handlers are run back to back by the
         * threads already awake.
         */
        void startDrainer() {
            if (ready.isEmpty()
                    || starting.get() > 0
                    || drainers.get() >= concurrency
                    || !starting.compareAndSet(0, 1)) {
                return;
            }
            drainers.incrementAndGet();
            try {
                handlersPool.execute(this::drain);
            } catch (RejectedExecutionException e) {
                // Shutting down: attempts not started were released by stop().
                drainers.decrementAndGet();
                starting.set(0);
            }
        }

        /** A handler thread: runs ready attempts until none are left. */
        private void drain() {
            starting.set(0);
            while (true) {
                RunningAttempt a = ready.poll();
                if (a == null) {
                    drainers.decrementAndGet();
                    // An attempt added after the poll saw either this thread still counted (and is
                    // taken here) or the lower count (and its claimer started a thread).
                    if (ready.isEmpty()) {
                        return;
                    }
                    drainers.incrementAndGet();
                    continue;
                }
                startDrainer();
                boolean handedOver = false;
                try {
                    handedOver = execute(this, a);
                } catch (RuntimeException e) {
                    log.error(
                            "job {} attempt {}: unexpected failure around its handler", a.job.id(), a.job.attempt(), e);
                } catch (Error e) {
                    drainers.decrementAndGet();
                    free(a, true);
                    startDrainer();
                    throw e;
                }
                if (!handedOver) {
                    free(a, true);
                }
            }
        }

        /** The attempt's outcome is recorded (or will never be): its slot is free again. */
        void free(RunningAttempt a, boolean signal) {
            running.remove(a.job.id(), a);
            inFlight.decrementAndGet();
            slots.release();
            if (signal) {
                wake.signal();
            }
        }

        void awaitNoClaim() {
            wake.signal();
            synchronized (claimLock) {
                // nothing to do: a claim in flight has finished, and the next one sees claiming == false
            }
        }

        void awaitIdle(long deadlineNanos) {
            wake.signal();
            while (inFlight.get() > 0 && ticker.getAsLong() - deadlineNanos < 0) {
                wake.await(Math.min(10_000_000L, Math.max(1, deadlineNanos - ticker.getAsLong())));
            }
        }

        void shutdown() {
            wake.signal();
            join(thread);
            handlersPool.shutdownNow();
            wake.close();
        }
    }

    // ---------------------------------------------------------------- executing

    /**
     * Runs one attempt and queues its outcome. Returns true if the outcome was queued to free the
     * attempt's slot in {@code owner} once it is recorded: until then the attempt keeps its slot and stays
     * in the heartbeat, so a slow completer can neither let the node claim without bound nor let a
     * finished job's lease expire (which would run it again).
     */
    private boolean execute(QueueRunner owner, RunningAttempt a) {
        a.thread = Thread.currentThread();
        AttemptOutcome outcome;
        long started = ticker.getAsLong();
        try {
            if (a.stopReason != null) {
                return false; // drained or lost before it started
            }
            outcome = runHandler(a);
        } finally {
            a.finish();
            Thread.interrupted(); // never leak an interrupt into the next job on this thread
        }
        Duration ran = Duration.ofNanos(ticker.getAsLong() - started);
        StopReason stop = a.stopReason;
        if (stop != null
                && !a.completedInTransaction
                && !(a.finishedUnaware
                        && outcome != null
                        && outcome.kind == AttemptOutcome.Kind.SUCCESS
                        && stop != StopReason.LOST
                        && stop != StopReason.DEADLINE)) {
            // A handler that returned without having seen the stop finished its work before noticing: its
            // success stands (above). One that saw it, or threw, ends as the stop says.
            outcome = switch (stop) {
                case CANCEL_REQUESTED ->
                    AttemptOutcome.cancel(a.job, error(a, "Cancelled", "cancellation requested", null));
                case TIMEOUT ->
                    retryOrFail(
                            a,
                            error(
                                    a,
                                    "Timeout",
                                    "the handler ran longer than the job's timeout ("
                                            + Duration.ofMillis(a.job.timeoutMs()) + ")",
                                    null));
                // The handler has returned: give the job back to other nodes, not counted as an attempt.
                case DRAIN -> AttemptOutcome.release(a.job);
                // The attempt could not prove it still owned the job: write nothing.
                case LOST, DEADLINE -> null;
            };
        }
        report(a, outcome, ran);
        if (outcome == null) {
            return false;
        }
        outcome.free = () -> owner.free(a, false);
        outcome.wake = owner.wake;
        completer.add(outcome);
        return true;
    }

    /** Reports how the attempt ended (as decided here; the recording follows in the completer). */
    private void report(RunningAttempt a, AttemptOutcome outcome, Duration ran) {
        BatonMetrics.JobOutcome reported;
        if (a.completedInTransaction) {
            reported = BatonMetrics.JobOutcome.SUCCEEDED;
        } else if (outcome != null) {
            reported = switch (outcome.kind) {
                case SUCCESS -> BatonMetrics.JobOutcome.SUCCEEDED;
                case RETRY ->
                    a.job.attempt() < a.job.maxAttempts()
                            ? BatonMetrics.JobOutcome.RETRIED
                            : BatonMetrics.JobOutcome.FAILED;
                case FAIL -> BatonMetrics.JobOutcome.FAILED;
                case CANCEL -> BatonMetrics.JobOutcome.CANCELLED;
                case RELEASE -> BatonMetrics.JobOutcome.RELEASED;
            };
        } else if (a.stopReason == StopReason.LOST || a.stopReason == StopReason.DEADLINE) {
            reported = BatonMetrics.JobOutcome.SELF_STOPPED;
        } else if (a.stopReason == StopReason.DRAIN) {
            reported = BatonMetrics.JobOutcome.RELEASED;
        } else {
            return; // unknown outcome of its own transaction: the job tells later
        }
        metrics.jobFinished(a.job.queue(), a.job.kind(), reported, ran);
    }

    private AttemptOutcome runHandler(RunningAttempt a) {
        Registration<?> reg = handlers.get(a.job.kind());
        if (reg == null) {
            // Retryable: in a mixed-version rollout another node may know this kind.
            return retryOrFail(
                    a,
                    error(
                            a,
                            "UnknownJobKind",
                            "no handler for job kind '" + a.job.kind() + "' on node '" + nodeId + "' (registered here: "
                                    + handlers.keySet() + ")",
                            null));
        }
        Object payload;
        try {
            payload = codec.decode(a.job.payloadJson(), reg.type());
        } catch (Exception e) {
            return AttemptOutcome.fail(
                    a.job,
                    error(
                            a,
                            "UndecodablePayload",
                            "payload of job " + a.job.id() + " cannot be decoded " + "as "
                                    + reg.type().getName() + ": " + e.getMessage(),
                            e));
        }
        try {
            hooks.reach(Hooks.Points.JOB_BEFORE_HANDLER);
            reg.invoke(payload, a);
            // Returned normally. If a stop arrived meanwhile, did the handler see it? Not if it never found
            // isCancelled() true nor awaitCancellation() returning early, and the interrupt is still pending.
            a.finishedUnaware = !a.observedStop && Thread.currentThread().isInterrupted();
            return a.completedInTransaction ? null : AttemptOutcome.success(a.job);
        } catch (JobHandler.PermanentFailure e) {
            return a.completedInTransaction ? null : AttemptOutcome.fail(a.job, error(a, e));
        } catch (UnknownOutcomeException | AttemptLostException e) {
            // The completion may or may not have committed, or the attempt is stale: write nothing;
            // if it did not commit, the lease expires and the job is rescued and run again.
            log.warn("job {} attempt {}: {}", a.job.id(), a.job.attempt(), e.getMessage());
            return null;
        } catch (Throwable e) {
            if (a.completedInTransaction) {
                return null;
            }
            return retryOrFail(a, error(a, e));
        }
    }

    private AttemptOutcome retryOrFail(RunningAttempt a, String error) {
        Registration<?> reg = handlers.get(a.job.kind());
        RetryPolicy policy = reg == null ? RetryPolicy.DEFAULT : reg.retry();
        return AttemptOutcome.retry(
                a.job, error, policy.delayAfter(a.job.attempt()).toMillis());
    }

    private String error(RunningAttempt a, Throwable e) {
        String message;
        try {
            message = String.valueOf(e.getMessage());
        } catch (RuntimeException broken) {
            message = "(getMessage() threw " + broken + ")";
        }
        return error(a, e.getClass().getName(), message, e);
    }

    private String error(RunningAttempt a, String errorClass, String message, Throwable e) {
        return JobErrors.json(a.job.attempt(), nodeId, errorClass, message, e);
    }

    // ---------------------------------------------------------------- helpers

    private static Thread daemon(String name, Runnable r) {
        Thread t = new Thread(
                () -> {
                    try {
                        r.run();
                    } catch (RuntimeException | Error e) {
                        log.error("{} died", name, e);
                    }
                },
                name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    private static void join(Thread t) {
        if (t != null) {
            try {
                t.join(30_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
