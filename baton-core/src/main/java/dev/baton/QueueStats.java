package dev.baton;

import java.time.Instant;
import java.util.Optional;

/**
 * Jobs of one queue by state.
 *
 * @param oldestAvailableRunAt the due time of the oldest available job (how far behind the queue is)
 */
public record QueueStats(String queue, long available, long running, long succeeded, long failed, long cancelled,
                         Optional<Instant> oldestAvailableRunAt, boolean paused) {}
