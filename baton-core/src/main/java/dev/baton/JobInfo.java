package dev.baton;

import java.time.Instant;
import java.util.List;
import java.util.Optional;

/** A job as stored. {@code errors} holds every error of every attempt, oldest first. */
public record JobInfo(
        long id,
        String queue,
        String kind,
        String payloadJson,
        int priority,
        JobState state,
        Instant runAt,
        int attempt,
        int maxAttempts,
        Optional<String> claimedBy,
        Optional<String> concurrencyKey,
        Optional<String> idempotencyKey,
        int stallCount,
        boolean cancelRequested,
        List<JobError> errors,
        Instant createdAt,
        Optional<Instant> finishedAt) {}
