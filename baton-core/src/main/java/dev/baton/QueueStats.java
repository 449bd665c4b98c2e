package dev.baton;

import java.time.Instant;
import java.util.Optional;

/**
 * The depth of one queue: its available and running jobs. Read on the partial indexes of unfinished
 * jobs, so it stays cheap however many finished jobs are kept (see {@link Jobs#finishedStats()} for those).
 *
 * @param oldestAvailableRunAt the due time of the oldest available job (how far behind the queue is)
 */
public record QueueStats(
        String queue, long available, long running, Optional<Instant> oldestAvailableRunAt, boolean paused) {}
