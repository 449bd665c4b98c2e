package dev.baton.internal.job;

import dev.baton.TransactionBinding;
import dev.baton.internal.db.Db;
import dev.baton.internal.service.Hooks;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.OptionalLong;
import java.util.Set;
import java.util.function.LongSupplier;

/**
 * Test support (the inline runner of baton-test): runs a node's due jobs on the calling thread, one at a
 * time, through the path the worker uses (the same claim statement, {@link RunningAttempt} as the
 * handler's context, the {@link JobExecutor} mapping how the handler ended to an outcome, the
 * {@link JobCompleter} recording it), and records each outcome before returning. No thread is started: the
 * completer here is the execution's own and is never started; its pass is called once per attempt.
 *
 * <p>What the worker's background services would add is absent: no heartbeat (the attempt's lease is not
 * extended, a job timeout is not enforced, and a cancellation requested while the handler runs is not
 * delivered to it), and no rescue. Not thread-safe: one test thread.
 */
public final class InlineExecution {
    private final Db db;
    private final JobStore store;
    private final String[] kinds;
    private final Set<String> queues;
    private final Duration jobLease;
    private final String nodeId;
    private final Hooks hooks;
    private final LongSupplier ticker;
    private final TransactionBinding binding;
    private final JobExecutor executor;
    private final JobCompleter completer;

    InlineExecution(
            Db db,
            JobStore store,
            String[] kinds,
            Set<String> queues,
            Duration jobLease,
            String nodeId,
            Hooks hooks,
            LongSupplier ticker,
            TransactionBinding binding,
            JobExecutor executor,
            JobCompleter completer) {
        this.db = db;
        this.store = store;
        this.kinds = kinds.clone();
        this.queues = Set.copyOf(queues);
        this.jobLease = jobLease;
        this.nodeId = nodeId;
        this.hooks = hooks;
        this.ticker = ticker;
        this.binding = binding;
        this.executor = executor;
        this.completer = completer;
    }

    /** The queues the node's worker serves. */
    public Set<String> queues() {
        return queues;
    }

    /** The job kinds the node has handlers for. */
    public Set<String> kinds() {
        return Set.of(kinds);
    }

    /**
     * Claims one due job of {@code queue} (one the worker serves) as the worker would, runs its handler on
     * this thread and records the outcome; returns its id, or empty if no job of a handled kind is due.
     */
    public OptionalLong runOne(String queue) throws SQLException {
        requireServed(queue);
        long send = ticker.getAsLong();
        List<JobStore.Claimed> claimed;
        try {
            claimed = db.call(
                    "claiming a job of queue '" + queue + "' inline",
                    c -> store.claim(c, queue, kinds, 1, jobLease.toMillis(), nodeId));
        } catch (JobStore.KeyRaceLost e) {
            return OptionalLong.empty(); // a job of the same concurrency key runs elsewhere
        }
        if (claimed.isEmpty()) {
            return OptionalLong.empty();
        }
        JobStore.Claimed job = claimed.get(0);
        RunningAttempt a = new RunningAttempt(job, send, jobLease, db, store, hooks, binding);
        if (executor.execute(a, () -> {}, null)) {
            // execute() queued exactly one outcome: this pass takes it and records it, on this thread.
            try {
                completer.runOnce();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while recording the outcome of job " + job.id(), e);
            }
        }
        return OptionalLong.of(job.id());
    }

    /**
     * Makes the available jobs of {@code queue} (null: every queue the worker serves) that are scheduled
     * for later, by a delay or a retry's backoff, due now; returns how many.
     */
    public int makeDue(String queue) throws SQLException {
        String[] which;
        if (queue == null) {
            which = queues.toArray(new String[0]);
        } else {
            requireServed(queue);
            which = new String[] {queue};
        }
        return db.call("making jobs due now", c -> store.makeDue(c, which, kinds));
    }

    private void requireServed(String queue) {
        if (!queues.contains(queue)) {
            throw new IllegalArgumentException(
                    "queue '" + queue + "' is not served by this node's worker (its queues: " + queues + ")");
        }
    }
}
