package dev.baton;

/**
 * Runs jobs of one kind. Runs at least once per job, possibly more (after a crash, a lost lease or a
 * retry): make it idempotent, e.g. with {@link JobContext#idempotencyKey()} for external calls and
 * {@link JobContext#transaction} for writes to the same database.
 *
 * <p>Return normally for success. Throw to fail the attempt (retried with backoff until the job's
 * max attempts); throw {@link JobHandler.PermanentFailure} to fail without retrying. Stop promptly
 * when {@link JobContext#isCancelled()} becomes true (the thread is interrupted too).
 */
@FunctionalInterface
public interface JobHandler<T> {
    /** Works one attempt of a job with its decoded {@code payload}. */
    void handle(T payload, JobContext context) throws Exception;

    /** Thrown by a handler: the job fails now, with no further attempts. */
    class PermanentFailure extends RuntimeException {
        private static final long serialVersionUID = 1L;

        /** A permanent failure with {@code message}. */
        public PermanentFailure(String message) {
            super(message);
        }

        /** A permanent failure with {@code message}, caused by {@code cause}. */
        public PermanentFailure(String message, Throwable cause) {
            super(message, cause);
        }
    }
}
