package dev.baton;

import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * A stored schedule, for operators: its definition, where it comes from (declared or runtime) and its
 * version or revision, next run, last run and the state of the job that run produced.
 *
 * @param ownerApp       the declaring application; empty for a runtime schedule
 * @param declaredBy     the application versions that declare it (none for a runtime schedule)
 * @param definitionVersion the version whose definition is stored; {@code r<revision>} for a runtime schedule
 * @param misfiredTotal  due instants dropped by the misfire policy, in all
 * @param failingSince   since when the schedule cannot fire (empty while it fires): see {@code lastError}
 * @param errorCount     failed attempts to fire since it last fired
 * @param lastError      why the last attempt to fire failed
 * @param origin         declared in code or created at run time
 * @param revision       a runtime schedule's revision, renewed by every change (larger is newer; not
 *                       consecutive, never reused); pass it to {@link Schedules#update(Schedule, long)}.
 *                       0 for a declared schedule
 * @param changedBy      who made a runtime schedule's last change (an actor, or the application and version
 *                       of the node that made it)
 * @param changedAt      when, on the database clock
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
        Optional<String> lastError,
        ScheduleOrigin origin,
        long revision,
        Optional<String> changedBy,
        Optional<Instant> changedAt) {
    /** True while the schedule cannot fire (it is retried with a backoff and reported). */
    public boolean failing() {
        return failingSince.isPresent();
    }
}
