package dev.baton;

import java.time.Instant;

/**
 * One error of one attempt, as kept on the job.
 *
 * @param errorClass the exception class, or {@code stalled} for an attempt whose lease expired
 */
public record JobError(int attempt, String node, Instant at, String errorClass, String message, String stack) {}
