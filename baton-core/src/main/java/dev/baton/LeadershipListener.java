package dev.baton;

/**
 * Callbacks of a {@link Leadership}. They run on the runner's control thread: keep them short and
 * non-blocking. An exception thrown here is logged and ignored.
 */
public interface LeadershipListener {
    /** A listener that does nothing. */
    LeadershipListener NONE = new LeadershipListener() {};

    /** This instance became the leader under {@code grant}; the task starts right after. */
    default void onElected(LeaseGrant grant) {}

    /** The term under {@code grant} ended; the task has been cancelled (it may still be finishing). */
    default void onRevoked(LeaseGrant grant, RevocationReason reason) {}
}
