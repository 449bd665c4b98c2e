package dev.baton;

import dev.baton.internal.db.Identifiers;
import dev.baton.internal.job.JobStore;
import java.time.Duration;
import java.time.Instant;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.regex.Pattern;

/**
 * A job to enqueue: an immutable value built with {@link #of(String, Object)} and the {@code with…}
 * methods. Each setter validates its value at once and names what is wrong.
 *
 * <pre>{@code
 * JobRequest.of("email.send", new Email(to, subject))
 *         .queue("mail").priority(10).delay(Duration.ofMinutes(5))
 *         .maxAttempts(5).idempotencyKey("welcome:" + userId);
 * }</pre>
 */
public final class JobRequest {
    /** Queue names: lower-case letters, digits, '_', '.', '-'; up to 63 characters. */
    public static final Pattern QUEUE_NAME = Pattern.compile("[a-z0-9][a-z0-9_.-]{0,62}");

    /** The queue of a request that names none. */
    public static final String DEFAULT_QUEUE = "default";
    /** Priorities run from 0 (first) to 100 (last). */
    public static final int MIN_PRIORITY = 0;

    /** The lowest priority (runs last). */
    public static final int MAX_PRIORITY = 100;
    /** The priority of a request that names none: the middle of the range. */
    public static final int DEFAULT_PRIORITY = 50;
    /** 25 attempts with the default backoff span about a day and a half. */
    public static final int DEFAULT_MAX_ATTEMPTS = 25;

    /** The longest metadata key. */
    public static final int MAX_METADATA_KEY_LENGTH = 100;
    /** The longest metadata value. */
    public static final int MAX_METADATA_VALUE_LENGTH = 2000;
    /** The most metadata entries one job carries. */
    public static final int MAX_METADATA_ENTRIES = 32;

    /** The most attempts a job may be given. */
    public static final int MAX_ATTEMPTS_LIMIT = 1000;

    /**
     * The earliest run-at instant a request may name (any instant passed means "due now"). The range is one every
     * enqueue path stores as given: the JDBC driver converts instants before the Gregorian calendar (1582) by
     * the Julian one, and a year above 9999 is not ISO 8601's basic form.
     */
    public static final Instant EARLIEST_RUN_AT = Instant.EPOCH;
    /** The latest run-at instant a request may name. */
    public static final Instant LATEST_RUN_AT = Instant.parse("9999-12-31T23:59:59.999999Z");

    final String kind;
    final Object payload;
    /** Null while the request names no queue: the kind's {@link JobDefaults}, else {@link #DEFAULT_QUEUE}. */
    final String queue;

    final int priority;
    final Instant runAt;
    final Duration delay;
    /** 0 while the request sets none: the kind's {@link JobDefaults}, else {@link #DEFAULT_MAX_ATTEMPTS}. */
    final int maxAttempts;
    /** Null while the request sets none: the kind's {@link JobDefaults}, else no timeout. */
    final Duration timeout;

    final String idempotencyKey;
    final String concurrencyKey;
    /** How jobs of the concurrency key are ordered; {@link KeyOrder#ANY} unless set. */
    final KeyOrder keyOrder;
    /** Unmodifiable, in insertion order; empty unless set. */
    final Map<String, String> metadata;
    /** Uniqueness and the per-job retry policy; {@link Options#NONE} unless set. */
    final Options options;

    private JobRequest(Draft d) {
        this.kind = d.kind;
        this.payload = d.payload;
        this.queue = d.queue;
        this.priority = d.priority;
        this.runAt = d.runAt;
        this.delay = d.delay;
        this.maxAttempts = d.maxAttempts;
        this.timeout = d.timeout;
        this.idempotencyKey = d.idempotencyKey;
        this.concurrencyKey = d.concurrencyKey;
        this.keyOrder = d.keyOrder;
        this.metadata = d.metadata;
        this.options = d.options;
    }

    /** The fields of a request being derived from another: every setter copies, changes one thing, builds. */
    private static final class Draft {
        String kind;
        Object payload;
        String queue;
        int priority = DEFAULT_PRIORITY;
        Instant runAt;
        Duration delay = Duration.ZERO;
        int maxAttempts;
        Duration timeout;
        String idempotencyKey;
        String concurrencyKey;
        KeyOrder keyOrder = KeyOrder.ANY;
        Map<String, String> metadata = Map.of();
        Options options = Options.NONE;
    }

    /** This request with {@code change} applied to a copy of its fields. */
    private JobRequest with(Consumer<Draft> change) {
        Draft d = new Draft();
        d.kind = kind;
        d.payload = payload;
        d.queue = queue;
        d.priority = priority;
        d.runAt = runAt;
        d.delay = delay;
        d.maxAttempts = maxAttempts;
        d.timeout = timeout;
        d.idempotencyKey = idempotencyKey;
        d.concurrencyKey = concurrencyKey;
        d.keyOrder = keyOrder;
        d.metadata = metadata;
        d.options = options;
        change.accept(d);
        return new JobRequest(d);
    }

    /** A job of {@code kind} (1 to 200 characters) with a payload the codec can encode (may be null). */
    public static JobRequest of(String kind, Object payload) {
        Identifiers.name("job kind", kind);
        Draft d = new Draft();
        d.kind = kind;
        d.payload = payload;
        return new JobRequest(d);
    }

    /** This request on {@code queue} (see {@link #QUEUE_NAME}); default: the kind's {@link JobDefaults}, else {@value #DEFAULT_QUEUE}. */
    public JobRequest queue(String queue) {
        return with(d -> d.queue = validQueue(queue));
    }

    /** 0 (runs first) to 100 (runs last); default 50. */
    public JobRequest priority(int priority) {
        if (priority < MIN_PRIORITY || priority > MAX_PRIORITY) {
            throw new IllegalArgumentException("priority must be between " + MIN_PRIORITY + " (first) and "
                    + MAX_PRIORITY + " (last), but was " + priority);
        }
        return with(d -> d.priority = priority);
    }

    /**
     * Not before this instant (compared with the database clock), from {@link #EARLIEST_RUN_AT} (1970) to
     * {@link #LATEST_RUN_AT} (the end of 9999). Replaces any delay.
     */
    public JobRequest runAt(Instant runAt) {
        Objects.requireNonNull(runAt, "runAt");
        if (runAt.isBefore(EARLIEST_RUN_AT) || runAt.isAfter(LATEST_RUN_AT)) {
            throw new IllegalArgumentException(
                    "runAt must be between " + EARLIEST_RUN_AT + " and " + LATEST_RUN_AT + ", but was " + runAt);
        }
        return with(d -> {
            d.runAt = runAt;
            d.delay = Duration.ZERO;
        });
    }

    /** Not before this long after enqueue, on the database clock. Replaces any run-at. */
    public JobRequest delay(Duration delay) {
        Checks.requirePositive("delay", delay, true);
        return with(d -> {
            d.runAt = null;
            d.delay = delay;
        });
    }

    /** How many attempts in all (1 to 1000); default: the kind's {@link JobDefaults}, else 25. */
    public JobRequest maxAttempts(int maxAttempts) {
        validMaxAttempts(maxAttempts);
        return with(d -> d.maxAttempts = maxAttempts);
    }

    /**
     * The handler is cancelled after this long; the attempt then fails (and may be retried). Default: the
     * kind's {@link JobDefaults}, else none.
     */
    public JobRequest timeout(Duration timeout) {
        Checks.requirePositive("timeout", timeout, false);
        return with(d -> d.timeout = timeout);
    }

    /**
     * At most one job per key while the job is retained: enqueueing a duplicate returns the existing
     * job instead of creating a second one. 1 to 200 characters.
     */
    public JobRequest idempotencyKey(String key) {
        return with(d -> d.idempotencyKey = Identifiers.name("idempotencyKey", key));
    }

    /**
     * At most one job with this key runs at a time, across all nodes; among its ready jobs any may run
     * next. 1 to 200 characters. Same as {@code concurrencyKey(key, KeyOrder.ANY)}.
     */
    public JobRequest concurrencyKey(String key) {
        return concurrencyKey(key, KeyOrder.ANY);
    }

    /**
     * At most one job with this key runs at a time, across all nodes, in the given order:
     * {@link KeyOrder#FIFO} runs the key's jobs one after the other in enqueue order, a job waiting for
     * its retry, its snooze or its run-at holding back every newer job of its key. 1 to 200 characters.
     */
    public JobRequest concurrencyKey(String key, KeyOrder order) {
        Identifiers.name("concurrencyKey", key);
        if (order == null) {
            throw new IllegalArgumentException("key order must be KeyOrder.ANY or KeyOrder.FIFO, but was null");
        }
        return with(d -> {
            d.concurrencyKey = key;
            d.keyOrder = order;
        });
    }

    /** How the jobs of this request's concurrency key are ordered ({@link KeyOrder#ANY} unless set). */
    public KeyOrder keyOrder() {
        return keyOrder;
    }

    /**
     * This request with one more metadata entry (replacing any value the key had): a string the job
     * carries from enqueue to every attempt, read with {@link JobContext#metadata()} and shown by
     * {@link JobInfo#metadata()}. For what travels with a job but is not its payload: trace context,
     * tenant, who enqueued it. Keys: 1 to {@value #MAX_METADATA_KEY_LENGTH} characters; values: at most
     * {@value #MAX_METADATA_VALUE_LENGTH} characters; at most {@value #MAX_METADATA_ENTRIES} entries.
     */
    public JobRequest metadata(String key, String value) {
        if (key == null || key.isEmpty() || key.length() > MAX_METADATA_KEY_LENGTH) {
            throw new IllegalArgumentException("metadata key must be 1 to " + MAX_METADATA_KEY_LENGTH
                    + " characters, but was " + (key == null ? "null" : key.length() + " characters"));
        }
        if (value == null || value.length() > MAX_METADATA_VALUE_LENGTH) {
            throw new IllegalArgumentException("metadata value of '" + key + "' must be a string of at most "
                    + MAX_METADATA_VALUE_LENGTH + " characters, but was "
                    + (value == null ? "null" : value.length() + " characters"));
        }
        Map<String, String> more = new LinkedHashMap<>(metadata);
        more.put(key, value);
        if (more.size() > MAX_METADATA_ENTRIES) {
            throw new IllegalArgumentException("a job carries at most " + MAX_METADATA_ENTRIES
                    + " metadata entries; adding '" + key + "' would make " + more.size());
        }
        return with(d -> d.metadata = Collections.unmodifiableMap(more));
    }

    /**
     * At most one job per {@code key} within the {@code uniqueness}'s scope (while available, while available or
     * running, or within a time window); a duplicate enqueue returns the existing job, replaces a waiting
     * job's payload and run-at, or is rejected, as {@link Uniqueness#onConflict} chose. Honoured by every
     * enqueue: alone, in a batch (where a later request with the key sees an earlier one), and on the
     * caller's transaction (which must then be open: the key stays locked until it ends). Independent of
     * {@link #idempotencyKey(String)}. Keys: 1 to 200 characters.
     */
    public JobRequest unique(String key, Uniqueness uniqueness) {
        Identifiers.name("uniqueness key", key);
        if (uniqueness == null) {
            throw new IllegalArgumentException("uniqueness must be set (Uniqueness.whileAvailable(), "
                    + "whileAvailableOrRunning() or within(window)), but was null");
        }
        return withOptions(new Options(key, uniqueness, options.retryPolicy()));
    }

    /**
     * The backoff between this job's attempts, used instead of its handler's
     * ({@link Baton.Builder#handle(String, Class, JobHandler, RetryPolicy)}) policy; shown by {@link JobInfo#retryPolicy()}. A node of a
     * version before this option ignores it and uses the handler's policy.
     */
    public JobRequest retryPolicy(RetryPolicy policy) {
        if (policy == null) {
            throw new IllegalArgumentException(
                    "retryPolicy must be set (e.g. RetryPolicy.exponential(base, max)), " + "but was null");
        }
        return withOptions(new Options(options.uniqueKey(), options.uniqueness(), policy));
    }

    /** The uniqueness key set with {@link #unique}, or null. */
    public String uniqueKey() {
        return options.uniqueKey();
    }

    /** The uniqueness set with {@link #unique}, or null. */
    public Uniqueness uniqueness() {
        return options.uniqueness();
    }

    /** The per-job retry policy set with {@link #retryPolicy}, or null (the handler's applies). */
    public RetryPolicy retryPolicyOrNull() {
        return options.retryPolicy();
    }

    /** Options most jobs never set, kept together so the common path carries one shared empty value. */
    record Options(String uniqueKey, Uniqueness uniqueness, RetryPolicy retryPolicy) {
        static final Options NONE = new Options(null, null, null);
    }

    private JobRequest withOptions(Options o) {
        return with(d -> d.options = o);
    }

    /** This request's metadata (unmodifiable; empty unless set with {@link #metadata(String, String)}). */
    public Map<String, String> metadata() {
        return metadata;
    }

    /** The job kind this request enqueues. */
    public String kind() {
        return kind;
    }

    /** The queue this request names, else {@value #DEFAULT_QUEUE} (a kind's {@link JobDefaults} apply at enqueue). */
    public String queueName() {
        return queue != null ? queue : DEFAULT_QUEUE;
    }

    /** This request with the kind's defaults filling in the queue, max attempts and timeout it leaves unset. */
    JobRequest withDefaults(JobDefaults defaults) {
        if (defaults == null) {
            return this;
        }
        return with(d -> {
            d.queue = queue != null ? queue : defaults.queue();
            d.maxAttempts = maxAttempts != 0 ? maxAttempts : defaults.maxAttempts();
            d.timeout = timeout != null ? timeout : defaults.timeout();
        });
    }

    static int validMaxAttempts(int maxAttempts) {
        if (maxAttempts < 1 || maxAttempts > MAX_ATTEMPTS_LIMIT) {
            throw new IllegalArgumentException(
                    "maxAttempts must be between 1 and " + MAX_ATTEMPTS_LIMIT + ", but was " + maxAttempts);
        }
        return maxAttempts;
    }

    static String validQueue(String queue) {
        if (queue == null || !QUEUE_NAME.matcher(queue).matches()) {
            throw new IllegalArgumentException("queue must match " + QUEUE_NAME.pattern() + " (lower-case letters, "
                    + "digits, '_', '.', '-'; at most 63 characters), but was "
                    + (queue == null ? "null" : "'" + queue + "'"));
        }
        return queue;
    }

    /** This request with its payload encoded, as the job store takes it. */
    JobStore.Encoded encoded(String payloadJson, String metadataJson) {
        return new JobStore.Encoded(
                queueName(),
                kind,
                payloadJson,
                priority,
                runAt,
                delay,
                maxAttempts != 0 ? maxAttempts : DEFAULT_MAX_ATTEMPTS,
                timeout,
                concurrencyKey,
                idempotencyKey,
                metadataJson,
                options.uniqueKey() == null ? null : JobStore.Unique.of(options.uniqueKey(), options.uniqueness()),
                keyOrder == KeyOrder.FIFO);
    }
}
