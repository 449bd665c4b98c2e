package dev.baton;

/**
 * What a schedule does with due instants that were not fired in time (all nodes down, the scheduler
 * stalled): an instant is <em>missed</em> when it is older than the schedule's misfire threshold.
 * Instants within the threshold always fire. Missed instants that are dropped are counted on the
 * schedule ({@code misfiredTotal}, {@code lastMisfireAt}).
 */
public enum MisfirePolicy {
    /** Drop every missed instant; continue with the next one. */
    SKIP,
    /** Fire once for the latest missed instant (if no timely instant fires), drop the rest. The default. */
    RUN_ONCE,
    /** Fire the latest {@code catchUpLimit} missed instants, oldest first; drop older ones. */
    CATCH_UP
}
