package dev.baton;

/**
 * Runs jobs of one kind. Runs at least once per job, possibly more (after a crash, a lost lease or a
 * retry): make it idempotent, e.g. with {@link JobContext#idempotencyKey()} for external calls and
 * {@link JobContext#transaction} for writes to the same database.
 *
 * <p>Return normally for success. Throw to fail the attempt (retried with backoff until the job's
 * max attempts); throw {@link JobHandler.PermanentFailure} to fail without retrying. Throw
 * {@link JobHandler.Snooze} to run again later without using up an attempt, or {@link JobHandler.RetryAfter}
 * to fail the attempt and retry after a delay the handler knows (an HTTP 429's Retry-After) instead of the
 * retry policy's backoff. Stop promptly when {@link JobContext#isCancelled()} becomes true (the thread is
 * interrupted too).
 */
@FunctionalInterface
public interface JobHandler<T> {
    /** Works one attempt of a job with its decoded {@code payload}. */
    void handle(T payload, JobContext context) throws Exception;

    /** The longest delay of a {@link Snooze} or a {@link RetryAfter}. */
    java.time.Duration MAX_DELAY = java.time.Duration.ofDays(30);

    /**
     * Thrown by a handler: not now. The job goes back to waiting and runs again {@code delay} after the
     * outcome is recorded (on the database clock). The attempt is given back, so snoozing never uses up the
     * job's max attempts (its next run has the same attempt number) and adds nothing to its errors. Like
     * every outcome it is recorded only if the attempt is still current; a job whose cancellation was
     * requested ends cancelled instead. Reported as {@link BatonMetrics.JobOutcome#SNOOZED}.
     */
    class Snooze extends RuntimeException {
        private static final long serialVersionUID = 1L;

        /** How long until the job runs again. */
        private final java.time.Duration delay;

        /**
         * Run again after {@code delay}: zero to {@link JobHandler#MAX_DELAY}.
         *
         * @throws IllegalArgumentException if the delay is null, negative or longer than {@code MAX_DELAY}
         */
        public Snooze(java.time.Duration delay) {
            super("snoozed for " + delay, null, false, false); // control flow: no stack trace
            this.delay = checkedDelay("snooze delay", delay);
        }

        /** How long until the job runs again. */
        public java.time.Duration delay() {
            return delay;
        }
    }

    /**
     * Thrown by a handler: this attempt failed, and the next one should wait {@code delay} (on the database
     * clock, from when the failure is recorded) instead of the retry policy's backoff, e.g. the Retry-After
     * of an HTTP 429 or 503. The attempt is used like any failure: the error recorded is the {@code cause}'s
     * (this exception's when there is none), and after the job's last attempt it ends failed.
     */
    class RetryAfter extends RuntimeException {
        private static final long serialVersionUID = 1L;

        /** How long the next attempt waits. */
        private final java.time.Duration delay;

        /**
         * Retry after {@code delay} (zero to {@link JobHandler#MAX_DELAY}), recording {@code cause} (may be
         * null) as the attempt's error.
         *
         * @throws IllegalArgumentException if the delay is null, negative or longer than {@code MAX_DELAY}
         */
        public RetryAfter(java.time.Duration delay, Throwable cause) {
            super("retry after " + delay + (cause == null ? "" : ": " + cause.getMessage()), cause);
            this.delay = checkedDelay("retry-after delay", delay);
        }

        /** How long the next attempt waits. */
        public java.time.Duration delay() {
            return delay;
        }
    }

    private static java.time.Duration checkedDelay(String what, java.time.Duration delay) {
        if (delay == null || delay.isNegative() || delay.compareTo(MAX_DELAY) > 0) {
            throw new IllegalArgumentException(
                    what + " must be between zero and " + MAX_DELAY + " (JobHandler.MAX_DELAY), but was " + delay);
        }
        return delay;
    }

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
