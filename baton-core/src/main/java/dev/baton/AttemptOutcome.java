package dev.baton;

/**
 * The outcome of one attempt, to be recorded by the {@link JobCompleter} fenced by id and attempt
 * token. Made on a handler thread, then owned by the completer.
 */
final class AttemptOutcome {
    enum Kind {
        SUCCESS("success"),
        RETRY("retry"),
        FAIL("fail"),
        CANCEL("cancel"),
        RELEASE("release");

        /** The outcome's name in the {@code fail} statement. */
        final String sql;

        Kind(String sql) {
            this.sql = sql;
        }
    }

    /** Tells the completer's loop to end. */
    static final AttemptOutcome POISON = new AttemptOutcome(Kind.SUCCESS, -1, -1, null, null);

    final Kind kind;
    final long id;
    final long token;
    String error;
    final Long delayMs;
    /** Recorded in the database; a retried flush skips it. */
    boolean recorded;
    /** Frees the attempt's slot once the outcome is recorded (or given up on); null: nothing to free. */
    Runnable free;
    /** Signalled once per batch after the slots are freed (the claimer of the attempt's queue); null: none. */
    Notifier.Subscription wake;

    private AttemptOutcome(Kind kind, long id, long token, String error, Long delayMs) {
        this.kind = kind;
        this.id = id;
        this.token = token;
        this.error = error;
        this.delayMs = delayMs;
    }

    static AttemptOutcome success(JobStore.Claimed job) {
        return new AttemptOutcome(Kind.SUCCESS, job.id(), job.token(), null, null);
    }

    static AttemptOutcome retry(JobStore.Claimed job, String error, long delayMs) {
        return new AttemptOutcome(Kind.RETRY, job.id(), job.token(), error, delayMs);
    }

    static AttemptOutcome fail(JobStore.Claimed job, String error) {
        return new AttemptOutcome(Kind.FAIL, job.id(), job.token(), error, null);
    }

    static AttemptOutcome cancel(JobStore.Claimed job, String error) {
        return new AttemptOutcome(Kind.CANCEL, job.id(), job.token(), error, null);
    }

    static AttemptOutcome release(JobStore.Claimed job) {
        return new AttemptOutcome(Kind.RELEASE, job.id(), job.token(), null, null);
    }
}
