package dev.baton.internal.job;

import dev.baton.TransactionBinding;
import dev.baton.WorkerConfig;
import dev.baton.internal.db.Db;
import dev.baton.internal.notify.NotifiedService;
import dev.baton.internal.notify.Notifier;
import dev.baton.internal.service.Hooks;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One queue's producer: claims jobs into the queue's free slots (at most its concurrency) and hands them
 * to the queue's handler threads, which run them through the {@link JobExecutor}. Its pass claims once
 * and says when to claim again: at once after a full claim (more are likely ready, so it first waits a
 * moment for every slot to free up, as a claim takes only what is free when it starts: decision 0036), else
 * after the poll interval (five times longer while LISTEN wakes it for every enqueue). Enqueue notifications
 * and freed slots end its wait early, but a claim that found fewer jobs than free slots is followed by the
 * next no sooner than {@link #CLAIM_SPACING_NANOS} after its start, so a stream of small enqueues is claimed
 * several at a time, not by one statement per enqueue (decision 0031). A slot is free when its handler
 * returns, while the outcome may still wait for the completer; at most as many attempts as there are slots
 * wait so (decision 0027), so one batch's outcomes are written while the next batch is claimed. After a full claim
 * the next resumes after the last job it took rather than step over every entry the claims since the last vacuum
 * left dead at the head of the ready index; one starts from the head at least every {@link #HEAD_SCAN_NANOS}, and a
 * resumed claim that comes back short is followed by one from the head (decision 0037).
 */
public final class JobProducer extends NotifiedService {
    private static final Logger log = LoggerFactory.getLogger(JobProducer.class);
    /** How long a producer waits for every slot to free up after a full claim (decision 0036). */
    public static final long CLAIM_COALESCE_NANOS = 2_000_000L;
    /**
     * At least this long from the start of a claim that found some jobs but fewer than its free slots to the
     * start of the next: under a stream of small enqueues each wakes the producer, and without a pause every
     * few jobs were claimed by a statement of their own. Idle, the next enqueue comes later than this anyway
     * (decision 0031).
     */
    public static final long CLAIM_SPACING_NANOS = 2_000_000L;
    /**
     * While a producer works through a backlog, each claim resumes after the last job the one before took, but at
     * least this often one starts from the head of the claim order, for the jobs that became ready before that key
     * (a higher priority, a delay that ran out, an enqueue that committed after a later one, a row a racing claim
     * skipped): they wait at most this long (decision 0037). 100 ms, not 10: a claim from the head steps over every
     * entry the claims since the last vacuum left dead; at 10 ms a node that a burst had put behind a stream ran
     * away in two runs of four, at 100 ms in none (decision 0040).
     */
    public static final long HEAD_SCAN_NANOS = 100_000_000L;
    /** How long a producer that no longer claims waits between passes (until it is stopped). */
    private static final long IDLE_NANOS = TimeUnit.SECONDS.toNanos(1);

    private final String queue;
    private final int concurrency;
    private final Db db;
    private final JobStore store;
    /** Held by an operator's drain, or narrowed to the kinds not disabled: read before every claim. */
    private final ClaimGate gate;

    private final WorkerConfig config;
    private final String nodeId;
    private final Notifier notifier;
    private final Hooks hooks;
    private final Map<Long, RunningAttempt> running;
    private final JobExecutor executor;
    private final JobHeartbeater heartbeater;
    private final TransactionBinding binding;
    /** Which limits apply to this queue's claims (decision 0019); null: none are looked for. */
    private final JobLimits limits;

    /** Handler slots: taken at claim, given back when the handler returns. */
    private final Semaphore slots;
    /**
     * At most this many attempts claimed and not yet recorded: every slot busy, and as many outcomes waiting for
     * the completer. So the next claim need not wait for the last batch's outcomes to be written.
     */
    private final int maxInFlight;

    private final ExecutorService handlersPool;
    private final AtomicInteger inFlight = new AtomicInteger();
    /** Claimed attempts waiting for a handler thread. */
    private final ConcurrentLinkedQueue<RunningAttempt> ready = new ConcurrentLinkedQueue<>();
    /** Handler threads taking ready attempts (or about to). */
    private final AtomicInteger drainers = new AtomicInteger();
    /** 1 while a started handler thread has not yet taken its first ready attempt. */
    private final AtomicInteger starting = new AtomicInteger();
    /** Held while a claim statement runs; stopClaiming takes it to wait out a claim in flight. */
    private final ReentrantLock claimLock = new ReentrantLock();
    /** Names the claim in an unknown-outcome message (built once, not per claim). */
    private final String claimWhat;

    /** How long a claim after a full one waits for every slot to be free: {@link #CLAIM_COALESCE_NANOS} (tests). */
    long coalesceNanos = CLAIM_COALESCE_NANOS;
    /** At least how often a claim starts from the head of the claim order: {@link #HEAD_SCAN_NANOS} (tests). */
    long headScanNanos = HEAD_SCAN_NANOS;

    private volatile boolean claiming = true;
    /** The last claim filled every free slot. Written by the service thread only. */
    private volatile boolean more;
    /** When the next claim may start after a partial one (System.nanoTime()); 0: at once. Service thread only. */
    private long spacedUntil;
    /**
     * Claims lock twice their limit of candidates, for one job per concurrency key: until a claim comes back
     * full and without a keyed job, and again as soon as one does not. Service thread only.
     */
    private boolean keyed = true;
    /**
     * Where the next claim starts in the claim order: after the last job of a claim that filled every free slot, so
     * that it steps over none of the entries that the claims since the last vacuum left dead at the head of the ready
     * index (decision 0037); {@link JobStore.ClaimKey#HEAD} after any other claim. Service thread only.
     */
    private JobStore.ClaimKey resumeAfter = JobStore.ClaimKey.HEAD;
    /** When the last claim from the head started (System.nanoTime()). Service thread only. */
    private long headScanAt;

    public JobProducer(
            String queue,
            int concurrency,
            Db db,
            JobStore store,
            ClaimGate gate,
            WorkerConfig config,
            String nodeId,
            Notifier notifier,
            Hooks hooks,
            LongSupplier ticker,
            Map<Long, RunningAttempt> running,
            JobExecutor executor,
            JobHeartbeater heartbeater,
            TransactionBinding binding,
            JobLimits limits) {
        super("baton-claim-" + queue, ticker, notifier.subscribe(store.channel(), queue));
        this.queue = queue;
        this.concurrency = concurrency;
        this.db = db;
        this.store = store;
        this.gate = gate;
        this.config = config;
        this.nodeId = nodeId;
        this.notifier = notifier;
        this.hooks = hooks;
        this.running = running;
        this.executor = executor;
        this.heartbeater = heartbeater;
        this.binding = binding;
        this.limits = limits;
        this.slots = new Semaphore(concurrency);
        this.maxInFlight = 2 * concurrency;
        this.claimWhat = "a claim from queue '" + queue + "'";
        AtomicInteger n = new AtomicInteger();
        this.handlersPool = Executors.newFixedThreadPool(concurrency, r -> {
            Thread t = new Thread(r, "baton-job-" + queue + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
    }

    /** One claim into the free slots; returns how long to wait before the next. */
    @Override
    protected long runOnce() {
        if (!claiming || !gate.open()) {
            return IDLE_NANOS;
        }
        if (spacedUntil != 0) {
            // Real time, like the coalescing below: a throughput heuristic, not a lease bound.
            long left = spacedUntil - System.nanoTime();
            spacedUntil = 0;
            if (left > 0) {
                LockSupport.parkNanos(left);
            }
        }
        // With LISTEN active, enqueues wake us at once; polling is only the safety net.
        long poll = config.pollInterval().toNanos() * (notifier.listening() ? 5 : 1);
        int free = free();
        if (more && free < concurrency) {
            // Real time, not the (test-controllable) ticker: a throughput heuristic, not a lease bound.
            long until = System.nanoTime() + coalesceNanos;
            long left;
            while (claiming
                    && !stopRequested()
                    && (free = free()) < concurrency
                    && (left = until - System.nanoTime()) > 0) {
                wake.await(left);
            }
            free = free();
            if (free == 0 || maxInFlight - inFlight.get() < slots.availablePermits()) {
                // Every slot busy, or slots free but their outcomes not yet recorded: a claim now would take
                // what the completer has just freed, a few jobs. Wait for a slot or for its next batch.
                return jitter(poll);
            }
        }
        int claimed = 0;
        long claimStart = System.nanoTime();
        if (free > 0) {
            claimLock.lock();
            try {
                if (!claiming || !gate.open()) {
                    return IDLE_NANOS;
                }
                claimed = claimOnce(free);
            } catch (SQLException | RuntimeException e) {
                claimFailed(e);
            } finally {
                claimLock.unlock();
            }
        }
        more = claimed > 0 && claimed == free;
        if (claimed > 0 && !more) {
            spacedUntil = claimStart + CLAIM_SPACING_NANOS;
        }
        return more ? 0 : jitter(poll);
    }

    @Override
    protected void afterLastPass() {
        handlersPool.shutdownNow();
        super.afterLastPass();
    }

    /** Claims up to {@code free} jobs and starts them; returns how many. */
    int claimOnce(int free) throws SQLException {
        hooks.reach(Hooks.Points.JOB_BEFORE_CLAIM);
        long send = ticker.getAsLong();
        String[] limitIds = limits == null ? null : limits.forQueue(queue);
        boolean limited = limitIds != null && limitIds.length > 0;
        // Real time, like the coalescing: which rows a claim reads first, not a lease bound.
        long now = System.nanoTime();
        JobStore.ClaimKey after = limited || now - headScanAt >= headScanNanos ? JobStore.ClaimKey.HEAD : resumeAfter;
        if (after == JobStore.ClaimKey.HEAD) {
            headScanAt = now;
        }
        List<JobStore.Claimed> jobs = claim(free, after, limited ? limitIds : null);
        if (after != JobStore.ClaimKey.HEAD && jobs.size() < free) {
            // Nothing more after the key: what is left may lie before it. From the head at once, so that a claim that
            // comes back short has always looked at the whole queue, as a claim without a key does.
            headScanAt = System.nanoTime();
            List<JobStore.Claimed> rest;
            try {
                rest = claim(free - jobs.size(), JobStore.ClaimKey.HEAD, null);
            } catch (SQLException | RuntimeException e) {
                claimFailed(e); // the first claim's jobs are kept: they are this node's attempts now
                rest = List.of();
            }
            if (!rest.isEmpty()) {
                jobs = new ArrayList<>(jobs);
                jobs.addAll(rest);
            }
        }
        resumeAfter = limited || jobs.size() < free ? JobStore.ClaimKey.HEAD : lastKey(jobs);
        boolean watchTimeout = false;
        boolean anyKey = false;
        for (JobStore.Claimed job : jobs) {
            anyKey |= job.concurrencyKey() != null;
            slots.acquireUninterruptibly();
            inFlight.incrementAndGet();
            RunningAttempt a = new RunningAttempt(job, send, config.jobLease(), db, store, hooks, binding);
            running.put(job.id(), a);
            watchTimeout |= a.hasTimeout;
            ready.add(a);
        }
        keyed = anyKey || jobs.size() < free;
        if (watchTimeout) {
            heartbeater.wake(); // the heartbeater must watch these timeouts
        }
        startDrainer();
        hooks.reach(Hooks.Points.JOB_CLAIMED);
        return jobs.size();
    }

    private void claimFailed(Exception e) {
        log.warn("claiming from queue '{}' failed, retrying: {}", queue, e.getMessage());
    }

    /**
     * One claim statement for up to {@code n} jobs after {@code after} in the claim order, or by the limited path
     * when {@code limitIds} is not null; a lost race for a concurrency key claims nothing.
     */
    private List<JobStore.Claimed> claim(int n, JobStore.ClaimKey after, String[] limitIds) throws SQLException {
        try {
            // Checked again once a connection is in hand: getting one can wait (a pool after a partition
            // waits up to its connection timeout), and a drain that began meanwhile must win over this claim.
            if (limitIds == null) {
                return db.call(
                        claimWhat,
                        c -> claiming && gate.open()
                                ? store.claim(
                                        c,
                                        queue,
                                        gate.kinds(),
                                        n,
                                        keyed,
                                        config.jobLease().toMillis(),
                                        nodeId,
                                        after)
                                : List.of());
            }
            // Limited path: its two statements must share one READ COMMITTED transaction (JobStore).
            return db.transaction(
                    claimWhat,
                    c -> claiming && gate.open()
                            ? store.claimLimited(
                                    c, queue, gate.kinds(), n, config.jobLease().toMillis(), nodeId, limitIds)
                            : List.of());
        } catch (JobStore.KeyRaceLost e) {
            return List.of();
        }
    }

    /** The last of {@code jobs} in the claim order (a claim's rows come back in no particular order). */
    private static JobStore.ClaimKey lastKey(List<JobStore.Claimed> jobs) {
        JobStore.ClaimKey last = JobStore.ClaimKey.HEAD;
        for (JobStore.Claimed job : jobs) {
            JobStore.ClaimKey k = job.key();
            if (k.compareTo(last) > 0) {
                last = k;
            }
        }
        return last;
    }

    /**
     * Starts one more handler thread on the ready attempts unless one is already on its way, so a claim
     * wakes one thread, not one per job: each thread that takes an attempt while more are ready starts the
     * next, and every thread takes ready attempts until none are left. Threads running long handlers thus
     * never hold up ready attempts while a pool thread is idle (each is at most one thread start behind),
     * and short handlers are run back to back by the threads already awake.
     */
    private void startDrainer() {
        if (ready.isEmpty() || starting.get() > 0 || drainers.get() >= concurrency || !starting.compareAndSet(0, 1)) {
            return;
        }
        drainers.incrementAndGet();
        try {
            handlersPool.execute(this::drain);
        } catch (RejectedExecutionException e) {
            // Shutting down: attempts not started were released by the worker's stop.
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
                handedOver = executor.execute(a, () -> recorded(a, false), wake);
            } catch (RuntimeException e) {
                log.error("job {} attempt {}: unexpected failure around its handler", a.job.id(), a.job.attempt(), e);
            } catch (Error e) {
                drainers.decrementAndGet();
                releaseSlot();
                recorded(a, true);
                startDrainer();
                throw e;
            }
            releaseSlot();
            if (!handedOver) {
                recorded(a, true);
            }
        }
    }

    /** Slots a claim may fill now: free handler slots, as far as the attempts not yet recorded allow. */
    private int free() {
        return Math.min(slots.availablePermits(), maxInFlight - inFlight.get());
    }

    /**
     * The handler has returned: its slot is free for the next claim while its outcome waits to be recorded. After a
     * full claim, wakes the producer once, when every slot is free (not once per job, and never for a trickle of
     * jobs, whose claimer the completer wakes).
     */
    private void releaseSlot() {
        slots.release();
        if (more && slots.availablePermits() == concurrency) {
            wake.signal();
        }
    }

    /**
     * The attempt's outcome is recorded (or will never be): it no longer counts against {@link #maxInFlight} and
     * is no longer heartbeated.
     */
    private void recorded(RunningAttempt a, boolean signal) {
        running.remove(a.job.id(), a);
        inFlight.decrementAndGet();
        if (signal) {
            wake.signal();
        }
    }

    /**
     * Stops claiming on every one of {@code producers} (running attempts go on). Returns once none has a
     * claim statement in flight, so a job enqueued after this returns is never claimed by them.
     */
    static void stopClaiming(Collection<JobProducer> producers) {
        producers.forEach(q -> q.claiming = false);
        awaitClaimsInFlight(producers);
    }

    /**
     * Returns once none of {@code producers} has a claim statement in flight (after the gate closed: the
     * next claim sees it), and wakes them so that they read the gate now. A claim still waiting for its
     * answer when the stop grace, shared by all of them, has passed waits on a connection that no longer
     * answers: its call is aborted, so neither a stop nor an operator's drain waits for a socket, and
     * several stuck queues cost one grace, not one each (a claim waiting for a pooled connection instead
     * re-checks the state once it has one).
     */
    static void awaitClaimsInFlight(Collection<JobProducer> producers) {
        producers.forEach(q -> q.wake.signal());
        long graceEnds = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(STOP_GRACE_MILLIS);
        for (JobProducer q : producers) {
            q.awaitClaimInFlight(graceEnds);
        }
    }

    private void awaitClaimInFlight(long graceEnds) {
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    if (claimLock.tryLock(Math.max(0, graceEnds - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                        claimLock.unlock();
                        return;
                    }
                } catch (InterruptedException e) {
                    interrupted = true;
                    continue;
                }
                String call = calls().abortCurrent();
                if (call != null) {
                    log.warn(
                            "a claim from queue '{}' still waited for the database {} ms after claiming stopped; "
                                    + "aborted its call ({})",
                            queue,
                            STOP_GRACE_MILLIS,
                            call);
                }
                graceEnds = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(STOP_GRACE_MILLIS);
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Handler slots not taken (tests). */
    int freeSlots() {
        return slots.availablePermits();
    }

    /** The number of attempts of this queue claimed and not yet recorded. */
    int inFlight() {
        return inFlight.get();
    }

    /** Waits until every attempt of this queue is recorded, or until {@code deadlineNanos} on the ticker. */
    public void awaitIdle(long deadlineNanos) {
        wake.signal();
        while (inFlight.get() > 0 && ticker.getAsLong() - deadlineNanos < 0) {
            wake.await(Math.min(10_000_000L, Math.max(1, deadlineNanos - ticker.getAsLong())));
        }
    }
}
