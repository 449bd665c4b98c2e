package dev.baton;

import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Works jobs on this node: per queue, a claimer that claims only as many jobs as there are free
 * slots and hands them to that queue's handler threads; a heartbeater that extends the leases of
 * running attempts in one bounded statement and cancels handlers whose lease it cannot confirm; a
 * completer that records outcomes in batches, each fenced by id, attempt token and state.
 *
 * <p>Self-stop: an attempt's local deadline is half the job lease after the send time of its last
 * answered heartbeat (or of its claim). Past it the handler is cancelled and the attempt writes
 * nothing; the rescuer returns the job to the queue once its lease expires on the database clock.
 */
final class Worker {
    private static final Logger log = LoggerFactory.getLogger(Worker.class);
    private static final int MAX_COMPLETION_BATCH = 1000;
    /** SQLSTATE class 22, data exception: a value the database cannot store (not a connection problem). */
    private static final String DATA_EXCEPTION_CLASS = "22";
    /**
     * After the drain timeout, how long handlers told to stop get to return before the worker stops: one
     * that returns in time has its attempt released (or recorded); one that ignores the interrupt keeps
     * its attempt until its lease runs out on the database clock.
     */
    static final long STOP_GRACE_NANOS = 500_000_000L;

    /** A registered handler with its payload type and retry policy. */
    record Registration<T>(String kind, Class<T> type, JobHandler<T> handler, RetryPolicy retry) {
        void invoke(Object payload, JobContext ctx) throws Exception {
            handler.handle(type.cast(payload), ctx);
        }
    }

    /** Why a running attempt was told to stop. */
    enum StopReason {
        CANCEL_REQUESTED,
        TIMEOUT,
        LOST,
        DEADLINE,
        DRAIN
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
    private final BlockingQueue<Outcome> outcomes = new LinkedBlockingQueue<>();
    private final Object beatSignal = new Object();
    /** How long a claimer waits for more free slots after a full claim (see claimLoop). */
    static final long CLAIM_COALESCE_NANOS = 2_000_000L;

    private volatile boolean claiming;
    private volatile boolean stopped = true;
    private Thread heartbeater;
    private Thread completer;

    Worker(
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
    }

    synchronized void start() {
        if (!stopped) {
            return;
        }
        stopped = false;
        claiming = true;
        completer = daemon("baton-job-completer", this::completeLoop);
        heartbeater = daemon("baton-job-heartbeat", this::heartbeatLoop);
        config.queues().forEach((queue, concurrency) -> queues.add(new QueueRunner(queue, concurrency)));
        queues.forEach(QueueRunner::start);
    }

    /**
     * Stops claiming new jobs (running ones go on). Returns once no claim statement is in flight, so
     * a job enqueued after this returns is never claimed by this node.
     */
    void stopClaiming() {
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
    synchronized void stop() {
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
        synchronized (beatSignal) {
            beatSignal.notifyAll();
        }
        join(heartbeater);
        outcomes.add(Outcome.POISON);
        join(completer);
        queues.clear();
    }

    int runningCount() {
        return running.size();
    }

    /** Outcomes queued for the completer and not yet taken (tests). */
    int pendingOutcomes() {
        return outcomes.size();
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
                    wake.await(Leases.jitter(poll)); // every slot busy: wait for one, then coalesce again
                    continue;
                }
                more = claimed > 0 && claimed == free;
                if (more) {
                    continue; // maybe more are ready
                }
                wake.await(Leases.jitter(poll));
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
                RunningAttempt a = new RunningAttempt(job, send);
                running.put(job.id(), a);
                watchTimeout |= a.hasTimeout;
                ready.add(a);
            }
            if (watchTimeout) {
                synchronized (beatSignal) {
                    beatSignal.notifyAll(); // the heartbeater must watch these timeouts
                }
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
        Outcome outcome;
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
                        && outcome.kind == Outcome.Kind.SUCCESS
                        && stop != StopReason.LOST
                        && stop != StopReason.DEADLINE)) {
            // A handler that returned without having seen the stop finished its work before noticing: its
            // success stands (above). One that saw it, or threw, ends as the stop says.
            outcome = switch (stop) {
                case CANCEL_REQUESTED -> Outcome.cancel(a, error(a, "Cancelled", "cancellation requested", null));
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
                case DRAIN -> Outcome.release(a);
                // The attempt could not prove it still owned the job: write nothing.
                case LOST, DEADLINE -> null;
            };
        }
        report(a, outcome, ran);
        if (outcome == null) {
            return false;
        }
        outcome.owner = owner;
        outcome.attempt = a;
        outcomes.add(outcome);
        return true;
    }

    /** Reports how the attempt ended (as decided here; the recording follows in the completer). */
    private void report(RunningAttempt a, Outcome outcome, Duration ran) {
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

    private Outcome runHandler(RunningAttempt a) {
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
            return Outcome.fail(
                    a,
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
            return a.completedInTransaction ? null : Outcome.success(a);
        } catch (JobHandler.PermanentFailure e) {
            return a.completedInTransaction ? null : Outcome.fail(a, error(a, e));
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

    private Outcome retryOrFail(RunningAttempt a, String error) {
        Registration<?> reg = handlers.get(a.job.kind());
        RetryPolicy policy = reg == null ? RetryPolicy.DEFAULT : reg.retry();
        return Outcome.retry(a, error, policy.delayAfter(a.job.attempt()).toMillis());
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

    // ---------------------------------------------------------------- heartbeats and self-stop

    private void heartbeatLoop() {
        long interval = config.heartbeatInterval().toNanos();
        long nextBeat = ticker.getAsLong() + interval;
        try (BoundedCalls calls = new BoundedCalls(coordination, "baton-job-heartbeat-calls")) {
            while (!stopped) {
                long now = ticker.getAsLong();
                long wakeAt = nextBeat;
                for (RunningAttempt a : running.values()) {
                    if (a.stopReason != null || a.finished) {
                        continue; // a finished attempt only waits for its outcome to be recorded
                    }
                    if (now - a.deadline() >= 0) {
                        if (a.stop(StopReason.DEADLINE)) {
                            log.warn(
                                    "job {} attempt {} self-stopped: its lease could not be confirmed for half the "
                                            + "job lease ({}); it writes nothing and will be rescued",
                                    a.job.id(),
                                    a.job.attempt(),
                                    config.jobLease().dividedBy(2));
                        }
                    } else if (a.hasTimeout && now - a.timeoutAt >= 0) {
                        a.stop(StopReason.TIMEOUT);
                    } else {
                        wakeAt = earliest(wakeAt, a.deadline());
                        if (a.hasTimeout) {
                            wakeAt = earliest(wakeAt, a.timeoutAt);
                        }
                    }
                }
                if (now - nextBeat >= 0) {
                    long send = ticker.getAsLong();
                    beat(calls, send, interval);
                    nextBeat = send + interval;
                    continue;
                }
                long wait = wakeAt - now;
                if (wait > 0) {
                    synchronized (beatSignal) {
                        if (!stopped) {
                            try {
                                TimeUnit.NANOSECONDS.timedWait(beatSignal, wait);
                            } catch (InterruptedException e) {
                                return;
                            }
                        }
                    }
                }
            }
        }
    }

    private static long earliest(long a, long b) {
        return a - b <= 0 ? a : b;
    }

    private void beat(BoundedCalls calls, long send, long interval) {
        List<RunningAttempt> live = new ArrayList<>();
        for (RunningAttempt a : running.values()) {
            if (a.stopReason == null) {
                live.add(a);
            }
        }
        if (live.isEmpty()) {
            return;
        }
        long[] ids = new long[live.size()];
        long[] tokens = new long[live.size()];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = live.get(i).job.id();
            tokens[i] = live.get(i).job.token();
        }
        hooks.reach(Hooks.Points.JOB_HEARTBEAT_BEFORE_SEND);
        Map<Long, JobStore.Beat> current;
        try {
            current = calls.call(
                    c -> store.heartbeat(
                            c, config.jobLease().toMillis(), ids, tokens, BoundedCalls.serverMillis(interval)),
                    interval);
        } catch (TimeoutException | SQLException | RuntimeException e) {
            log.warn(
                    "heartbeat of {} running jobs not confirmed ({}); handlers self-stop at half the job lease "
                            + "after their last confirmed beat",
                    ids.length,
                    e instanceof TimeoutException ? "no answer" : e.getMessage());
            return;
        }
        for (RunningAttempt a : live) {
            JobStore.Beat beat = current.get(a.job.id());
            if (beat == JobStore.Beat.LOCKED) {
                continue; // in its own completion transaction: still current, lease not extended
            }
            if (beat == null) {
                if (running.get(a.job.id()) == a && a.stop(StopReason.LOST)) {
                    log.warn(
                            "job {} attempt {} is no longer current (rescued or finished elsewhere); its handler is "
                                    + "cancelled and its outcome will not be recorded",
                            a.job.id(),
                            a.job.attempt());
                }
            } else {
                a.confirmedSendNanos = send; // the database extended the lease no earlier than this
                if (beat == JobStore.Beat.EXTENDED_CANCEL) {
                    a.stop(StopReason.CANCEL_REQUESTED);
                }
            }
        }
    }

    // ---------------------------------------------------------------- completion

    private void completeLoop() {
        List<Outcome> batch = new ArrayList<>();
        while (true) {
            try {
                Outcome first = outcomes.take();
                batch.add(first);
                outcomes.drainTo(batch, MAX_COMPLETION_BATCH - 1);
            } catch (InterruptedException e) {
                return;
            }
            boolean poisoned = batch.remove(Outcome.POISON);
            if (!batch.isEmpty()) {
                flush(batch);
            }
            batch.clear();
            if (poisoned) {
                List<Outcome> rest = new ArrayList<>();
                outcomes.drainTo(rest);
                rest.remove(Outcome.POISON);
                if (!rest.isEmpty()) {
                    flush(rest);
                }
                return;
            }
        }
    }

    /** Records a batch of outcomes; retried on connection failures (every statement is idempotent). */
    private void flush(List<Outcome> batch) {
        try {
            hooks.reach(Hooks.Points.JOB_OUTCOMES_BEFORE_RECORD);
            recordWithRetries(batch);
        } finally {
            // Free the slots, then wake each claimer once per batch, not once per job.
            QueueRunner last = null;
            List<QueueRunner> owners = new ArrayList<>(1);
            for (Outcome o : batch) {
                if (o.owner != null) {
                    o.owner.free(o.attempt, false);
                    if (o.owner != last && !owners.contains(o.owner)) {
                        owners.add(o.owner);
                    }
                    last = o.owner;
                }
            }
            for (QueueRunner q : owners) {
                q.wake.signal();
            }
        }
    }

    private void recordWithRetries(List<Outcome> batch) {
        for (int attempt = 1; ; attempt++) {
            try {
                record(batch);
                hooks.reach(Hooks.Points.JOB_OUTCOMES_RECORDED);
                return;
            } catch (SQLException | RuntimeException e) {
                if (attempt >= 5) {
                    log.error(
                            "recording {} job outcomes failed {} times; giving up: their leases will expire and the "
                                    + "jobs will run again (at least once)",
                            batch.size(),
                            attempt,
                            e);
                    return;
                }
                log.warn(
                        "recording {} job outcomes failed (attempt {}), retrying: {}",
                        batch.size(),
                        attempt,
                        e.getMessage());
                try {
                    Thread.sleep(100L * attempt); // backoff of a background retry, not test synchronisation
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    /**
     * Records a batch: successes, releases and failures each in one statement (each its own transaction,
     * so one kind's trouble never takes the others down with it). Outcomes already recorded are taken
     * out of the batch, so a retry after a failure repeats only what is left.
     */
    private void record(List<Outcome> batch) throws SQLException {
        batch.sort(java.util.Comparator.comparingLong(o -> o.id)); // one lock order for every batch
        List<Outcome> ok = new ArrayList<>();
        List<Outcome> failed = new ArrayList<>();
        List<Outcome> released = new ArrayList<>();
        for (Outcome o : batch) {
            if (o.recorded) {
                continue;
            }
            switch (o.kind) {
                case SUCCESS -> ok.add(o);
                case RELEASE -> released.add(o);
                default -> failed.add(o);
            }
        }
        if (!ok.isEmpty()) {
            db.call("recording " + ok.size() + " completions", c -> store.complete(c, ids(ok), tokens(ok)));
            ok.forEach(o -> o.recorded = true);
        }
        if (!released.isEmpty()) {
            db.call(
                    "recording " + released.size() + " releases",
                    c -> store.release(c, ids(released), tokens(released)));
            released.forEach(o -> o.recorded = true);
        }
        if (!failed.isEmpty()) {
            try {
                fail(failed);
            } catch (SQLException e) {
                if (e.getSQLState() == null || !e.getSQLState().startsWith(DATA_EXCEPTION_CLASS)) {
                    throw e;
                }
                // One error the database cannot store must not sink the others: record them one by one,
                // and the unstorable one with a record that says so.
                log.warn(
                        "recording {} failed attempts together was refused ({}); recording them one by one",
                        failed.size(),
                        e.getMessage());
                for (Outcome o : failed) {
                    try {
                        fail(List.of(o));
                    } catch (SQLException single) {
                        if (single.getSQLState() == null
                                || !single.getSQLState().startsWith(DATA_EXCEPTION_CLASS)) {
                            throw single;
                        }
                        log.error(
                                "the error of job {} attempt token {} cannot be stored ({}); recording the attempt's "
                                        + "outcome without it",
                                o.id,
                                o.token,
                                single.getMessage());
                        o.error = JobErrors.unrecordable(single.getMessage());
                        fail(List.of(o));
                    }
                }
            }
        }
    }

    private void fail(List<Outcome> failed) throws SQLException {
        String[] errors = new String[failed.size()];
        Long[] delays = new Long[failed.size()];
        String[] outcomeKinds = new String[failed.size()];
        for (int i = 0; i < errors.length; i++) {
            Outcome o = failed.get(i);
            errors[i] = o.error;
            delays[i] = o.delayMs;
            outcomeKinds[i] = o.kind.sql;
        }
        db.call(
                "recording " + failed.size() + " failed attempts",
                c -> store.fail(c, ids(failed), tokens(failed), errors, delays, outcomeKinds));
        failed.forEach(o -> o.recorded = true);
    }

    private static long[] ids(List<Outcome> os) {
        long[] out = new long[os.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = os.get(i).id;
        }
        return out;
    }

    private static long[] tokens(List<Outcome> os) {
        long[] out = new long[os.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = os.get(i).token;
        }
        return out;
    }

    /** The outcome of one attempt, to be recorded fenced by id and token. */
    private static final class Outcome {
        enum Kind {
            SUCCESS("success"),
            RETRY("retry"),
            FAIL("fail"),
            CANCEL("cancel"),
            RELEASE("release");

            final String sql;

            Kind(String sql) {
                this.sql = sql;
            }
        }

        static final Outcome POISON = new Outcome(Kind.SUCCESS, -1, -1, null, null);

        final Kind kind;
        final long id;
        final long token;
        String error;
        final Long delayMs;
        /** Recorded in the database; a retried flush skips it. */
        boolean recorded;
        /** Whose slot the attempt frees once the outcome is recorded (or given up on); null: none. */
        QueueRunner owner;

        RunningAttempt attempt;

        private Outcome(Kind kind, long id, long token, String error, Long delayMs) {
            this.kind = kind;
            this.id = id;
            this.token = token;
            this.error = error;
            this.delayMs = delayMs;
        }

        static Outcome success(RunningAttempt a) {
            return new Outcome(Kind.SUCCESS, a.job.id(), a.job.token(), null, null);
        }

        static Outcome retry(RunningAttempt a, String error, long delayMs) {
            return new Outcome(Kind.RETRY, a.job.id(), a.job.token(), error, delayMs);
        }

        static Outcome fail(RunningAttempt a, String error) {
            return new Outcome(Kind.FAIL, a.job.id(), a.job.token(), error, null);
        }

        static Outcome cancel(RunningAttempt a, String error) {
            return new Outcome(Kind.CANCEL, a.job.id(), a.job.token(), error, null);
        }

        static Outcome release(RunningAttempt a) {
            return new Outcome(Kind.RELEASE, a.job.id(), a.job.token(), null, null);
        }
    }

    // ---------------------------------------------------------------- one attempt

    /** A claimed attempt running on this node; the handler's {@link JobContext}. */
    private final class RunningAttempt implements JobContext {
        final JobStore.Claimed job;
        final boolean hasTimeout;
        final long timeoutAt;
        final CountDownLatch stopped = new CountDownLatch(1);
        volatile long confirmedSendNanos;
        volatile StopReason stopReason;
        volatile Thread thread;
        volatile boolean completedInTransaction;
        /** The handler returned; only the outcome's recording is pending. */
        volatile boolean finished;
        /** The handler's own thread found the stop (isCancelled() true, awaitCancellation() woken by it). */
        volatile boolean observedStop;
        /** The handler returned normally without having seen a stop that had arrived. */
        volatile boolean finishedUnaware;

        RunningAttempt(JobStore.Claimed job, long claimSendNanos) {
            this.job = job;
            this.confirmedSendNanos = claimSendNanos;
            this.hasTimeout = job.timeoutMs() != null;
            this.timeoutAt = hasTimeout ? claimSendNanos + job.timeoutMs() * 1_000_000L : 0;
        }

        /** Half the job lease after the send time of the last confirmed claim or heartbeat. */
        long deadline() {
            return confirmedSendNanos + config.jobLease().toNanos() / 2;
        }

        /** The handler has returned: later stops must not interrupt the pool thread (it runs other jobs). */
        synchronized void finish() {
            finished = true;
            thread = null;
        }

        /** Tells the handler to stop; true if this call did it (first reason wins). */
        synchronized boolean stop(StopReason reason) {
            if (stopReason != null) {
                return false;
            }
            stopReason = reason;
            stopped.countDown();
            Thread t = thread;
            if (t != null) {
                t.interrupt();
            }
            return true;
        }

        @Override
        public long jobId() {
            return job.id();
        }

        @Override
        public String kind() {
            return job.kind();
        }

        @Override
        public String queue() {
            return job.queue();
        }

        @Override
        public int attempt() {
            return job.attempt();
        }

        @Override
        public int maxAttempts() {
            return job.maxAttempts();
        }

        @Override
        public long attemptToken() {
            return job.token();
        }

        @Override
        public String idempotencyKey() {
            return "baton-job-" + job.id();
        }

        @Override
        public boolean isCancelled() {
            boolean cancelled = stopReason != null;
            if (cancelled && Thread.currentThread() == thread) {
                observedStop = true;
            }
            return cancelled;
        }

        @Override
        public boolean awaitCancellation(Duration timeout) {
            boolean cancelled;
            try {
                cancelled = stopped.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                cancelled = true;
            }
            if (cancelled && Thread.currentThread() == thread) {
                observedStop = true;
            }
            return cancelled;
        }

        @Override
        public <T> T transaction(FencedWork<T> work) {
            if (stopReason != null) {
                throw new AttemptLostException("attempt " + job.attempt() + " of job " + job.id() + " was stopped ("
                        + stopReason + "); its transaction is refused");
            }
            try {
                T result = db.transaction("job " + job.id() + " attempt " + job.attempt(), c -> {
                    if (!store.fenceAttempt(c, job.id(), job.token())) {
                        throw new AttemptLostException("attempt " + job.attempt() + " of job " + job.id()
                                + " is no longer current (rescued, cancelled or finished); nothing was written");
                    }
                    T r = Db.runApplicationWork("the transaction of job " + job.id(), () -> work.apply(c));
                    store.complete(c, new long[] {job.id()}, new long[] {job.token()});
                    hooks.reach(Hooks.Points.JOB_TX_BEFORE_COMMIT);
                    return r;
                });
                completedInTransaction = true;
                return result;
            } catch (RuntimeException e) {
                throw e;
            } catch (Exception e) {
                throw new BatonException("transaction of job " + job.id() + " failed: " + e.getMessage(), e);
            }
        }
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
