package dev.baton;

/**
 * Housekeeping registered with {@code Baton.Builder#sweep}: runs once per interval cluster-wide, as
 * a job (so its failures are retried and visible like any job's). Make it idempotent: a sweep can
 * run again after a crash.
 */
@FunctionalInterface
public interface SweepTask {
    void run(JobContext context) throws Exception;
}
