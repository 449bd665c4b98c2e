package dev.baton;

import java.time.Duration;
import java.util.Objects;

/**
 * Per-kind defaults for enqueued jobs, registered with {@link Baton.Builder#jobDefaults(String, JobDefaults)}:
 * {@link Jobs#enqueue(JobRequest)} (and every other enqueue through that node) fills in the queue, max
 * attempts and timeout a {@link JobRequest} of the kind leaves unset. A value the request sets wins.
 * Immutable; each setter validates its value as {@link JobRequest} does.
 *
 * <pre>{@code
 * Baton.builder(ds).jobDefaults("email.send", JobDefaults.none().queue("mail").maxAttempts(5))
 * }</pre>
 *
 * <p>Defaults live in the node that enqueues: a node built without them enqueues with the plain
 * {@link JobRequest} defaults ({@value JobRequest#DEFAULT_QUEUE}, {@value JobRequest#DEFAULT_MAX_ATTEMPTS}
 * attempts, no timeout).
 */
public final class JobDefaults {
    private static final JobDefaults NONE = new JobDefaults(null, 0, null);

    private final String queue;
    private final int maxAttempts;
    private final Duration timeout;

    private JobDefaults(String queue, int maxAttempts, Duration timeout) {
        this.queue = queue;
        this.maxAttempts = maxAttempts;
        this.timeout = timeout;
    }

    /** No defaults: start here and set what the kind needs. */
    public static JobDefaults none() {
        return NONE;
    }

    /** The queue of the kind's jobs (see {@link JobRequest#QUEUE_NAME}). */
    public JobDefaults queue(String queue) {
        return new JobDefaults(JobRequest.validQueue(queue), maxAttempts, timeout);
    }

    /** How many attempts the kind's jobs get in all (1 to {@value JobRequest#MAX_ATTEMPTS_LIMIT}). */
    public JobDefaults maxAttempts(int maxAttempts) {
        return new JobDefaults(queue, JobRequest.validMaxAttempts(maxAttempts), timeout);
    }

    /** How long a handler of the kind may run before it is cancelled (positive). */
    public JobDefaults timeout(Duration timeout) {
        Checks.requirePositive("timeout", timeout, false);
        return new JobDefaults(queue, maxAttempts, timeout);
    }

    /** The default queue, or null when unset. */
    public String queue() {
        return queue;
    }

    /** The default max attempts, or 0 when unset. */
    public int maxAttempts() {
        return maxAttempts;
    }

    /** The default timeout, or null when unset. */
    public Duration timeout() {
        return timeout;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof JobDefaults d
                && Objects.equals(queue, d.queue)
                && maxAttempts == d.maxAttempts
                && Objects.equals(timeout, d.timeout);
    }

    @Override
    public int hashCode() {
        return Objects.hash(queue, maxAttempts, timeout);
    }

    @Override
    public String toString() {
        return "JobDefaults[queue=" + queue + ", maxAttempts=" + maxAttempts + ", timeout=" + timeout + "]";
    }
}
