package dev.baton.internal.service;

/**
 * Named points in Baton's lease and leadership code where a test can pause a thread (see
 * {@code dev.baton.testkit.PausePoints#reach}). Production code never sets hooks; the default does
 * nothing. The point names are listed in {@link Points}.
 */
@FunctionalInterface
public interface Hooks {
    Hooks NONE = point -> {};

    void reach(String point);

    /** The names of the pause points. */
    public final class Points {
        /** In {@code fenced}: before the fence check runs in the new transaction. */
        public static final String FENCE_BEFORE_CHECK = "fence.beforeCheck";
        /** In {@code fenced}: after the fence check passed, before the caller's work runs. */
        public static final String FENCE_AFTER_CHECK = "fence.afterCheck";
        /** In {@code fenced}: after the caller's work, before COMMIT is sent. */
        public static final String FENCE_BEFORE_COMMIT = "fence.beforeCommit";
        /** In the leadership runner: before a renewal is sent. */
        public static final String RENEW_BEFORE_SEND = "leadership.renew.beforeSend";
        /** In a renewal: the database answered, before the answer is read (the answer's arrival). */
        public static final String RENEW_ANSWERED = "lease.renew.answered";
        /** In the leadership runner: an acquisition attempt found the lease held (the candidate waits next). */
        public static final String CAMPAIGN_LOST = "leadership.campaign.lost";
        /** In the leadership runner's task, before the leader task is invoked. */
        public static final String TASK_BEFORE_RUN = "leadership.task.beforeRun";

        /** In a concurrency cap's admission: the slot is inserted, before COMMIT (the key's lock is held). */
        public static final String CAP_BEFORE_COMMIT = "cap.beforeCommit";

        /** In the worker: before a claim statement is sent (the claimer holds its claim lock). */
        public static final String JOB_BEFORE_CLAIM = "job.beforeClaim";
        /** In the worker: after a claim, before the claimed jobs' handlers may run. */
        public static final String JOB_CLAIMED = "job.claimed";
        /** In the worker: on the handler's thread, before the handler is invoked. */
        public static final String JOB_BEFORE_HANDLER = "job.beforeHandler";
        /** In the worker: before a batched heartbeat is sent. */
        public static final String JOB_HEARTBEAT_BEFORE_SEND = "job.heartbeat.beforeSend";
        /** In a job's completion transaction: after the handler's work and the completion, before COMMIT. */
        public static final String JOB_TX_BEFORE_COMMIT = "job.transaction.beforeCommit";
        /** In the worker's completer: a batch of outcomes is taken, before it is recorded. */
        public static final String JOB_OUTCOMES_BEFORE_RECORD = "job.outcomes.beforeRecord";
        /** In the worker: after a batch of outcomes was recorded. */
        public static final String JOB_OUTCOMES_RECORDED = "job.outcomesRecorded";

        private Points() {}
    }
}
