package dev.baton.internal.job;

import dev.baton.WorkerConfig;
import java.time.Duration;

/**
 * The job settings that are cluster-wide: each worker declares its own in its node's row, and the
 * maintenance leader applies the most conservative of those of the live workers.
 *
 * @param retention            how long finished jobs are kept
 * @param maxStalls            expired attempts after which a job ends failed
 * @param unhandledKindTimeout how long a job of a kind no live node handles may wait before it is failed
 */
public record JobSettings(Duration retention, int maxStalls, Duration unhandledKindTimeout) {
    /** The settings a worker configured with {@code w} declares. */
    public static JobSettings of(WorkerConfig w) {
        return new JobSettings(w.retention(), w.maxStalls(), w.unhandledKindTimeout());
    }

    /** The more conservative of the two, setting by setting. */
    public JobSettings and(JobSettings o) {
        return new JobSettings(
                max(retention, o.retention),
                Math.max(maxStalls, o.maxStalls),
                max(unhandledKindTimeout, o.unhandledKindTimeout));
    }

    private static Duration max(Duration a, Duration b) {
        return a.compareTo(b) >= 0 ? a : b;
    }
}
