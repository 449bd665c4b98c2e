package dev.baton;

/** How a Baton instance learns that a lease was released (and, later, that jobs were enqueued). */
public enum NotificationMode {
    /**
     * LISTEN on a dedicated connection, after a start-up probe proves that notifications arrive.
     * If they do not (a transaction-pooling PgBouncer accepts LISTEN and silently loses what it
     * would receive), fall back to polling and say so in the log.
     */
    AUTO,
    /** LISTEN without the probe. */
    LISTEN,
    /** Never LISTEN; rely on polling alone. */
    POLL
}
