package dev.baton;

/**
 * What one bulk action of {@link Admin} did. {@code matched - changed - cancelRequested} jobs were left as
 * they were: not in a state the action applies to, or held by a worker at that instant (a claim, a
 * heartbeat or a completion in progress; the action never waits for one), or changed by a worker since
 * they matched.
 *
 * @param matched         by id list: how many of the ids name an existing job; by query: how many jobs the
 *                        query selected in a state the action applies to (at most {@link Admin#MAX_BULK})
 * @param changed         how many jobs the action changed now: cancelled, made available again, or deleted
 * @param cancelRequested cancel only: how many running jobs were asked to stop (each ends
 *                        {@link JobState#CANCELLED} once its handler stops); 0 for the other actions
 * @param more            by query: whether more jobs match beyond the {@link Admin#MAX_BULK} this call took
 *                        (call again to go on); always false by id list
 */
public record BulkResult(int matched, int changed, int cancelRequested, boolean more) {}
