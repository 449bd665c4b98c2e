package dev.baton;

/**
 * How the jobs of one concurrency key ({@link JobRequest#concurrencyKey(String, KeyOrder)}) take their turns.
 * Either way at most one job of a key runs at a time across the cluster.
 */
public enum KeyOrder {
    /** Any ready job of the key may run next: a job waiting for its retry lets newer jobs of its key pass. */
    ANY,
    /**
     * The key's jobs run in enqueue order (by job id): a job is claimed only when no older job of its key is
     * still waiting, whether for its run-at, a retry after a failure, a snooze or a rescue. A retried job so
     * keeps its place ahead of newer jobs of its key; a job that fails for good, succeeds or is cancelled
     * lets the next one go. Applies to the jobs enqueued with it; older jobs of the key enqueued without it
     * still hold it back. Holds once every node claiming the key's queues runs a version that knows it (older
     * nodes claim by {@link #ANY}).
     */
    FIFO
}
