package dev.baton;

import java.time.Duration;
import java.util.Map;

/** What a {@link JobHandler} gets for one attempt. */
public interface JobContext {
    /** The job's id. */
    long jobId();

    /** The job's kind (its handler's name). */
    String kind();

    /** The queue the job was claimed from. */
    String queue();

    /** 1 for the first attempt. */
    int attempt();

    /** How many attempts the job may use. */
    int maxAttempts();

    /** This attempt's token: completion and heartbeats of any other attempt are rejected. */
    long attemptToken();

    /**
     * A key for external calls that is the same for every attempt of this job ({@code baton-job-<id>}),
     * so a retried attempt does not repeat an effect the external system already applied.
     */
    String idempotencyKey();

    /**
     * What the job carries besides its payload, set at enqueue (see {@link JobRequest#metadata(String,
     * String)}), often by {@link JobInterceptor interceptors}: trace context, tenant. Unmodifiable; empty if
     * nothing was set.
     */
    default Map<String, String> metadata() {
        return Map.of();
    }

    /**
     * How long the job waited to be claimed for this attempt: from its due time to the claim, on the
     * database's clock (zero when it was claimed on time or the context does not know).
     */
    default Duration waited() {
        return Duration.ZERO;
    }

    /**
     * True when this attempt must stop: cancellation requested, the job's timeout passed, the worker
     * is shutting down past its drain timeout, or the attempt's lease could not be confirmed. The
     * handler's thread is interrupted too. Whatever the handler does after this, the attempt's
     * outcome is not recorded.
     */
    boolean isCancelled();

    /** Waits up to {@code timeout}; returns true early if cancelled. Use instead of sleeping. */
    boolean awaitCancellation(Duration timeout);

    /**
     * Runs {@code work} in one transaction that also completes this attempt successfully: the
     * handler's rows and the completion commit together or not at all. The attempt is fenced: if
     * another attempt has taken over, nothing is written and {@link LeaseLostException} is thrown.
     * Call at most once, at the end of the handler; afterwards the handler should return.
     *
     * @throws UnknownOutcomeException if the connection failed during COMMIT
     */
    <T> T transaction(FencedWork<T> work);
}
