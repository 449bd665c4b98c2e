package dev.baton.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Runs this method on one instance at a time, under a fenced Baton lease named {@link #value()}: an
 * instance that cannot take the lease skips the call (it returns {@code null}, or zero/false for a
 * primitive). Meant for existing {@code @Scheduled} methods; the drop-in replacement of ShedLock's
 * {@code @SchedulerLock(name = ...)}:
 *
 * <pre>{@code
 * @Scheduled(fixedRate = 60_000)
 * @BatonSingleRunner("report-export")
 * void export() {
 *     SingleRunner.fenced(tx -> markExported(tx));   // rejected if another instance took over
 * }
 * }</pre>
 *
 * <p>While the method runs, the lease is renewed every third of {@link #leaseTtl()}. When it returns,
 * the lease is kept until {@link #holdAtLeast()} after the start (ShedLock's {@code lockAtLeastFor}),
 * so the other instances' ticks of the same period skip (the instance that ran may run again meanwhile:
 * it re-acquires its own lease); less than 10 ms left, it is released at once. By default the hold is
 * the method's {@code @Scheduled} period ({@code fixedRate}, {@code fixedDelay}, or the gap between the
 * next two {@code cron} instants): one run per period across all instances. When the hold ends the
 * lease is free and the first instance to tick takes it: the turn is not kept (runs move between
 * instances whenever another one's tick comes before the holder's next). A hold longer than the gap between two ticks keeps it on the
 * instance that ran while it keeps ticking. At most one authorized holder at a time; writes through
 * {@link SingleRunner#fenced} are rejected once another instance holds the lease.
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface BatonSingleRunner {
    /** The lease name, shared by every instance (like ShedLock's lock name). */
    String value();

    /** Lease TTL while the method runs, e.g. {@code 30s}; empty: {@code baton.single-runner.lease-ttl}. */
    String leaseTtl() default "";

    /** Keep the lease this long after the start, e.g. {@code 55s}; empty: the {@code @Scheduled} period, else 0. */
    String holdAtLeast() default "";
}
