package dev.baton.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Makes a bean method (or a bean implementing {@link dev.baton.JobHandler}) the handler of a job kind.
 *
 * <pre>{@code
 * @Component
 * class Mails {
 *     @BatonJob("email.welcome")
 *     void welcome(Welcome job, JobContext ctx) { mailer.send(job.userId(), ctx.idempotencyKey()); }
 * }
 * }</pre>
 *
 * <p>The method takes the payload (decoded from JSON into the parameter's type) and optionally a
 * {@link dev.baton.JobContext}, in that order, or only the context. Jobs run at least once: make the
 * handler idempotent. Throwing retries with the backoff; {@link dev.baton.JobHandler.PermanentFailure}
 * fails the job at once. The bean is looked up when a job runs, so it may itself inject {@code Baton}.
 *
 * <p>{@link #queue()}, {@link #maxAttempts()} and {@link #timeout()} are defaults of the kind's jobs
 * <em>enqueued through this application's Baton</em> ({@code baton.jobs().enqueue(...)}): a
 * {@link dev.baton.JobRequest} that sets its own value wins. The retry attributes apply where the job
 * runs. Every attribute is checked at start-up; a bad value fails the start naming the attribute, the
 * bean method and the value. String attributes resolve placeholders ({@code ${...}}). The queue is
 * added to this node's worker (concurrency 10) unless {@code baton.worker.queues} is set.
 */
@Target({ElementType.METHOD, ElementType.TYPE})
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface BatonJob {
    /** The job kind. */
    String value();

    /** Queue of the kind's jobs, e.g. {@code mail}; empty: the request's, else {@code default}. */
    String queue() default "";

    /** Attempts in all, 1 to 1000; 0 (the default): the request's, else 25. */
    int maxAttempts() default 0;

    /** How long one attempt may run before it is cancelled (and retried), e.g. {@code 5m}; empty: none. */
    String timeout() default "";

    /** First retry delay, e.g. {@code 5s}; empty: 1s. */
    String backoff() default "";

    /** Factor the delay grows by per attempt, 1 to 100, e.g. {@code 1.5}; empty: 2. */
    String multiplier() default "";

    /** Longest retry delay, at least {@link #backoff()}; empty: 1h. */
    String maxBackoff() default "";

    /** Random variance of each delay, a fraction from 0 to below 1 ({@code 0.2}) or a percentage ({@code 20%}); empty: 20%. */
    String jitter() default "";
}
