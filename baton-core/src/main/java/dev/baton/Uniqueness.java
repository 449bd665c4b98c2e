package dev.baton;

import java.time.Duration;

/**
 * How long a job enqueued with {@link JobRequest#unique(String, Uniqueness)} keeps its key to itself, and
 * what a later enqueue with the same key does while it does. Built with {@link #whileAvailable()},
 * {@link #whileAvailableOrRunning()} or {@link #within(Duration)}, then {@link #onConflict(Conflict)}.
 *
 * <pre>{@code
 * // one waiting sync per account; a newer request replaces the waiting one's payload and run-at
 * JobRequest.of("account.sync", change).delay(Duration.ofSeconds(30))
 *         .unique("sync:" + accountId, Uniqueness.whileAvailable().onConflict(Uniqueness.Conflict.REPLACE));
 * }</pre>
 *
 * <p>The scope is checked at enqueue against the latest job enqueued with the key, atomically: racing
 * enqueues of one key, from any number of threads and nodes, are serialized by a row lock on the key and
 * leave one job. A job that later comes back into scope (an attempt retried, a job rescued) does not
 * remove a job enqueued in the meantime. Unlike {@link JobRequest#idempotencyKey(String)}, which blocks
 * any re-enqueue while the job is retained, a key here is free again as soon as its job leaves the scope.
 *
 * @param scope    which of the key's jobs count as duplicates
 * @param window   the window of {@link Scope#WINDOW}; null for the other scopes
 * @param conflict what a duplicate enqueue does
 */
public record Uniqueness(Uniqueness.Scope scope, Duration window, Uniqueness.Conflict conflict) {
    /** The longest window of {@link #within(Duration)}. */
    public static final Duration MAX_WINDOW = Duration.ofDays(365);

    /** Which of the key's jobs count as a duplicate. */
    public enum Scope {
        /** Available (waiting to run, now or later): a running or finished job frees the key. */
        AVAILABLE,
        /** Available or running: a finished job frees the key. */
        AVAILABLE_OR_RUNNING,
        /** Enqueued within the window, whatever its state (finished and pruned jobs too, while kept). */
        WINDOW
    }

    /** What an enqueue does when the key's job is in scope. */
    public enum Conflict {
        /**
         * Nothing is written; the existing job's id is returned ({@link EnqueueResult.Outcome#EXISTING}).
         * The default.
         */
        RETURN_EXISTING,
        /**
         * Debounce: a waiting (available) job gets the new request's payload and run-at
         * ({@link EnqueueResult.Outcome#REPLACED}); nothing else of it changes. A running or finished job is
         * never changed: if it still counts under the scope its id is returned
         * ({@link EnqueueResult.Outcome#EXISTING}); a job claimed between the lookup and the replacement has
         * left {@link Scope#AVAILABLE}, so under that scope a new job is enqueued.
         */
        REPLACE,
        /** Nothing is written and {@link DuplicateJobException} (with the existing job's id) is thrown. */
        REJECT
    }

    /**
     * Checks the combination: a scope and a conflict choice are set, and a window is given for
     * {@link Scope#WINDOW} only, 1 ms to {@link #MAX_WINDOW}.
     */
    public Uniqueness {
        if (scope == null) {
            throw new IllegalArgumentException(
                    "uniqueness scope must be one of AVAILABLE, AVAILABLE_OR_RUNNING, WINDOW, but was null");
        }
        if (conflict == null) {
            throw new IllegalArgumentException(
                    "conflict must be one of RETURN_EXISTING, REPLACE, REJECT, but was null");
        }
        if (scope == Scope.WINDOW && (window == null || window.toMillis() < 1 || window.compareTo(MAX_WINDOW) > 0)) {
            throw new IllegalArgumentException("uniqueness window must be between 1 ms and " + MAX_WINDOW
                    + " (Uniqueness.MAX_WINDOW), but was " + window);
        }
        if (scope != Scope.WINDOW && window != null) {
            throw new IllegalArgumentException(
                    "a window applies to Scope.WINDOW only, but " + scope + " was given " + window);
        }
    }

    /** Unique while the key's latest job is available (waiting); a job that started running frees the key. */
    public static Uniqueness whileAvailable() {
        return new Uniqueness(Scope.AVAILABLE, null, Conflict.RETURN_EXISTING);
    }

    /** Unique until the key's latest job has finished (succeeded, failed or cancelled). */
    public static Uniqueness whileAvailableOrRunning() {
        return new Uniqueness(Scope.AVAILABLE_OR_RUNNING, null, Conflict.RETURN_EXISTING);
    }

    /**
     * Unique for {@code window} after the key's latest job was enqueued (on the database clock), whatever
     * its state: at most one job per key per window. 1 ms to {@link #MAX_WINDOW}.
     */
    public static Uniqueness within(Duration window) {
        return new Uniqueness(Scope.WINDOW, window, Conflict.RETURN_EXISTING);
    }

    /** This uniqueness with {@code conflict} deciding what a duplicate enqueue does (default: return existing). */
    public Uniqueness onConflict(Conflict conflict) {
        return new Uniqueness(scope, window, conflict);
    }
}
