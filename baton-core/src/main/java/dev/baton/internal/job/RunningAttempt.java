package dev.baton.internal.job;

import dev.baton.AttemptLostException;
import dev.baton.BatonException;
import dev.baton.FencedWork;
import dev.baton.JobContext;
import dev.baton.TransactionBinding;
import dev.baton.UnknownOutcomeException;
import dev.baton.internal.db.Db;
import dev.baton.internal.service.Hooks;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A claimed attempt running on this node, and its handler's {@link JobContext}. The heartbeater extends
 * its lease and stops it when the lease cannot be confirmed in time; the handler sees the stop through
 * {@link #isCancelled()}, {@link #awaitCancellation} and an interrupt.
 */
public final class RunningAttempt implements JobContext {
    private static final Logger log = LoggerFactory.getLogger(RunningAttempt.class);

    /** Why a running attempt was told to stop. */
    public enum StopReason {
        CANCEL_REQUESTED,
        TIMEOUT,
        LOST,
        DEADLINE,
        DRAIN
    }

    public final JobStore.Claimed job;
    public final boolean hasTimeout;
    public final long timeoutAt;
    public final CountDownLatch stopped = new CountDownLatch(1);
    public volatile long confirmedSendNanos;
    public volatile StopReason stopReason;
    public volatile Thread thread;
    public volatile boolean completedInTransaction;
    /** The handler returned; only the outcome's recording is pending. */
    public volatile boolean finished;
    /** The handler's own thread found the stop (isCancelled() true, awaitCancellation() woken by it). */
    public volatile boolean observedStop;
    /** The handler returned normally without having seen a stop that had arrived. */
    public volatile boolean finishedUnaware;
    /** What the handler threw, if it threw (for interceptors). */
    public volatile Throwable failure;

    private Map<String, String> metadata;

    private final long halfLeaseNanos;
    private final Db db;
    private final JobStore store;
    private final Hooks hooks;
    private final TransactionBinding binding;

    public RunningAttempt(
            JobStore.Claimed job, long claimSendNanos, Duration jobLease, Db db, JobStore store, Hooks hooks) {
        this(job, claimSendNanos, jobLease, db, store, hooks, TransactionBinding.NONE);
    }

    public RunningAttempt(
            JobStore.Claimed job,
            long claimSendNanos,
            Duration jobLease,
            Db db,
            JobStore store,
            Hooks hooks,
            TransactionBinding binding) {
        this.job = job;
        this.binding = binding;
        this.halfLeaseNanos = jobLease.toNanos() / 2;
        this.db = db;
        this.store = store;
        this.hooks = hooks;
        this.confirmedSendNanos = claimSendNanos;
        this.hasTimeout = job.timeoutMs() != null;
        this.timeoutAt = hasTimeout ? claimSendNanos + job.timeoutMs() * 1_000_000L : 0;
    }

    /** Half the job lease after the send time of the last confirmed claim or heartbeat. */
    public long deadline() {
        return confirmedSendNanos + halfLeaseNanos;
    }

    /** The handler has returned: later stops must not interrupt the pool thread (it runs other jobs). */
    public synchronized void finish() {
        finished = true;
        thread = null;
    }

    /** Tells the handler to stop; true if this call did it (first reason wins). */
    public synchronized boolean stop(StopReason reason) {
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
    public Duration waited() {
        return Duration.ofMillis(Math.max(0, job.waitedMs()));
    }

    @Override
    public Map<String, String> metadata() {
        Map<String, String> m = metadata;
        if (m == null) {
            m = JobMetadata.parse(job.metadataJson()); // read on first use: most handlers never ask
            metadata = m;
        }
        return m;
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
        TransactionBinding.Outcome outcome = TransactionBinding.Outcome.ROLLED_BACK;
        try {
            T result = db.transaction("job " + job.id() + " attempt " + job.attempt(), c -> {
                if (!store.fenceAttempt(c, job.id(), job.token())) {
                    throw new AttemptLostException("attempt " + job.attempt() + " of job " + job.id()
                            + " is no longer current (rescued, cancelled or finished); nothing was written");
                }
                // The completion transaction is the thread's current one while the work runs, so code the
                // handler calls joins it (Spring: JdbcTemplate, @Transactional); a binding that finds it
                // marked rollback-only throws here, and the completion rolls back instead of committing.
                T r = Db.runApplicationWork(
                        "the transaction of job " + job.id(),
                        () -> binding.bind(db.dataSource(), c, () -> work.apply(c)));
                store.complete(c, new long[] {job.id()}, new long[] {job.token()});
                hooks.reach(Hooks.Points.JOB_TX_BEFORE_COMMIT);
                return r;
            });
            outcome = TransactionBinding.Outcome.COMMITTED;
            completedInTransaction = true;
            return result;
        } catch (UnknownOutcomeException e) {
            outcome = TransactionBinding.Outcome.UNKNOWN;
            throw e;
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new BatonException("transaction of job " + job.id() + " failed: " + e.getMessage(), e);
        } finally {
            try {
                binding.ended(outcome);
            } catch (RuntimeException e) {
                log.warn(
                        "the transaction binding failed after job {}'s transaction ended ({}); ignored",
                        job.id(),
                        outcome,
                        e);
            }
        }
    }
}
