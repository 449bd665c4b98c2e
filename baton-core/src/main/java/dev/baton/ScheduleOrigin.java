package dev.baton;

/** Where a stored schedule comes from, which decides who may change it. */
public enum ScheduleOrigin {
    /**
     * Declared in code ({@code Baton.Builder#schedule}) by an application: upserted at start-up, versioned
     * by the application's version, disabled when no live version declares it. Runtime calls cannot change
     * or delete it.
     */
    DECLARED,
    /**
     * Created at run time ({@link Schedules#create}): shared by the cluster, versioned by a revision that
     * each change renews, never disabled or deleted by an application's start-up or reconciliation; changed
     * and deleted only through {@link Schedules}.
     */
    RUNTIME
}
