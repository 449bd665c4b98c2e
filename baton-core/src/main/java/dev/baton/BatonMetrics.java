package dev.baton;

import dev.baton.internal.metrics.SafeMetrics;
import java.time.Duration;

/**
 * Events Baton reports for metrics, set with {@link Baton.Builder#metrics(BatonMetrics)}. Every method
 * has a no-op default, so an implementation overrides only what it records; {@code baton-micrometer}
 * provides one for Micrometer. Baton itself depends on no metrics library.
 *
 * <p>Contract: methods are called on Baton's own threads (claimers, handler threads, the leadership
 * control thread, the scheduler), often while work is waiting on them: they must be fast and must not
 * block or call back into Baton. An exception thrown by an implementation is caught and ignored.
 * Counts are of what <em>this node</em> did or saw; summing over nodes gives the cluster's view.
 */
public interface BatonMetrics {
    /** Records nothing. */
    BatonMetrics NONE = new BatonMetrics() {};

    /** How an attempt of a job ended on this node. */
    enum JobOutcome {
        /** The handler returned (or completed its job in {@link JobContext#transaction}). */
        SUCCEEDED,
        /** The handler threw (or timed out) and the job will be attempted again after a backoff. */
        RETRIED,
        /** The job ended failed: a permanent failure, its last attempt, or an undecodable payload. */
        FAILED,
        /** Cancellation was requested while it ran; the job ended cancelled. */
        CANCELLED,
        /**
         * The attempt stopped itself: its lease could not be confirmed for half the job lease, or a
         * heartbeat found it no longer current. It wrote nothing; the job will be rescued.
         */
        SELF_STOPPED,
        /** Still running after the drain timeout at shutdown: released to other nodes, not counted as an attempt. */
        RELEASED,
        /** The handler threw {@link JobHandler.Snooze}: the job waits and runs again, not counted as an attempt. */
        SNOOZED,
        /**
         * The handler's own completion transaction failed at COMMIT: it may or may not have committed, and
         * the job tells later. Seen by {@link JobInterceptor interceptors} only, never reported here.
         */
        UNKNOWN
    }

    /** This node became the leader of {@code lease} (a change of owner) under a new generation. */
    default void leadershipAcquired(String lease, long generation) {}

    /**
     * This node's term as leader of {@code lease} ended. {@link RevocationReason#DEADLINE} is a
     * self-stop: no renewal was confirmed in time.
     */
    default void leadershipRevoked(String lease, RevocationReason reason) {}

    /**
     * One renewal call of a held {@code lease} returned after {@code latency} (send to answer, on the
     * monotonic clock); {@code confirmed} is false when it failed, timed out or found the lease lost.
     */
    default void leaseRenewed(String lease, Duration latency, boolean confirmed) {}

    /** {@code count} jobs of {@code kind} were inserted into {@code queue} (duplicates by idempotency key are not counted). */
    default void jobsEnqueued(String queue, String kind, int count) {}

    /** This node claimed an attempt; {@code waited} is from the job's due time to the claim (database clock). */
    default void jobClaimed(String queue, String kind, Duration waited) {}

    /** An attempt ended on this node after its handler ran for {@code ran}. */
    default void jobFinished(String queue, String kind, JobOutcome outcome, Duration ran) {}

    /**
     * The maintenance leader found an attempt whose lease had expired; {@code requeued} is true when
     * the job went back to its queue, false when it ended (failed or cancelled).
     */
    default void jobRescued(String queue, String kind, boolean requeued) {}

    /**
     * This node's worker found available jobs of {@code kind} on {@code queue} that no live node handles
     * (they wait without using an attempt, and fail after {@link WorkerConfig#unhandledKindTimeout()}).
     * Reported once per kind and queue on this node, not per job or per check.
     */
    default void jobKindUnhandled(String queue, String kind) {}

    /** A schedule fired one due instant {@code delay} after it was due (database clock). */
    default void scheduleFired(String schedule, Duration delay) {}

    /**
     * A schedule could not fire (an unknown time zone, a corrupt stored spec, a job that cannot be
     * built); it is retried with a backoff while the other schedules fire on time.
     */
    default void scheduleFailed(String schedule) {}

    /**
     * A coordination primitive could not reach the database and decided locally ({@code primitive} is
     * {@code dedupe}, {@code concurrency_cap} or {@code rate_limiter}).
     */
    default void fallbackUsed(String primitive) {}

    /** Wraps {@code m} so that an exception it throws never reaches Baton's threads. */
    static BatonMetrics safe(BatonMetrics m) {
        return m == NONE || m instanceof SafeMetrics ? m : new SafeMetrics(m);
    }
}
