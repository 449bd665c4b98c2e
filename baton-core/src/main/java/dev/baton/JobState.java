package dev.baton;

import java.util.Locale;

/** The life of a job. Terminal states: succeeded, failed, cancelled. */
public enum JobState {
    /** Waiting to be claimed (now, or from its run-at time on; retries wait here too). */
    AVAILABLE,
    /** Claimed by a worker under an attempt token and a job lease. */
    RUNNING,
    /** Its handler returned normally and the outcome was recorded. */
    SUCCEEDED,
    /** Out of attempts (or stalls), or failed with a non-retryable error. Its errors are kept. */
    FAILED,
    /** Cancelled before it finished; not run again. */
    CANCELLED;

    /** True for the states a job never leaves: succeeded, failed, cancelled. */
    public boolean terminal() {
        return this == SUCCEEDED || this == FAILED || this == CANCELLED;
    }

    static JobState fromDb(String s) {
        return valueOf(s.toUpperCase(Locale.ROOT));
    }
}
