package dev.baton;

import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * A stored schedule, for operators: its definition, next run, last run and the state of the job
 * that run produced.
 *
 * @param declaredBy     the application versions that declare it
 * @param misfiredTotal  due instants dropped by the misfire policy, in all
 * @param failingSince   since when the schedule cannot fire (empty while it fires): see {@code lastError}
 * @param errorCount     failed attempts to fire since it last fired
 * @param lastError      why the last attempt to fire failed
 */
public record ScheduleInfo(
        String name,
        String ownerApp,
        String specKind,
        String spec,
        String timeZone,
        String jobKind,
        String queue,
        String misfirePolicy,
        boolean allowOverlap,
        boolean enabled,
        boolean paused,
        List<String> declaredBy,
        String definitionVersion,
        Instant nextRunAt,
        Optional<Instant> lastDueAt,
        Optional<Instant> lastFiredAt,
        Optional<Long> lastJobId,
        Optional<JobState> lastJobState,
        long misfiredTotal,
        Optional<Instant> failingSince,
        int errorCount,
        Optional<String> lastError) {
    /** True while the schedule cannot fire (it is retried with a backoff and reported). */
    public boolean failing() {
        return failingSince.isPresent();
    }
}
