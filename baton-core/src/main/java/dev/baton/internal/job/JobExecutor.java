package dev.baton.internal.job;

import dev.baton.AttemptLostException;
import dev.baton.BatonMetrics;
import dev.baton.JobHandler;
import dev.baton.Mdc;
import dev.baton.PayloadCodec;
import dev.baton.RetryPolicy;
import dev.baton.UnknownOutcomeException;
import dev.baton.internal.job.RunningAttempt.StopReason;
import dev.baton.internal.job.Worker.Registration;
import dev.baton.internal.notify.Notifier;
import dev.baton.internal.service.Hooks;
import java.time.Duration;
import java.util.Map;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * Runs claimed attempts on the calling (handler) thread: decodes the payload, calls the handler, maps
 * how it ended (returned, threw, was stopped for a drain, a timeout, a cancellation or a lost lease) to
 * the outcome to record, reports it to the metrics and hands it to the completer. Writes nothing itself.
 */
public final class JobExecutor {
    private static final Logger log = LoggerFactory.getLogger(JobExecutor.class);

    private final Map<String, Registration<?>> handlers;
    private final String nodeId;
    private final PayloadCodec codec;
    private final JobCompleter completer;
    private final Hooks hooks;
    private final LongSupplier ticker;
    private final BatonMetrics metrics;
    private final Interceptors interceptors;

    public JobExecutor(
            Map<String, Registration<?>> handlers,
            String nodeId,
            PayloadCodec codec,
            JobCompleter completer,
            Hooks hooks,
            LongSupplier ticker,
            BatonMetrics metrics,
            Interceptors interceptors) {
        this.interceptors = interceptors;
        this.handlers = Map.copyOf(handlers);
        this.nodeId = nodeId;
        this.codec = codec;
        this.completer = completer;
        this.hooks = hooks;
        this.ticker = ticker;
        this.metrics = metrics;
    }

    /**
     * Runs one attempt on the calling thread and queues its outcome. Returns true if the outcome was
     * queued with {@code freeSlot} to run once it is recorded (and {@code claimer} to signal then): until
     * then the attempt keeps its slot and stays in the heartbeat, so a slow completer can neither let the
     * node claim without bound nor let a finished job's lease expire (which would run it again). False: no
     * outcome will be recorded, and the caller frees the slot now.
     */
    public boolean execute(RunningAttempt a, Runnable freeSlot, Notifier.Subscription claimer) {
        a.thread = Thread.currentThread();
        if (a.stopReason != null) {
            a.finish();
            Thread.interrupted(); // a stop may have interrupted this thread as it took the attempt
            return false; // drained or lost before it started
        }
        long started = ticker.getAsLong();
        Interceptors.Run run = null; // none without interceptors: nothing to allocate per attempt
        Interceptors.Attempted result;
        MDC.put(Mdc.NODE, nodeId);
        MDC.put(Mdc.JOB_ID, Long.toString(a.job.id()));
        MDC.put(Mdc.JOB_KIND, a.job.kind());
        MDC.put(Mdc.JOB_QUEUE, a.job.queue());
        MDC.put(Mdc.JOB_ATTEMPT, Integer.toString(a.job.attempt()));
        try {
            if (interceptors.isEmpty()) {
                result = attempt(a);
            } else {
                run = interceptors.execute(a, () -> attempt(a), e -> refused(a, e));
                result = run.result();
            }
        } finally {
            a.finish(); // also when an interceptor refused the attempt before the handler ran
            Thread.interrupted(); // never leak an interrupt into the next job on this thread
            MDC.remove(Mdc.NODE);
            MDC.remove(Mdc.JOB_ID);
            MDC.remove(Mdc.JOB_KIND);
            MDC.remove(Mdc.JOB_QUEUE);
            MDC.remove(Mdc.JOB_ATTEMPT);
        }
        if (result.reported() != BatonMetrics.JobOutcome.UNKNOWN) {
            metrics.jobFinished(
                    a.job.queue(), a.job.kind(), result.reported(), Duration.ofNanos(ticker.getAsLong() - started));
        }
        AttemptOutcome outcome = result.outcome();
        if (outcome == null) {
            // Completed in its own transaction (recorded), or nothing will be recorded.
            if (run != null) {
                run.recorded(a.completedInTransaction);
            }
            return false;
        }
        outcome.free = freeSlot;
        outcome.wake = claimer;
        outcome.whenRecorded = run == null ? null : run.whenRecorded();
        completer.add(outcome);
        return true;
    }

    /** Runs the handler and decides the outcome to record; writes nothing. */
    private Interceptors.Attempted attempt(RunningAttempt a) {
        AttemptOutcome outcome;
        try {
            outcome = runHandler(a);
        } finally {
            a.finish();
        }
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
        return new Interceptors.Attempted(outcome, reported(a, outcome), a.failure);
    }

    /** An interceptor threw before the handler ran: the attempt fails as if the handler had thrown it. */
    private Interceptors.Attempted refused(RunningAttempt a, Throwable e) {
        AttemptOutcome outcome = retryOrFail(a, error(a, e));
        return new Interceptors.Attempted(outcome, reported(a, outcome), e);
    }

    /** How the attempt ended, as reported (the recording follows in the completer). */
    private BatonMetrics.JobOutcome reported(RunningAttempt a, AttemptOutcome outcome) {
        if (a.completedInTransaction) {
            return BatonMetrics.JobOutcome.SUCCEEDED;
        } else if (outcome != null) {
            return switch (outcome.kind) {
                case SUCCESS -> BatonMetrics.JobOutcome.SUCCEEDED;
                case RETRY ->
                    a.job.attempt() < a.job.maxAttempts()
                            ? BatonMetrics.JobOutcome.RETRIED
                            : BatonMetrics.JobOutcome.FAILED;
                case FAIL -> BatonMetrics.JobOutcome.FAILED;
                case CANCEL -> BatonMetrics.JobOutcome.CANCELLED;
                case RELEASE -> BatonMetrics.JobOutcome.RELEASED;
                case SNOOZE -> BatonMetrics.JobOutcome.SNOOZED;
            };
        } else if (a.stopReason == StopReason.LOST || a.stopReason == StopReason.DEADLINE) {
            return BatonMetrics.JobOutcome.SELF_STOPPED;
        } else if (a.stopReason == StopReason.DRAIN) {
            return BatonMetrics.JobOutcome.RELEASED;
        }
        return BatonMetrics.JobOutcome.UNKNOWN; // its own transaction's outcome is unknown: the job tells later
    }

    AttemptOutcome runHandler(RunningAttempt a) {
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
            a.failure = e;
            return a.completedInTransaction ? null : AttemptOutcome.fail(a.job, error(a, e));
        } catch (JobHandler.Snooze e) {
            // Not a failure (interceptors see none). Not now: back to waiting with the attempt given back (see the
            // snooze statement).
            return a.completedInTransaction
                    ? null
                    : AttemptOutcome.snooze(a.job, e.delay().toMillis());
        } catch (JobHandler.RetryAfter e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            a.failure = cause;
            // A failed attempt like any other, but the handler knows how long the next one should wait.
            return a.completedInTransaction
                    ? null
                    : AttemptOutcome.retry(a.job, error(a, cause), e.delay().toMillis());
        } catch (UnknownOutcomeException | AttemptLostException e) {
            a.failure = e;
            // The completion may or may not have committed, or the attempt is stale: write nothing;
            // if it did not commit, the lease expires and the job is rescued and run again.
            log.warn("job {} attempt {}: {}", a.job.id(), a.job.attempt(), e.getMessage());
            return null;
        } catch (Throwable e) {
            a.failure = e;
            if (a.completedInTransaction) {
                return null;
            }
            return retryOrFail(a, error(a, e));
        }
    }

    private AttemptOutcome retryOrFail(RunningAttempt a, String error) {
        Registration<?> reg = handlers.get(a.job.kind());
        RetryPolicy own = JobMetadata.retryPolicy(a.job.metadataJson()); // set at enqueue: wins over the handler's
        RetryPolicy policy = own != null ? own : reg == null ? RetryPolicy.DEFAULT : reg.retry();
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
}
