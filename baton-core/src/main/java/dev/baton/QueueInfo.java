package dev.baton;

import java.time.Duration;

/**
 * One queue as an operator sees it ({@link Admin#queues()}): its depth ({@link QueueStats}) and its lag.
 *
 * @param stats the available and running jobs, the due time of the oldest available one, and whether the
 *              queue is paused
 * @param lag   how long the oldest due available job has waited past its run-at, on the database clock
 *              ({@link Duration#ZERO} when no available job is due)
 */
public record QueueInfo(QueueStats stats, Duration lag) {}
