package dev.baton;

import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A job as stored. {@code errors} holds every error of every attempt, oldest first; {@code metadata} what
 * was set at enqueue (see {@link JobRequest#metadata(String, String)}), empty if nothing; {@code retryPolicy}
 * the job's own backoff (see {@link JobRequest#retryPolicy(RetryPolicy)}), empty when its handler's applies.
 */
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
        Optional<Instant> finishedAt,
        Map<String, String> metadata,
        Optional<RetryPolicy> retryPolicy) {}
