package dev.baton;

/** The state a Baton node records for itself. */
public enum NodeState {
    /** Running normally. */
    ACTIVE,
    /** Shutting down gracefully: taking no new work, finishing what it has. */
    DRAINING,
    /** Shut down cleanly. */
    STOPPED;
}
