package dev.baton;

import java.util.Objects;

/**
 * The job an enqueue produced.
 *
 * @param id      the job id
 * @param created false when the idempotency or uniqueness key matched an existing job, whose id this is
 * @param outcome what the enqueue did: created a job, found an existing one, or replaced a waiting one's
 *                payload and run-at ({@link Uniqueness.Conflict#REPLACE})
 */
public record EnqueueResult(long id, boolean created, Outcome outcome) {
    /** What an enqueue did. */
    public enum Outcome {
        /** A new job was inserted. */
        CREATED,
        /** An existing job (same idempotency key, or uniqueness key in scope) was returned unchanged. */
        EXISTING,
        /** The waiting job with the uniqueness key got the new payload and run-at. */
        REPLACED
    }

    /** Checks that {@code created} agrees with {@code outcome}. */
    public EnqueueResult {
        Objects.requireNonNull(outcome, "outcome");
        if (created != (outcome == Outcome.CREATED)) {
            throw new IllegalArgumentException("created (" + created + ") must be true if and only if outcome is "
                    + "CREATED, but outcome was " + outcome);
        }
    }

    /** A result of {@link Outcome#CREATED} or {@link Outcome#EXISTING}, as {@code created} says. */
    public EnqueueResult(long id, boolean created) {
        this(id, created, created ? Outcome.CREATED : Outcome.EXISTING);
    }
}
