package dev.baton;

/** Why a leader stopped leading. */
public enum RevocationReason {
    /** {@link Leadership#stop()} or Baton shut down: the task was cancelled and the lease released. */
    STOPPED,
    /** A renewal found the lease expired, released or taken over: someone else may already lead. */
    LOST,
    /**
     * No renewal was confirmed before the local deadline (half the TTL after the send time of the last
     * confirmed renewal): the leader can no longer prove it owns the lease, so it stopped by itself
     * before anyone else could be let in.
     */
    DEADLINE,
    /** The leader task returned normally; the lease was released. */
    TASK_COMPLETED,
    /** The leader task threw; the lease was released. */
    TASK_FAILED,
    /**
     * An operator drained this node or retired its version ({@link Controls}): the task was cancelled and
     * the lease released; the node campaigns again once the control is lifted.
     */
    DRAINED
}
