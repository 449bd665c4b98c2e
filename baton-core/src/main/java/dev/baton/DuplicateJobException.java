package dev.baton;

/**
 * An enqueue with {@link Uniqueness.Conflict#REJECT} found its uniqueness key's job in scope: nothing was
 * written (in a batch, nothing of the batch). On the caller's transaction, that transaction is left as it
 * was and may go on.
 */
public final class DuplicateJobException extends BatonException {
    private static final long serialVersionUID = 1L;

    /** The uniqueness key. */
    private final String uniqueKey;
    /** The id of the job that holds the key. */
    private final long existingId;

    /** The enqueue of a job with {@code uniqueKey} was refused because job {@code existingId} holds the key. */
    public DuplicateJobException(String uniqueKey, long existingId) {
        super("a job with uniqueness key '" + uniqueKey + "' is already in scope (job " + existingId
                + "); nothing was enqueued (Uniqueness.Conflict.REJECT)");
        this.uniqueKey = uniqueKey;
        this.existingId = existingId;
    }

    /** The uniqueness key. */
    public String uniqueKey() {
        return uniqueKey;
    }

    /** The id of the job that holds the key. */
    public long existingId() {
        return existingId;
    }
}
