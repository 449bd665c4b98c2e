package dev.baton.test;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Predicate;

/**
 * Assertions on the jobs waiting in a schema (see {@link EnqueuedJobs}: state {@code available}, due now
 * or later). A failure lists what <em>was</em> enqueued of the kind asserted on (payload JSON, queue, run
 * time, id), so a failing test explains itself.
 *
 * <pre>{@code
 * EnqueuedJobs jobs = EnqueuedJobs.of(baton);
 * orders.place(7);
 * assertEnqueued(jobs, "receipt.send", Receipt.class, r -> r.orderId() == 7);
 * assertNotEnqueued(jobs, "refund.issue");
 * }</pre>
 */
public final class BatonAssertions {
    private BatonAssertions() {}

    /**
     * Asserts that at least one job of {@code kind} is enqueued whose payload, decoded as {@code type},
     * matches {@code matching}; returns the matching jobs' payloads, in due order.
     *
     * @throws AssertionError if none matches (the message lists the enqueued jobs of {@code kind}), or a
     *                        payload of that kind cannot be decoded as {@code type}
     */
    public static <T> List<T> assertEnqueued(
            EnqueuedJobs jobs, String kind, Class<T> type, Predicate<? super T> matching) {
        Objects.requireNonNull(matching, "matching");
        List<EnqueuedJob> all = jobs.list(kind);
        List<T> matched = new ArrayList<>();
        for (EnqueuedJob j : all) {
            T payload = jobs.payload(j, type);
            if (matching.test(payload)) {
                matched.add(payload);
            }
        }
        if (matched.isEmpty()) {
            throw new AssertionError("expected a job of kind '" + kind + "' with a matching " + type.getSimpleName()
                    + " payload to be enqueued in schema '" + jobs.schema() + "', but " + listing(kind, all));
        }
        return matched;
    }

    /**
     * Asserts that at least one job of {@code kind} is enqueued; returns them, in due order.
     *
     * @throws AssertionError if none is
     */
    public static List<EnqueuedJob> assertEnqueued(EnqueuedJobs jobs, String kind) {
        List<EnqueuedJob> all = jobs.list(kind);
        if (all.isEmpty()) {
            throw new AssertionError("expected a job of kind '" + kind + "' to be enqueued in schema '" + jobs.schema()
                    + "', but none was");
        }
        return all;
    }

    /**
     * Asserts that no enqueued job of {@code kind} has a payload, decoded as {@code type}, that matches
     * {@code matching}.
     *
     * @throws AssertionError if one does (the message lists the matching jobs)
     */
    public static <T> void assertNotEnqueued(
            EnqueuedJobs jobs, String kind, Class<T> type, Predicate<? super T> matching) {
        Objects.requireNonNull(matching, "matching");
        List<EnqueuedJob> found = new ArrayList<>();
        for (EnqueuedJob j : jobs.list(kind)) {
            if (matching.test(jobs.payload(j, type))) {
                found.add(j);
            }
        }
        if (!found.isEmpty()) {
            throw new AssertionError("expected no job of kind '" + kind + "' with a matching " + type.getSimpleName()
                    + " payload to be enqueued in schema '" + jobs.schema() + "', but " + lines(found));
        }
    }

    /**
     * Asserts that no job of {@code kind} is enqueued.
     *
     * @throws AssertionError if one is (the message lists them)
     */
    public static void assertNotEnqueued(EnqueuedJobs jobs, String kind) {
        List<EnqueuedJob> all = jobs.list(kind);
        if (!all.isEmpty()) {
            throw new AssertionError("expected no job of kind '" + kind + "' to be enqueued in schema '" + jobs.schema()
                    + "', but " + lines(all));
        }
    }

    /** The payloads of the enqueued jobs of {@code kind}, decoded as {@code type}, in due order. */
    public static <T> List<T> enqueued(EnqueuedJobs jobs, String kind, Class<T> type) {
        List<T> out = new ArrayList<>();
        for (EnqueuedJob j : jobs.list(kind)) {
            out.add(jobs.payload(j, type));
        }
        return out;
    }

    private static String listing(String kind, List<EnqueuedJob> all) {
        if (all.isEmpty()) {
            return "no job of that kind was enqueued";
        }
        return "none matched; enqueued of kind '" + kind + "': " + lines(all);
    }

    private static String lines(List<EnqueuedJob> jobs) {
        StringBuilder b = new StringBuilder(jobs.size() + (jobs.size() == 1 ? " job" : " jobs") + ":");
        for (EnqueuedJob j : jobs) {
            b.append("\n  ").append(j.describe());
        }
        return b.toString();
    }
}
