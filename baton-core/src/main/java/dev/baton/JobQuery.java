package dev.baton;

import dev.baton.internal.db.Identifiers;
import java.time.Instant;
import java.util.Collections;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * Which jobs an operator looks at or acts on ({@link Admin#searchJobs}, {@link Admin#cancelJobs(JobQuery)}
 * and the other bulk actions): an immutable value built from {@link #all()} with the setters below, each of
 * which validates its value at once, names what is wrong and returns a new query. Every filter set must
 * hold (they combine with AND); a filter not set matches every job.
 *
 * <pre>{@code
 * JobQuery.all().states(JobState.FAILED).queue("mail").errorContains("timeout").pageSize(100);
 * }</pre>
 */
public final class JobQuery {
    /** The most jobs one page of {@link Admin#searchJobs} holds ({@link Page#MAX_LIMIT}). */
    public static final int MAX_PAGE_SIZE = Page.MAX_LIMIT;
    /** The page size of a query that sets none: a screenful. */
    public static final int DEFAULT_PAGE_SIZE = 50;
    /** The longest text {@link #errorContains} takes. */
    public static final int MAX_ERROR_TEXT_LENGTH = 200;

    private static final JobQuery ALL =
            new JobQuery(Set.of(), null, null, null, null, null, null, null, DEFAULT_PAGE_SIZE);

    private final Set<JobState> states;
    private final String queue;
    private final String kind;
    private final Instant createdFrom;
    private final Instant createdTo;
    private final String errorContains;
    private final String concurrencyKey;
    private final String idempotencyKey;
    private final int pageSize;

    private JobQuery(
            Set<JobState> states,
            String queue,
            String kind,
            Instant createdFrom,
            Instant createdTo,
            String errorContains,
            String concurrencyKey,
            String idempotencyKey,
            int pageSize) {
        this.states = states;
        this.queue = queue;
        this.kind = kind;
        this.createdFrom = createdFrom;
        this.createdTo = createdTo;
        this.errorContains = errorContains;
        this.concurrencyKey = concurrencyKey;
        this.idempotencyKey = idempotencyKey;
        this.pageSize = pageSize;
    }

    /** Every job, {@value #DEFAULT_PAGE_SIZE} to a page. */
    public static JobQuery all() {
        return ALL;
    }

    /** Only jobs in one of {@code states} (at least one, none null); replaces any states set before. */
    public JobQuery states(JobState... states) {
        if (states == null || states.length == 0) {
            throw new IllegalArgumentException(
                    "states must name at least one of " + EnumSet.allOf(JobState.class) + ", but "
                            + (states == null ? "was null" : "named none") + " (leave states unset for every state)");
        }
        EnumSet<JobState> set = EnumSet.noneOf(JobState.class);
        for (int i = 0; i < states.length; i++) {
            if (states[i] == null) {
                throw new IllegalArgumentException("states must not contain null, but state " + i + " of "
                        + states.length + " was null; allowed: " + EnumSet.allOf(JobState.class));
            }
            set.add(states[i]);
        }
        return new JobQuery(
                Collections.unmodifiableSet(set),
                queue,
                kind,
                createdFrom,
                createdTo,
                errorContains,
                concurrencyKey,
                idempotencyKey,
                pageSize);
    }

    /** Only jobs of {@code queue} (see {@link JobRequest#QUEUE_NAME}). */
    public JobQuery queue(String queue) {
        JobRequest.validQueue(queue);
        return new JobQuery(
                states, queue, kind, createdFrom, createdTo, errorContains, concurrencyKey, idempotencyKey, pageSize);
    }

    /** Only jobs of {@code kind} (1 to 200 characters). */
    public JobQuery kind(String kind) {
        Identifiers.name("job kind", kind);
        return new JobQuery(
                states, queue, kind, createdFrom, createdTo, errorContains, concurrencyKey, idempotencyKey, pageSize);
    }

    /**
     * Only jobs enqueued at or after {@code from} (their {@link JobInfo#createdAt()}, database clock); must be
     * before {@link #createdTo} if that is set.
     */
    public JobQuery createdFrom(Instant from) {
        if (from == null) {
            throw new IllegalArgumentException("createdFrom must be an instant, but was null");
        }
        requireOrder(from, createdTo);
        return new JobQuery(
                states, queue, kind, from, createdTo, errorContains, concurrencyKey, idempotencyKey, pageSize);
    }

    /**
     * Only jobs enqueued before {@code to} (exclusive; database clock); must be after {@link #createdFrom} if
     * that is set.
     */
    public JobQuery createdTo(Instant to) {
        if (to == null) {
            throw new IllegalArgumentException("createdTo must be an instant, but was null");
        }
        requireOrder(createdFrom, to);
        return new JobQuery(
                states, queue, kind, createdFrom, to, errorContains, concurrencyKey, idempotencyKey, pageSize);
    }

    private static void requireOrder(Instant from, Instant to) {
        if (from != null && to != null && !from.isBefore(to)) {
            throw new IllegalArgumentException(
                    "createdFrom (" + from + ") must be before createdTo (" + to + "): the range is [from, to)");
        }
    }

    /**
     * Only jobs with an attempt whose error message or class contains {@code text}, ignoring case; the text
     * is matched as it is ({@code %} and {@code _} are not wildcards). 1 to {@value #MAX_ERROR_TEXT_LENGTH}
     * characters.
     */
    public JobQuery errorContains(String text) {
        if (text == null || text.isEmpty() || text.length() > MAX_ERROR_TEXT_LENGTH) {
            throw new IllegalArgumentException("errorContains must be 1 to " + MAX_ERROR_TEXT_LENGTH
                    + " characters of text to find in an attempt's error, but was "
                    + (text == null ? "null" : text.isEmpty() ? "empty" : text.length() + " characters"));
        }
        return new JobQuery(
                states, queue, kind, createdFrom, createdTo, text, concurrencyKey, idempotencyKey, pageSize);
    }

    /** Only jobs with this concurrency key (1 to 200 characters). */
    public JobQuery concurrencyKey(String key) {
        Identifiers.name("concurrencyKey", key);
        return new JobQuery(states, queue, kind, createdFrom, createdTo, errorContains, key, idempotencyKey, pageSize);
    }

    /** Only the job with this idempotency key (1 to 200 characters). */
    public JobQuery idempotencyKey(String key) {
        Identifiers.name("idempotencyKey", key);
        return new JobQuery(states, queue, kind, createdFrom, createdTo, errorContains, concurrencyKey, key, pageSize);
    }

    /**
     * How many jobs one page of {@link Admin#searchJobs} holds: 1 to {@value #MAX_PAGE_SIZE}; default
     * {@value #DEFAULT_PAGE_SIZE}. Bulk actions by query ignore it (see {@link Admin#MAX_BULK}).
     */
    public JobQuery pageSize(int size) {
        if (size < 1 || size > MAX_PAGE_SIZE) {
            throw new IllegalArgumentException("pageSize must be 1 to " + MAX_PAGE_SIZE + ", but was " + size);
        }
        return new JobQuery(
                states, queue, kind, createdFrom, createdTo, errorContains, concurrencyKey, idempotencyKey, size);
    }

    /** The states asked for (unmodifiable); empty: every state. */
    public Set<JobState> states() {
        return states;
    }

    /** The queue asked for, if any. */
    public Optional<String> queue() {
        return Optional.ofNullable(queue);
    }

    /** The kind asked for, if any. */
    public Optional<String> kind() {
        return Optional.ofNullable(kind);
    }

    /** The inclusive start of the enqueue-time range, if any. */
    public Optional<Instant> createdFrom() {
        return Optional.ofNullable(createdFrom);
    }

    /** The exclusive end of the enqueue-time range, if any. */
    public Optional<Instant> createdTo() {
        return Optional.ofNullable(createdTo);
    }

    /** The error text asked for, if any. */
    public Optional<String> errorContains() {
        return Optional.ofNullable(errorContains);
    }

    /** The concurrency key asked for, if any. */
    public Optional<String> concurrencyKey() {
        return Optional.ofNullable(concurrencyKey);
    }

    /** The idempotency key asked for, if any. */
    public Optional<String> idempotencyKey() {
        return Optional.ofNullable(idempotencyKey);
    }

    /** How many jobs one page holds. */
    public int pageSize() {
        return pageSize;
    }

    /** Equal when every filter and the page size are equal. */
    @Override
    public boolean equals(Object o) {
        return o instanceof JobQuery q
                && states.equals(q.states)
                && Objects.equals(queue, q.queue)
                && Objects.equals(kind, q.kind)
                && Objects.equals(createdFrom, q.createdFrom)
                && Objects.equals(createdTo, q.createdTo)
                && Objects.equals(errorContains, q.errorContains)
                && Objects.equals(concurrencyKey, q.concurrencyKey)
                && Objects.equals(idempotencyKey, q.idempotencyKey)
                && pageSize == q.pageSize;
    }

    /** Consistent with {@link #equals}. */
    @Override
    public int hashCode() {
        return Objects.hash(
                states, queue, kind, createdFrom, createdTo, errorContains, concurrencyKey, idempotencyKey, pageSize);
    }

    /** The filters set, for logs and audit trails. */
    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder("JobQuery{");
        if (!states.isEmpty()) {
            sb.append("states=").append(states).append(", ");
        }
        append(sb, "queue", queue);
        append(sb, "kind", kind);
        append(sb, "createdFrom", createdFrom);
        append(sb, "createdTo", createdTo);
        append(sb, "errorContains", errorContains);
        append(sb, "concurrencyKey", concurrencyKey);
        append(sb, "idempotencyKey", idempotencyKey);
        return sb.append("pageSize=").append(pageSize).append('}').toString();
    }

    private static void append(StringBuilder sb, String name, Object value) {
        if (value != null) {
            sb.append(name).append('=').append(value).append(", ");
        }
    }
}
