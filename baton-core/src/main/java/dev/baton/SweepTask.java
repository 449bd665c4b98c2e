package dev.baton;

/**
 * Housekeeping registered with {@code Baton.Builder#sweep}: runs once per interval cluster-wide, as
 * a job (so its failures are retried and visible like any job's). Make it idempotent: a sweep can
 * run again after a crash.
 */
@FunctionalInterface
public interface SweepTask {
    /** One sweep; runs as a job, so it is retried if it fails. */
    void run(JobContext context) throws Exception;
}
