package dev.baton;

import java.time.Duration;

/**
 * The answer of a {@link RateLimiter}.
 *
 * @param allowed    whether the request may go ahead
 * @param retryAfter when denied, how long until a request would be allowed (zero when allowed)
 * @param fallback   true if the in-process fallback decided because the database was unreachable
 */
public record RateDecision(boolean allowed, Duration retryAfter, boolean fallback) {}
