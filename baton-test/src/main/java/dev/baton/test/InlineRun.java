package dev.baton.test;

import java.util.List;

/**
 * What one call of {@link InlineWorker} ran, each job classified by the state its attempt left it in
 * (ids in the order they ran; a job retried and run again by {@link InlineWorker#drain()} appears once
 * per attempt).
 *
 * @param succeeded attempts that completed the job
 * @param retried   attempts that failed and left the job available for another attempt (after its backoff)
 * @param failed    attempts that ended the job failed (a permanent failure, or the last attempt)
 * @param cancelled attempts that ended the job cancelled
 * @param unknown   attempts whose outcome was not recorded (the handler's transaction had an unknown outcome,
 *                  or its attempt was no longer current): the job is left running until its lease expires
 */
public record InlineRun(
        List<Long> succeeded, List<Long> retried, List<Long> failed, List<Long> cancelled, List<Long> unknown) {

    public InlineRun {
        succeeded = List.copyOf(succeeded);
        retried = List.copyOf(retried);
        failed = List.copyOf(failed);
        cancelled = List.copyOf(cancelled);
        unknown = List.copyOf(unknown);
    }

    /** How many attempts ran. */
    public int ran() {
        return succeeded.size() + retried.size() + failed.size() + cancelled.size() + unknown.size();
    }
}
