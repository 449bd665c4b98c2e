package dev.baton.spring;

import dev.baton.Baton;
import dev.baton.LeaseGrant;
import dev.baton.LeaseLostException;
import dev.baton.Leases;
import java.lang.reflect.Method;
import java.time.Duration;
import java.time.ZonedDateTime;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.scheduling.support.CronExpression;
import org.springframework.util.StringValueResolver;

/**
 * Runs a {@link BatonSingleRunner} method only under its lease: take it (or skip the call), renew it
 * while the method runs, then keep it until the hold ends or release it.
 */
final class SingleRunnerInterceptor implements MethodInterceptor {
    private static final Logger log = LoggerFactory.getLogger(SingleRunnerInterceptor.class);

    /** A method's lease settings, resolved once. */
    record Spec(String name, Duration leaseTtl, Duration holdAtLeast) {}

    private final Supplier<Baton> baton;
    private final Supplier<Duration> defaultTtl;
    private final StringValueResolver resolver;
    private final Supplier<String> defaultTtlWritten;
    private final Map<Method, Spec> specs = new ConcurrentHashMap<>();
    /** One call per name at a time on this node (the lease is per node, not per thread). */
    private final Map<String, ReentrantLock> local = new ConcurrentHashMap<>();
    /**
     * This node's acquisition per name, used only under that name's local lock: a run may take the lease
     * again while its previous run's hold lasts (it keeps its turn); other nodes, and any other caller of
     * the same name here, are other acquisitions and skip.
     */
    private final Map<String, String> acquisitions = new ConcurrentHashMap<>();

    private final ScheduledExecutorService renewer = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "baton-single-runner-renewal");
        t.setDaemon(true);
        return t;
    });

    SingleRunnerInterceptor(
            Supplier<Baton> baton,
            Supplier<Duration> defaultTtl,
            StringValueResolver resolver,
            Supplier<String> defaultTtlWritten) {
        this.baton = baton;
        this.defaultTtl = defaultTtl;
        this.resolver = resolver;
        this.defaultTtlWritten = defaultTtlWritten;
    }

    /** Resolves and checks the settings of {@code method} at start-up (cached for its calls). */
    void validate(Method method, Class<?> targetClass) {
        specs.computeIfAbsent(method, m -> spec(m, targetClass));
    }

    /** A lease TTL outside what leases accept fails naming {@code where} and the value as written. */
    static void checkTtl(String where, String written, Duration ttl) {
        if (ttl == null || ttl.compareTo(Leases.MIN_TTL) < 0 || ttl.compareTo(Leases.MAX_TTL) > 0) {
            throw new InvalidBatonPropertyException(
                    where,
                    written,
                    "must be between " + BatonAutoConfiguration.Props.human(Leases.MIN_TTL) + " and "
                            + BatonAutoConfiguration.Props.human(Leases.MAX_TTL)
                            + " (the lease is renewed every third of it while the method runs)",
                    null);
        }
    }

    void shutdown() {
        renewer.shutdownNow();
    }

    @Override
    public Object invoke(MethodInvocation invocation) throws Throwable {
        Method method = invocation.getMethod();
        Spec spec = specs.computeIfAbsent(
                method,
                m -> spec(
                        m,
                        invocation.getThis() == null
                                ? m.getDeclaringClass()
                                : org.springframework.aop.support.AopUtils.getTargetClass(invocation.getThis())));
        ReentrantLock lock = local.computeIfAbsent(spec.name(), n -> new ReentrantLock());
        if (!lock.tryLock()) {
            log.debug("single runner '{}': already running on this node; call skipped", spec.name());
            return skipped(method);
        }
        try {
            Baton b = baton.get();
            Leases leases = b.leases();
            long start = System.nanoTime();
            Optional<LeaseGrant> acquired;
            try {
                acquired = leases.tryAcquire(
                        spec.name(),
                        b.nodeId(),
                        spec.leaseTtl(),
                        acquisitions.computeIfAbsent(spec.name(), n -> Leases.newAcquisition()));
            } catch (RuntimeException e) {
                log.warn(
                        "single runner '{}': lease could not be taken ({}); call skipped", spec.name(), e.getMessage());
                return skipped(method);
            }
            if (acquired.isEmpty()) {
                log.debug("single runner '{}': held by another instance; call skipped", spec.name());
                return skipped(method);
            }
            AtomicReference<LeaseGrant> current = new AtomicReference<>(acquired.get());
            long every = Math.max(1, spec.leaseTtl().toMillis() / 3);
            ScheduledFuture<?> renewal = renewer.scheduleAtFixedRate(
                    () -> renew(leases, spec, current), every, every, TimeUnit.MILLISECONDS);
            SingleRunner.Current previous = SingleRunner.enter(new SingleRunner.Current(acquired.get(), leases));
            try {
                return invocation.proceed();
            } finally {
                SingleRunner.exit(previous);
                renewal.cancel(false);
                finish(leases, spec, current.get(), Duration.ofNanos(System.nanoTime() - start));
            }
        } finally {
            lock.unlock();
        }
    }

    private static void renew(Leases leases, Spec spec, AtomicReference<LeaseGrant> current) {
        LeaseGrant g = current.get();
        if (g == null) {
            return;
        }
        try {
            current.set(leases.renew(g, spec.leaseTtl()));
        } catch (LeaseLostException e) {
            current.set(null);
            log.warn(
                    "single runner '{}' lost its lease (generation {}) while running; its fenced writes are rejected",
                    spec.name(),
                    g.generation());
        } catch (RuntimeException e) {
            log.warn("single runner '{}': renewal not confirmed ({}); retrying", spec.name(), e.getMessage());
        }
    }

    /** Keeps the lease until the hold ends (so the other instances' ticks of this period skip), or releases it. */
    private static void finish(Leases leases, Spec spec, LeaseGrant grant, Duration ran) {
        if (grant == null) {
            return;
        }
        Duration rest = spec.holdAtLeast().minus(ran);
        try {
            if (rest.compareTo(Leases.MIN_TTL) >= 0) {
                leases.renew(grant, rest.compareTo(Leases.MAX_TTL) > 0 ? Leases.MAX_TTL : rest);
            } else {
                leases.release(grant);
            }
        } catch (RuntimeException e) {
            log.debug(
                    "single runner '{}': end of run not recorded ({}); the lease expires by itself",
                    spec.name(),
                    e.getMessage());
        }
    }

    private Spec spec(Method method, Class<?> targetClass) {
        Method specific = org.springframework.aop.support.AopUtils.getMostSpecificMethod(method, targetClass);
        BatonSingleRunner ann = AnnotatedElementUtils.findMergedAnnotation(specific, BatonSingleRunner.class);
        if (ann == null) {
            ann = AnnotatedElementUtils.findMergedAnnotation(method, BatonSingleRunner.class);
        }
        String where = "@BatonSingleRunner(\"" + ann.value() + "\") on " + specific.toGenericString();
        Duration ttl;
        if (ann.leaseTtl().isBlank()) {
            ttl = defaultTtl.get();
            checkTtl(
                    BatonAutoConfiguration.SINGLE_RUNNER_LEASE_TTL + " (the default of " + where + ")",
                    defaultTtlWritten.get(),
                    ttl);
        } else {
            String text = resolver.resolveStringValue(ann.leaseTtl());
            ttl = AnnotatedHandlers.parse(where + " leaseTtl", text);
            checkTtl(where + " leaseTtl", text, ttl);
        }
        String holdText = ann.holdAtLeast().isBlank() ? null : resolver.resolveStringValue(ann.holdAtLeast());
        Duration hold = holdText == null
                ? scheduledPeriod(specific)
                : AnnotatedHandlers.parse(where + " holdAtLeast", holdText);
        if (hold.isNegative()) {
            throw new InvalidBatonPropertyException(where + " holdAtLeast", holdText, "must not be negative", null);
        }
        return new Spec(ann.value(), ttl, hold);
    }

    /** The period of the method's {@code @Scheduled} trigger, or zero without one. */
    private Duration scheduledPeriod(Method method) {
        Scheduled s = AnnotatedElementUtils.findMergedAnnotation(method, Scheduled.class);
        if (s == null) {
            return Duration.ZERO;
        }
        String cron = resolver.resolveStringValue(s.cron());
        if (cron != null && !cron.isBlank() && !Scheduled.CRON_DISABLED.equals(cron)) {
            java.time.ZoneId zone =
                    s.zone().isBlank() ? java.time.ZoneId.systemDefault() : java.time.ZoneId.of(s.zone());
            CronExpression expr = CronExpression.parse(cron);
            ZonedDateTime a = expr.next(ZonedDateTime.now(zone));
            ZonedDateTime b = a == null ? null : expr.next(a);
            return b == null ? Duration.ZERO : Duration.between(a, b);
        }
        long rate = s.fixedRate() > 0 ? s.fixedRate() : parseLong(s.fixedRateString());
        if (rate <= 0) {
            rate = s.fixedDelay() > 0 ? s.fixedDelay() : parseLong(s.fixedDelayString());
        }
        if (rate <= 0) {
            String text = !s.fixedRateString().isBlank() ? s.fixedRateString() : s.fixedDelayString();
            return text.isBlank()
                    ? Duration.ZERO
                    : AnnotatedHandlers.parse("@Scheduled on " + method.getName(), resolver.resolveStringValue(text));
        }
        return Duration.ofNanos(s.timeUnit().toNanos(rate));
    }

    private long parseLong(String text) {
        String v = text.isBlank() ? "" : resolver.resolveStringValue(text);
        try {
            return v == null || v.isBlank() ? -1 : Long.parseLong(v.trim());
        } catch (NumberFormatException e) {
            return -1; // a duration text such as "PT1S": parsed by the caller
        }
    }

    private static Object skipped(Method method) {
        Class<?> r = method.getReturnType();
        if (!r.isPrimitive() || r == void.class) {
            return null;
        }
        if (r == boolean.class) {
            return false;
        }
        if (r == char.class) {
            return '\0';
        }
        if (r == long.class) {
            return 0L;
        }
        if (r == double.class) {
            return 0d;
        }
        if (r == float.class) {
            return 0f;
        }
        if (r == short.class) {
            return (short) 0;
        }
        if (r == byte.class) {
            return (byte) 0;
        }
        return 0;
    }
}
