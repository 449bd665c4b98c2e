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
 */
@Target({ElementType.METHOD, ElementType.TYPE})
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface BatonJob {
    /** The job kind. */
    String value();

    /** First retry delay (e.g. {@code 5s}); empty: Baton's default policy (1 s doubling to 1 h, with jitter). */
    String backoff() default "";

    /** Longest retry delay when {@link #backoff()} is set (default 30m). */
    String maxBackoff() default "30m";
}
