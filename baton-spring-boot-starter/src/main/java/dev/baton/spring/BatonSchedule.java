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
 * {@link #queue()} (default {@value dev.baton.Baton#SWEEP_QUEUE}). Missed instants (all nodes down
 * longer than a minute): {@link #misfire()}, by default interval schedules skip them and cron schedules
 * run once. Every attribute is checked at start-up; a bad value or combination fails the start naming
 * the attribute, the bean method and the value.
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

    /**
     * What to do with missed instants: {@code skip} (drop them), {@code run-once} (run once for the latest),
     * {@code catch-up} (run the latest {@link #catchUp()} of them, oldest first). Empty: {@code skip} for
     * {@link #every()}, {@code run-once} for {@link #cron()}; with {@link #catchUp()} set, {@code catch-up}.
     */
    String misfire() default "";

    /** With {@code misfire = "catch-up"}: how many missed runs to catch up, 1 to 1000; 0 (default): unset. */
    int catchUp() default 0;

    /** Whether a run may start while the previous one still runs; default false (one at a time). */
    boolean allowOverlap() default false;

    /** Queue of the schedule's jobs; empty: {@value dev.baton.Baton#SWEEP_QUEUE}. Placeholders are resolved. */
    String queue() default "";

    /** Attempts per run, 1 to 1000; 0 (default): 3. */
    int maxAttempts() default 0;
}
