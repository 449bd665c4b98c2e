package dev.baton.test;

import dev.baton.Baton;
import dev.baton.JobInfo;
import dev.baton.internal.job.InlineExecution;
import dev.baton.internal.testsupport.TestSupport;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.TreeSet;

/**
 * Runs a node's due jobs on the test thread, one at a time, and records each outcome before returning: no
 * worker thread, no background service, nothing to wait for. Each attempt goes through the path the
 * worker uses: the same claim (queues the node's worker serves, kinds it has handlers for, priority and
 * concurrency keys respected), the handler's {@code JobContext} ({@code ctx.transaction} commits the
 * handler's writes with the completion, fenced by the attempt; {@code ctx.attempt()} counts), the same
 * mapping of how the handler ended (success, a retry with the kind's backoff, a permanent failure, the last
 * attempt) and the same fenced recording.
 *
 * <pre>{@code
 * Baton baton = db.batonBuilder()
 *         .worker(WorkerConfig.builder().queue("default", 1).build())
 *         .handle("receipt.send", Receipt.class, (r, ctx) -> ctx.transaction(tx -> markSent(tx, r)))
 *         .build();                                   // built, not started
 * baton.jobs().enqueue(JobRequest.of("receipt.send", new Receipt(7)));
 * InlineRun run = InlineWorker.of(baton).runDue();
 * assertThat(run.succeeded()).hasSize(1);
 * }</pre>
 *
 * <p><b>The node.</b> It needs a worker (handlers and queues); it need not be started. If it is started
 * (a Spring context), its worker stops claiming when this is created (running jobs go on) and never claims
 * again, so from then on only the test thread runs the node's jobs: create this before the test enqueues.
 * If the node is started after this is created, its worker claims as usual.
 *
 * <p><b>What differs from a worker.</b> There is no heartbeat: a job's timeout is not enforced, a
 * cancellation requested while the handler runs is not delivered to it ({@code ctx.isCancelled()} stays
 * false), and the attempt's lease is not extended (a handler longer than the job lease would have its job
 * rescued by a running node's maintenance). Not thread-safe: use it from one test thread.
 */
public final class InlineWorker {
    /** {@link #drain()}'s bound on attempts: a handler that always retries ends the drain, not the test run. */
    public static final int DEFAULT_MAX_ATTEMPTS = 1000;

    private final Baton baton;
    private final InlineExecution execution;

    private InlineWorker(Baton baton, InlineExecution execution) {
        this.baton = baton;
        this.execution = execution;
    }

    /**
     * An inline runner of {@code baton}'s handlers.
     *
     * @throws IllegalStateException if the node has no worker (no handlers)
     */
    public static InlineWorker of(Baton baton) {
        Objects.requireNonNull(baton, "baton");
        return new InlineWorker(baton, TestSupport.access().inline(baton));
    }

    /**
     * Runs every job that is due now on the node's queues, one after another, until none is due (at most
     * {@link #DEFAULT_MAX_ATTEMPTS} attempts); a job retried meanwhile waits for its backoff and is not run
     * again here unless the backoff is zero (see {@link #drain()}).
     */
    public InlineRun runDue() {
        return run(null, false, DEFAULT_MAX_ATTEMPTS);
    }

    /** {@link #runDue()} for one queue the node's worker serves. */
    public InlineRun runDue(String queue) {
        return run(requireQueue(queue), false, DEFAULT_MAX_ATTEMPTS);
    }

    /**
     * Runs jobs until none is left to run: whenever nothing is due, the jobs scheduled for later (a delay,
     * a retry's backoff) are made due now, so each job runs until it succeeds, fails or is cancelled. At
     * most {@link #DEFAULT_MAX_ATTEMPTS} attempts; see {@link #drain(int)}.
     */
    public InlineRun drain() {
        return drain(DEFAULT_MAX_ATTEMPTS);
    }

    /**
     * {@link #drain()} with a bound on the attempts run.
     *
     * @throws AssertionError if jobs are still left to run after {@code maxAttempts} attempts (the message
     *                        says how many ran and of which jobs)
     */
    public InlineRun drain(int maxAttempts) {
        if (maxAttempts < 1) {
            throw new IllegalArgumentException("maxAttempts must be at least 1, but was " + maxAttempts);
        }
        return run(null, true, maxAttempts);
    }

    private InlineRun run(String queue, boolean pullForward, int maxAttempts) {
        List<Long> succeeded = new ArrayList<>();
        List<Long> retried = new ArrayList<>();
        List<Long> failed = new ArrayList<>();
        List<Long> cancelled = new ArrayList<>();
        List<Long> unknown = new ArrayList<>();
        List<String> queues = queue != null ? List.of(queue) : List.copyOf(new TreeSet<>(execution.queues()));
        int attempts = 0;
        try {
            while (true) {
                boolean ranAny = false;
                for (String q : queues) {
                    OptionalLong id;
                    while (attempts < maxAttempts && (id = execution.runOne(q)).isPresent()) {
                        ranAny = true;
                        attempts++;
                        long jobId = id.getAsLong();
                        switch (state(jobId)) {
                            case SUCCEEDED -> succeeded.add(jobId);
                            case AVAILABLE -> retried.add(jobId);
                            case FAILED -> failed.add(jobId);
                            case CANCELLED -> cancelled.add(jobId);
                            case RUNNING -> unknown.add(jobId);
                        }
                    }
                }
                if (attempts >= maxAttempts) {
                    if (pullForward && (execution.makeDue(queue) > 0 || waiting(queues))) {
                        throw new AssertionError("drain ran " + attempts + " attempts (its bound) and jobs are still"
                                + " left to run; attempts that were retried: " + retried);
                    }
                    break;
                }
                // A handler may have enqueued a job on a queue already passed: look again until none is due.
                if (!ranAny && (!pullForward || execution.makeDue(queue) == 0)) {
                    break;
                }
            }
        } catch (SQLException e) {
            throw new IllegalStateException("running jobs inline failed: " + e.getMessage(), e);
        }
        return new InlineRun(succeeded, retried, failed, cancelled, unknown);
    }

    /** True if a job of a handled kind waits on one of {@code queues}. */
    private boolean waiting(List<String> queues) {
        EnqueuedJobs jobs = EnqueuedJobs.of(baton);
        for (String kind : execution.kinds()) {
            for (EnqueuedJob j : jobs.list(kind)) {
                if (queues.contains(j.queue())) {
                    return true;
                }
            }
        }
        return false;
    }

    private dev.baton.JobState state(long jobId) {
        return baton.jobs()
                .get(jobId)
                .map(JobInfo::state)
                .orElseThrow(() -> new IllegalStateException("job " + jobId + " vanished after its attempt"));
    }

    private String requireQueue(String queue) {
        Objects.requireNonNull(queue, "queue");
        if (!execution.queues().contains(queue)) {
            throw new IllegalArgumentException("queue '" + queue + "' is not served by node '" + baton.nodeId()
                    + "' (its worker's queues: " + new TreeSet<>(execution.queues()) + ")");
        }
        return queue;
    }
}
