package dev.baton;

/**
 * The SLF4J MDC keys Baton sets, so a log line written by a handler or a leader task (or by Baton on
 * their behalf) names the job or the term it belongs to. Set on the handler's thread for the whole
 * attempt (interceptors included) and removed after it; set on a leader task's thread for its term.
 * Add them to your log pattern, e.g. Logback's {@code %X{baton.job.id}}.
 */
public final class Mdc {
    /** The node running the attempt or holding the term. */
    public static final String NODE = "baton.node";
    /** The job's id. */
    public static final String JOB_ID = "baton.job.id";
    /** The job's kind. */
    public static final String JOB_KIND = "baton.job.kind";
    /** The attempt's number (1 for the first). */
    public static final String JOB_ATTEMPT = "baton.job.attempt";
    /** The job's queue. */
    public static final String JOB_QUEUE = "baton.job.queue";
    /** The lease a leader task holds. */
    public static final String LEASE = "baton.lease";
    /** The generation of the leader task's term (its fencing token). */
    public static final String GENERATION = "baton.generation";

    private Mdc() {}
}
