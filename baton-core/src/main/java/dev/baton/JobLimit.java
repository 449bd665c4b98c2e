package dev.baton;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * A cluster-wide limit on jobs, enforced when jobs are claimed: either at most {@code maxRunning} jobs
 * running at once, or at most {@code starts} attempts started per {@code window}. A limit applies to the
 * jobs its scope matches: a queue, a kind, or both; with a metadata key, to each distinct value of that
 * metadata entry separately ({@code perMetadata("tenant", 2)}: at most two running jobs per tenant, the
 * tenant taken from {@link JobRequest#metadata(String, String)}; jobs without the entry are not limited).
 *
 * <p>Limits are stored in the database ({@link Jobs#setLimit}, {@link Baton.Builder#jobLimit}), so every
 * node enforces the same values. A running job holds a place while its attempt lease is live on the
 * database clock: its place frees when the attempt ends, or when its lease expires, whichever comes
 * first, and not before. Claims on every node that race for the last place are serialized by the
 * database, so a limit is never exceeded by racing claimers. Rates use the same algorithm as
 * {@link RateLimiter} (GCRA): up to {@code starts} at once after a quiet spell, then one every
 * {@code window / starts}; any span of one window sees at most {@code 2 × starts − 1} starts, and long
 * runs average at most {@code starts} per window. See {@code docs/job-limits.md}.
 *
 * <p>Immutable; two limits with the same scope and kind of limit ({@link #id()}) are the same limit with
 * possibly different values: setting one replaces the other.
 */
public final class JobLimit {
    /** The largest {@code maxRunning}. */
    public static final int MAX_RUNNING_LIMIT = 1_000_000;
    /** The most starts one rate allows per window. */
    public static final int MAX_STARTS = 1_000_000;
    /** The shortest rate window. */
    public static final Duration MIN_WINDOW = Duration.ofMillis(1);
    /** The longest rate window. */
    public static final Duration MAX_WINDOW = Duration.ofDays(1);
    /** The longest kind name (as {@link JobRequest} allows). */
    private static final int MAX_KIND_LENGTH = 200;

    private final String queue;
    private final String kind;
    private final String metadataKey;
    private final int maxRunning; // 0 for a rate
    private final int starts; // 0 for a running limit
    private final Duration window;

    private JobLimit(String queue, String kind, String metadataKey, int maxRunning, int starts, Duration window) {
        this.queue = queue;
        this.kind = kind;
        this.metadataKey = metadataKey;
        this.maxRunning = maxRunning;
        this.starts = starts;
        this.window = window;
    }

    /** At most {@code maxRunning} jobs of {@code queue} running at once, cluster-wide. */
    public static JobLimit perQueue(String queue, int maxRunning) {
        return new JobLimit(JobRequest.validQueue(queue), null, null, validMax(maxRunning), 0, null);
    }

    /** At most {@code maxRunning} jobs of {@code kind} running at once, cluster-wide, in any queue. */
    public static JobLimit perKind(String kind, int maxRunning) {
        return new JobLimit(null, validKind(kind), null, validMax(maxRunning), 0, null);
    }

    /**
     * At most {@code maxRunning} jobs running at once per distinct value of the metadata entry
     * {@code key}, cluster-wide, in any queue (narrow it with {@link #inQueue} and {@link #ofKind}).
     */
    public static JobLimit perMetadata(String key, int maxRunning) {
        return new JobLimit(null, null, validKey(key), validMax(maxRunning), 0, null);
    }

    /** At most {@code starts} attempts of jobs of {@code queue} started per {@code window}, cluster-wide. */
    public static JobLimit ratePerQueue(String queue, int starts, Duration window) {
        return new JobLimit(JobRequest.validQueue(queue), null, null, 0, validStarts(starts), validWindow(window));
    }

    /** At most {@code starts} attempts of jobs of {@code kind} started per {@code window}, cluster-wide. */
    public static JobLimit ratePerKind(String kind, int starts, Duration window) {
        return new JobLimit(null, validKind(kind), null, 0, validStarts(starts), validWindow(window));
    }

    /** At most {@code starts} attempts started per {@code window} per distinct value of metadata entry {@code key}. */
    public static JobLimit ratePerMetadata(String key, int starts, Duration window) {
        return new JobLimit(null, null, validKey(key), 0, validStarts(starts), validWindow(window));
    }

    /**
     * This limit restricted to jobs of {@code queue}.
     *
     * @throws IllegalArgumentException if the limit already names a queue
     */
    public JobLimit inQueue(String queue) {
        if (this.queue != null) {
            throw new IllegalArgumentException(
                    "this limit already applies to queue '" + this.queue + "'; a limit names at most one queue");
        }
        return new JobLimit(JobRequest.validQueue(queue), kind, metadataKey, maxRunning, starts, window);
    }

    /**
     * This limit restricted to jobs of {@code kind}.
     *
     * @throws IllegalArgumentException if the limit already names a kind
     */
    public JobLimit ofKind(String kind) {
        if (this.kind != null) {
            throw new IllegalArgumentException(
                    "this limit already applies to kind '" + this.kind + "'; a limit names at most one kind");
        }
        return new JobLimit(queue, validKind(kind), metadataKey, maxRunning, starts, window);
    }

    /** The queue this limit applies to, if it names one (else any queue). */
    public Optional<String> queue() {
        return Optional.ofNullable(queue);
    }

    /** The kind this limit applies to, if it names one (else any kind). */
    public Optional<String> kind() {
        return Optional.ofNullable(kind);
    }

    /** The metadata entry whose every distinct value is limited separately, if any. */
    public Optional<String> metadataKey() {
        return Optional.ofNullable(metadataKey);
    }

    /** The most jobs running at once, for a running limit; empty for a rate. */
    public OptionalInt maxRunning() {
        return maxRunning > 0 ? OptionalInt.of(maxRunning) : OptionalInt.empty();
    }

    /** The most starts per {@link #window()}, for a rate; empty for a running limit. */
    public OptionalInt starts() {
        return starts > 0 ? OptionalInt.of(starts) : OptionalInt.empty();
    }

    /** The rate's window; empty for a running limit. */
    public Optional<Duration> window() {
        return Optional.ofNullable(window);
    }

    /** Whether this is a rate (starts per window) rather than a running limit. */
    public boolean isRate() {
        return starts > 0;
    }

    /**
     * The limit's identity: its kind of limit and scope, e.g. {@code running:queue=emails} or
     * {@code rate:kind=sync;metadata=tenant}. Values are not part of it.
     */
    public String id() {
        StringBuilder b = new StringBuilder(isRate() ? "rate:" : "running:");
        String sep = "";
        if (queue != null) {
            b.append("queue=").append(queue);
            sep = ";";
        }
        if (kind != null) {
            b.append(sep).append("kind=").append(kind);
            sep = ";";
        }
        if (metadataKey != null) {
            b.append(sep).append("metadata=").append(metadataKey);
        }
        return b.toString();
    }

    /** Rebuilds a stored limit (the store's rows passed validation when they were written). */
    static JobLimit of(
            String queue, String kind, String metadataKey, Integer maxRunning, Integer starts, Long windowMs) {
        return new JobLimit(
                queue,
                kind,
                metadataKey,
                maxRunning == null ? 0 : maxRunning,
                starts == null ? 0 : starts,
                windowMs == null ? null : Duration.ofMillis(windowMs));
    }

    private static int validMax(int maxRunning) {
        if (maxRunning < 1 || maxRunning > MAX_RUNNING_LIMIT) {
            throw new IllegalArgumentException("maxRunning must be 1 to " + MAX_RUNNING_LIMIT + ", but was "
                    + maxRunning + " (to lift a limit, remove it with Jobs.removeLimit; to stop a queue, pause it)");
        }
        return maxRunning;
    }

    private static int validStarts(int starts) {
        if (starts < 1 || starts > MAX_STARTS) {
            throw new IllegalArgumentException("starts per window must be 1 to " + MAX_STARTS + ", but was " + starts);
        }
        return starts;
    }

    private static Duration validWindow(Duration window) {
        if (window == null || window.compareTo(MIN_WINDOW) < 0 || window.compareTo(MAX_WINDOW) > 0) {
            throw new IllegalArgumentException(
                    "rate window must be " + MIN_WINDOW + " to " + MAX_WINDOW + ", but was " + window);
        }
        if (window.toNanos() % 1_000_000 != 0) {
            throw new IllegalArgumentException("rate window must be a whole number of milliseconds, but was " + window);
        }
        return window;
    }

    private static String validKind(String kind) {
        if (kind == null || kind.isEmpty() || kind.length() > MAX_KIND_LENGTH) {
            throw new IllegalArgumentException("kind must be 1 to " + MAX_KIND_LENGTH + " characters, but was "
                    + (kind == null ? "null" : kind.length() + " characters"));
        }
        return kind;
    }

    private static String validKey(String key) {
        if (key == null || key.isEmpty() || key.length() > JobRequest.MAX_METADATA_KEY_LENGTH) {
            throw new IllegalArgumentException("metadata key must be 1 to " + JobRequest.MAX_METADATA_KEY_LENGTH
                    + " characters, but was " + (key == null ? "null" : key.length() + " characters"));
        }
        return key;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof JobLimit l
                && Objects.equals(queue, l.queue)
                && Objects.equals(kind, l.kind)
                && Objects.equals(metadataKey, l.metadataKey)
                && maxRunning == l.maxRunning
                && starts == l.starts
                && Objects.equals(window, l.window);
    }

    @Override
    public int hashCode() {
        return Objects.hash(queue, kind, metadataKey, maxRunning, starts, window);
    }

    @Override
    public String toString() {
        return id() + (isRate() ? " " + starts + "/" + window : " max " + maxRunning);
    }
}
