package dev.baton.test;

import java.time.Instant;

/**
 * A job waiting to run, as stored: available, due now or scheduled for later ({@link #runAt()}).
 *
 * @param id          the job's id
 * @param queue       its queue
 * @param kind        its kind
 * @param payloadJson its payload as JSON text, as the payload codec wrote it
 * @param runAt       when it becomes due, on the database clock
 * @param attempt     attempts used so far (0 before the first; more after a retry)
 * @param maxAttempts attempts it may use
 */
public record EnqueuedJob(
        long id, String queue, String kind, String payloadJson, Instant runAt, int attempt, int maxAttempts) {

    /** One line for failure messages: kind, payload, queue, run time and id. */
    public String describe() {
        return kind + " " + payloadJson + " on queue '" + queue + "' run_at " + runAt + " (job " + id
                + (attempt > 0 ? ", attempt " + attempt + " of " + maxAttempts + " used" : "") + ")";
    }
}
