package dev.baton;

/**
 * A change of a runtime schedule that the stored schedule refuses: the name is taken (by a declared
 * schedule, or by a runtime schedule another call created first), the schedule is declared in code (only
 * its application changes it), or it has moved on from the revision the caller read (another change came
 * first). Nothing was changed; read the schedule again ({@link Schedules#get}) and decide.
 */
public class ScheduleConflictException extends BatonException {
    private static final long serialVersionUID = 1L;

    /** The schedule's name. */
    private final String scheduleName;
    /** The stored runtime schedule's revision when the change was refused; 0 if declared or absent. */
    private final long currentRevision;

    /** A conflict on schedule {@code scheduleName}, now at {@code currentRevision} (0: declared or none). */
    public ScheduleConflictException(String message, String scheduleName, long currentRevision) {
        super(message);
        this.scheduleName = scheduleName;
        this.currentRevision = currentRevision;
    }

    /** The schedule's name. */
    public String scheduleName() {
        return scheduleName;
    }

    /** The stored runtime schedule's revision when the change was refused; 0 if declared or absent. */
    public long currentRevision() {
        return currentRevision;
    }
}
