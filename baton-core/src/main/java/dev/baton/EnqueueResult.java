package dev.baton;

/**
 * The job an enqueue produced.
 *
 * @param id      the job id
 * @param created false when the idempotency key matched an existing job, whose id this is
 */
public record EnqueueResult(long id, boolean created) {}
