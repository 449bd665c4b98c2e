package dev.baton.internal.job;

import dev.baton.internal.notify.Notifier;

/**
 * The outcome of one attempt, to be recorded by the {@link JobCompleter} fenced by id and attempt
 * token. Made on a handler thread, then owned by the completer.
 */
public final class AttemptOutcome {
    public enum Kind {
        SUCCESS("success"),
        RETRY("retry"),
        FAIL("fail"),
        CANCEL("cancel"),
        RELEASE("release"),
        /** Recorded by the snooze statement, not the fail statement. */
        SNOOZE("snooze");

        /** The outcome's name in the {@code fail} statement. */
        final String sql;

        Kind(String sql) {
            this.sql = sql;
        }
    }

    /** Tells the completer's loop to end. */
    public static final AttemptOutcome POISON = new AttemptOutcome(Kind.SUCCESS, -1, -1, null, null);

    public final Kind kind;
    public final long id;
    public final long token;
    public String error;
    public final Long delayMs;
    /** Recorded in the database; a retried flush skips it. */
    public boolean recorded;
    /** Its statement ran but matched no row: the attempt was no longer current, nothing was written. */
    public boolean stale;
    /** Frees the attempt's slot once the outcome is recorded (or given up on); null: nothing to free. */
    public Runnable free;
    /** Signalled once per batch after the slots are freed (the claimer of the attempt's queue); null: none. */
    public Notifier.Subscription wake;
    /** Told after the batch whether this outcome was recorded (interceptors' callbacks); null: none. */
    public java.util.function.Consumer<Boolean> whenRecorded;

    private AttemptOutcome(Kind kind, long id, long token, String error, Long delayMs) {
        this.kind = kind;
        this.id = id;
        this.token = token;
        this.error = error;
        this.delayMs = delayMs;
    }

    public static AttemptOutcome success(JobStore.Claimed job) {
        return new AttemptOutcome(Kind.SUCCESS, job.id(), job.token(), null, null);
    }

    public static AttemptOutcome retry(JobStore.Claimed job, String error, long delayMs) {
        return new AttemptOutcome(Kind.RETRY, job.id(), job.token(), error, delayMs);
    }

    public static AttemptOutcome fail(JobStore.Claimed job, String error) {
        return new AttemptOutcome(Kind.FAIL, job.id(), job.token(), error, null);
    }

    public static AttemptOutcome cancel(JobStore.Claimed job, String error) {
        return new AttemptOutcome(Kind.CANCEL, job.id(), job.token(), error, null);
    }

    /** Available again after {@code delayMs}, the attempt given back. */
    public static AttemptOutcome snooze(JobStore.Claimed job, long delayMs) {
        return new AttemptOutcome(Kind.SNOOZE, job.id(), job.token(), null, delayMs);
    }

    public static AttemptOutcome release(JobStore.Claimed job) {
        return new AttemptOutcome(Kind.RELEASE, job.id(), job.token(), null, null);
    }
}
