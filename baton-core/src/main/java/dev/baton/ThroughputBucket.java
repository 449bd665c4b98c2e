package dev.baton;

import java.time.Duration;
import java.time.Instant;

/**
 * The jobs that finished in one interval {@code [start, start + length)} of the database clock, by how they
 * ended ({@link Admin#throughput}).
 *
 * @param start  the bucket's start, a multiple of its length since the epoch
 * @param length the bucket's length
 */
public record ThroughputBucket(Instant start, Duration length, long succeeded, long failed, long cancelled) {}
