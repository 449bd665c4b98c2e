package dev.baton;

import dev.baton.internal.notify.Notifier;

/** How a Baton instance learns that a lease was released (and, later, that jobs were enqueued). */
public enum NotificationMode {
    /**
     * LISTEN on a dedicated connection, after a start-up probe proves that notifications arrive.
     * If they do not (a transaction-pooling PgBouncer accepts LISTEN and silently loses what it
     * would receive), fall back to polling and say so in the log. Also polls, and says so, when the
     * connection would come from a pool too small to give one up for good (fewer than
     * {@value Notifier#MIN_POOL_FOR_LISTEN} connections, for pools whose size Baton can read).
     */
    AUTO,
    /** LISTEN without the probe. */
    LISTEN,
    /** Never LISTEN; rely on polling alone. */
    POLL
}
