package dev.baton;

/**
 * The connection failed while a COMMIT (or another statement whose effect matters) was in flight,
 * so Baton cannot know whether it took effect. This is not a failure: the write may have committed.
 * Retry with the same idempotency key, or read back to find out; never treat it as "did not happen".
 */
public class UnknownOutcomeException extends BatonException {
    private static final long serialVersionUID = 1L;

    /** An unknown outcome, as {@code message} says, caused by {@code cause}. */
    public UnknownOutcomeException(String message, Throwable cause) {
        super(message, cause);
    }
}
