package dev.baton;

/** What an operator's control does (see {@link Controls}). */
public enum ControlAction {
    /** A node claims nothing new, finishes or hands back its jobs and steps down from every lease, until resumed. */
    DRAIN_NODE,
    /** Every node of an application version is drained, now and whenever one starts, until un-retired. */
    RETIRE_VERSION,
    /** No node claims jobs of a kind until it is enabled again; its jobs wait without using attempts. */
    DISABLE_KIND,
    /** One lease's current term was ended at once (one-shot). */
    EXPIRE_LEASE,
    /** A schedule was paused cluster-wide (one-shot; its state lives with the schedule). */
    PAUSE_SCHEDULE,
    /** A schedule was resumed (one-shot). */
    RESUME_SCHEDULE;

    /** True for controls that stay in force until lifted; false for one-shot actions, recorded as done. */
    public boolean standing() {
        return this == DRAIN_NODE || this == RETIRE_VERSION || this == DISABLE_KIND;
    }
}
