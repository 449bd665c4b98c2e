package dev.baton;

/**
 * Work that runs while this instance leads. It should loop until {@link LeaderContext#isCancelled()}
 * (or until interrupted), write only through {@link LeaderContext#fenced}, and return when
 * cancelled. Returning or throwing ends this term of leadership and releases the lease.
 */
@FunctionalInterface
public interface LeaderTask {
    /** Runs for one term; returns promptly once {@code context} says the term ended. */
    void run(LeaderContext context) throws Exception;
}
