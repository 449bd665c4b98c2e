package dev.baton.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Declares a durable recurring Baton schedule that runs this bean method: once per due instant across
 * all instances (one job per instant, run at least once), surviving restarts, visible in
 * {@code baton.schedules().list(null, 100)} and {@code baton status}. Exactly one of {@link #cron()} or {@link #every()} must be set.
 *
 * <pre>{@code
 * @BatonSchedule(name = "purge-sessions", every = "10m")
 * void purge() { sessions.deleteExpired(); }
 *
 * @BatonSchedule(name = "close-day", cron = "0 3 * * *", zone = "Europe/Berlin")
 * void closeDay(JobContext ctx) { ... }
 * }</pre>
 *
 * <p>The method takes no arguments or a {@link dev.baton.JobContext}. Its job runs on queue
 * {@value dev.baton.Baton#SWEEP_QUEUE}. Interval schedules skip missed intervals; cron schedules run
 * once for a missed period.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface BatonSchedule {
    /** The schedule's name, unique within the application. */
    String name();

    /** A cron expression with 5 fields (Unix) or 6 (seconds first). Placeholders ({@code ${...}}) are resolved. */
    String cron() default "";

    /** Time zone of {@link #cron()}; default UTC. */
    String zone() default "UTC";

    /** A fixed interval aligned to the epoch, e.g. {@code 30s}, {@code 10m}, {@code PT1H}. Placeholders are resolved. */
    String every() default "";
}
