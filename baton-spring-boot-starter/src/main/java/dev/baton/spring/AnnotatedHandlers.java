package dev.baton.spring;

import dev.baton.Baton;
import dev.baton.JobContext;
import dev.baton.JobDefaults;
import dev.baton.JobHandler;
import dev.baton.MisfirePolicy;
import dev.baton.RetryPolicy;
import dev.baton.Schedule;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.config.BeanDefinition;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.convert.DurationStyle;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.ResolvableType;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

/**
 * Finds {@link BatonJob} and {@link BatonSchedule} on the application's beans <em>by type</em>, without
 * creating them, and registers handlers that look the bean up when a job runs. So a handler bean may
 * itself inject {@code Baton} (to enqueue follow-up jobs) without a dependency cycle.
 */
final class AnnotatedHandlers {
    /** The job kind of an annotated schedule's runs. */
    static final String SCHEDULE_KIND_PREFIX = "baton.schedule:";

    private record Job(
            String kind, Class<?> payloadType, JobHandler<Object> handler, RetryPolicy retry, JobDefaults defaults) {}

    private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(AnnotatedHandlers.class);

    private final List<Job> jobs = new ArrayList<>();
    private final List<Schedule> schedules = new ArrayList<>();
    private final List<Job> scheduleHandlers = new ArrayList<>();
    private final java.util.Map<String, String> scheduleQueues = new java.util.HashMap<>();

    static AnnotatedHandlers scan(ConfigurableListableBeanFactory beans) {
        AnnotatedHandlers found = new AnnotatedHandlers();
        for (String name : beans.getBeanDefinitionNames()) {
            if (beans.containsBeanDefinition(name)
                    && beans.getBeanDefinition(name).getRole() == BeanDefinition.ROLE_INFRASTRUCTURE) {
                continue;
            }
            Class<?> type;
            try {
                type = beans.getType(name, false);
            } catch (RuntimeException e) {
                continue; // a bean whose type cannot be determined without creating it: not annotated here
            }
            if (type == null || type.getName().startsWith("org.springframework.")) {
                continue;
            }
            found.inspect(beans, name, ClassUtils.getUserClass(type));
        }
        return found;
    }

    boolean isEmpty() {
        return jobs.isEmpty() && schedules.isEmpty();
    }

    boolean hasSchedules() {
        return !schedules.isEmpty();
    }

    void applyTo(Baton.Builder builder) {
        declareJobDefaults(builder);
        for (Job j : jobs) {
            register(builder, j);
        }
        for (Job j : scheduleHandlers) {
            register(builder, j);
        }
        for (Schedule s : schedules) {
            builder.schedule(s);
        }
    }

    /** Without a worker on this node: the schedules are still declared (and fired); other nodes run the jobs. */
    void declareSchedulesOnly(Baton.Builder builder) {
        declareJobDefaults(builder);
        for (Schedule s : schedules) {
            builder.schedule(s);
        }
    }

    /** The queue, max attempts and timeout of {@link BatonJob}: defaults of the kind's jobs enqueued here. */
    private void declareJobDefaults(Baton.Builder builder) {
        for (Job j : jobs) {
            if (!j.defaults().equals(JobDefaults.none())) {
                builder.jobDefaults(j.kind(), j.defaults());
            }
        }
    }

    /**
     * The queues this node's worker serves for the annotated handlers: with {@code baton.worker.queues}
     * unset ({@code configured} false), {@code default} and every {@link BatonJob#queue()} at concurrency 10;
     * with it set, those are not added and a {@link BatonJob#queue()} the property leaves out is logged (its
     * jobs wait for nodes that serve it). Every schedule queue is added at 2 either way.
     */
    void addQueues(java.util.Map<String, Integer> queues, boolean configured) {
        java.util.Map<String, Integer> wanted = new java.util.LinkedHashMap<>();
        if (!jobs.isEmpty() || !schedules.isEmpty()) {
            wanted.put(dev.baton.JobRequest.DEFAULT_QUEUE, 10);
        }
        for (Job j : jobs) {
            if (j.defaults().queue() != null) {
                wanted.putIfAbsent(j.defaults().queue(), 10);
            }
        }
        // Schedule queues are always served (as baton.sweeps always was): the schedules are this node's.
        for (Schedule s : schedules) {
            queues.putIfAbsent(scheduleQueues.get(s.name()), 2);
        }
        if (!configured) {
            wanted.forEach(queues::putIfAbsent);
            return;
        }
        for (Job j : jobs) {
            String q = j.defaults().queue();
            if (q != null && !queues.containsKey(q)) {
                log.warn(
                        "@BatonJob(\"{}\") puts its jobs on queue '{}', which baton.worker.queues does not list: "
                                + "this node does not run them (add baton.worker.queues.{}=<concurrency>)",
                        j.kind(),
                        q,
                        q);
            }
        }
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    private static void register(Baton.Builder builder, Job j) {
        builder.handle(j.kind(), (Class) j.payloadType(), (JobHandler) j.handler(), j.retry());
    }

    @SuppressWarnings("unchecked")
    private void inspect(ConfigurableListableBeanFactory beans, String beanName, Class<?> type) {
        BatonJob onType = AnnotatedElementUtils.findMergedAnnotation(type, BatonJob.class);
        if (onType != null) {
            if (!JobHandler.class.isAssignableFrom(type)) {
                throw new InvalidBatonPropertyException(
                        "@BatonJob on class " + type.getName(),
                        onType.value(),
                        "on a class, @BatonJob needs the class to implement dev.baton.JobHandler<T>; or put it on a "
                                + "method",
                        null);
            }
            Class<?> payload = ResolvableType.forClass(type)
                    .as(JobHandler.class)
                    .getGeneric(0)
                    .resolve(Object.class);
            String where = "@BatonJob(\"" + onType.value() + "\") on bean '" + beanName + "' (" + type.getName() + ")";
            jobs.add(new Job(
                    onType.value(),
                    payload,
                    (p, ctx) -> ((JobHandler<Object>) beans.getBean(beanName)).handle(p, ctx),
                    retry(beans, onType, where),
                    defaults(beans, onType, where)));
        }
        Map<Method, BatonJob> jobMethods =
                MethodIntrospector.selectMethods(type, (MethodIntrospector.MetadataLookup<BatonJob>)
                        m -> AnnotatedElementUtils.findMergedAnnotation(m, BatonJob.class));
        jobMethods.forEach((method, ann) -> jobs.add(jobMethod(beans, beanName, method, ann)));
        Map<Method, BatonSchedule> scheduleMethods =
                MethodIntrospector.selectMethods(type, (MethodIntrospector.MetadataLookup<BatonSchedule>)
                        m -> AnnotatedElementUtils.findMergedAnnotation(m, BatonSchedule.class));
        scheduleMethods.forEach((method, ann) -> schedule(beans, beanName, method, ann));
    }

    private static Job jobMethod(ConfigurableListableBeanFactory beans, String beanName, Method method, BatonJob ann) {
        String where =
                "@BatonJob(\"" + ann.value() + "\") on bean '" + beanName + "' method " + method.toGenericString();
        Class<?>[] params = method.getParameterTypes();
        boolean contextOnly = params.length == 1 && params[0] == JobContext.class;
        if (params.length > 2 || params.length == 2 && params[1] != JobContext.class || params.length == 0) {
            throw new InvalidBatonPropertyException(
                    where,
                    method.getName(),
                    "a job method takes (Payload), " + "(Payload, JobContext) or (JobContext)",
                    null);
        }
        Class<?> payload = contextOnly ? Object.class : params[0];
        JobHandler<Object> handler = (p, ctx) -> {
            Object[] args =
                    contextOnly ? new Object[] {ctx} : params.length == 2 ? new Object[] {p, ctx} : new Object[] {p};
            invoke(beans.getBean(beanName), method, args);
        };
        return new Job(ann.value(), payload, handler, retry(beans, ann, where), defaults(beans, ann, where));
    }

    private void schedule(ConfigurableListableBeanFactory beans, String beanName, Method method, BatonSchedule ann) {
        String where = "@BatonSchedule(name = \"" + ann.name() + "\") on bean '" + beanName + "' method "
                + method.toGenericString();
        Class<?>[] params = method.getParameterTypes();
        if (params.length > 1 || params.length == 1 && params[0] != JobContext.class) {
            throw new InvalidBatonPropertyException(
                    where, method.getName(), "a schedule method takes no " + "arguments or (JobContext)", null);
        }
        String cron = beans.resolveEmbeddedValue(ann.cron());
        String every = beans.resolveEmbeddedValue(ann.every());
        boolean hasCron = cron != null && !cron.isBlank();
        boolean hasEvery = every != null && !every.isBlank();
        if (hasCron == hasEvery) {
            throw new InvalidBatonPropertyException(
                    where,
                    hasCron ? "cron and every" : "neither cron nor every",
                    "set exactly one of cron (e.g. \"0 3 * * *\") or every (e.g. \"10m\")",
                    null);
        }
        String kind = SCHEDULE_KIND_PREFIX + ann.name();
        String zone = beans.resolveEmbeddedValue(ann.zone());
        Schedule s;
        try {
            s = hasCron ? Schedule.cron(ann.name(), cron) : Schedule.every(ann.name(), parse(where + " every", every));
        } catch (IllegalArgumentException | java.time.DateTimeException e) {
            throw new InvalidBatonPropertyException(
                    where + (hasCron ? " cron" : " every"), hasCron ? cron : every, e.getMessage(), e);
        }
        if (hasCron) {
            Schedule cronSchedule = s;
            s = check(where + " zone", zone, () -> cronSchedule.zone(zone));
        }
        s = misfire(s, ann, hasCron, where);
        String queue = beans.resolveEmbeddedValue(ann.queue());
        String q = queue == null || queue.isBlank() ? Baton.SWEEP_QUEUE : queue.trim();
        int attempts = ann.maxAttempts() == 0 ? 3 : ann.maxAttempts();
        Schedule base = s.job(kind, null).allowOverlap(ann.allowOverlap());
        Schedule queued = check(where + " queue", queue, () -> base.queue(q));
        schedules.add(check(where + " maxAttempts", ann.maxAttempts(), () -> queued.maxAttempts(attempts)));
        scheduleQueues.put(ann.name(), q);
        JobHandler<Object> handler = (ignored, ctx) ->
                invoke(beans.getBean(beanName), method, params.length == 1 ? new Object[] {ctx} : new Object[0]);
        scheduleHandlers.add(new Job(kind, Object.class, handler, RetryPolicy.DEFAULT, JobDefaults.none()));
    }

    /** The allowed spellings of {@link BatonSchedule#misfire()}. */
    static final String MISFIRE_VALUES = "skip, run-once or catch-up";

    private static Schedule misfire(Schedule s, BatonSchedule ann, boolean cron, String where) {
        String text = ann.misfire().trim();
        MisfirePolicy policy;
        switch (text.toLowerCase(java.util.Locale.ROOT).replace('_', '-')) {
            case "" ->
                policy = ann.catchUp() != 0
                        ? MisfirePolicy.CATCH_UP
                        : cron ? MisfirePolicy.RUN_ONCE : MisfirePolicy.SKIP;
            case "skip" -> policy = MisfirePolicy.SKIP;
            case "run-once" -> policy = MisfirePolicy.RUN_ONCE;
            case "catch-up" -> policy = MisfirePolicy.CATCH_UP;
            default ->
                throw new InvalidBatonPropertyException(
                        where + " misfire", ann.misfire(), "must be " + MISFIRE_VALUES, null);
        }
        if (ann.catchUp() < 0 || ann.catchUp() > 1000) {
            throw new InvalidBatonPropertyException(
                    where + " catchUp", ann.catchUp(), "must be 1 to 1000 missed runs (0: unset)", null);
        }
        if (policy == MisfirePolicy.CATCH_UP) {
            if (ann.catchUp() == 0) {
                throw new InvalidBatonPropertyException(
                        where + " misfire",
                        ann.misfire(),
                        "catch-up needs catchUp = 1 to 1000 (how many missed runs)",
                        null);
            }
            return s.catchUp(ann.catchUp());
        }
        if (ann.catchUp() != 0) {
            throw new InvalidBatonPropertyException(
                    where + " catchUp",
                    ann.catchUp(),
                    "catchUp applies only with misfire = \"catch-up\" (misfire is \"" + ann.misfire() + "\")",
                    null);
        }
        return s.misfire(policy);
    }

    private static JobDefaults defaults(ConfigurableListableBeanFactory beans, BatonJob ann, String where) {
        JobDefaults d = JobDefaults.none();
        String queue = beans.resolveEmbeddedValue(ann.queue());
        if (queue != null && !queue.isBlank()) {
            JobDefaults before = d;
            d = check(where + " queue", queue, () -> before.queue(queue.trim()));
        }
        if (ann.maxAttempts() != 0) {
            JobDefaults before = d;
            d = check(where + " maxAttempts", ann.maxAttempts(), () -> before.maxAttempts(ann.maxAttempts()));
        }
        String timeout = beans.resolveEmbeddedValue(ann.timeout());
        if (timeout != null && !timeout.isBlank()) {
            Duration t = parse(where + " timeout", timeout);
            JobDefaults before = d;
            d = check(where + " timeout", timeout, () -> before.timeout(t));
        }
        return d;
    }

    private static RetryPolicy retry(ConfigurableListableBeanFactory beans, BatonJob ann, String where) {
        String backoff = beans.resolveEmbeddedValue(ann.backoff());
        String multiplier = beans.resolveEmbeddedValue(ann.multiplier());
        String maxBackoff = beans.resolveEmbeddedValue(ann.maxBackoff());
        String jitter = beans.resolveEmbeddedValue(ann.jitter());
        if (isBlank(backoff) && isBlank(multiplier) && isBlank(maxBackoff) && isBlank(jitter)) {
            return RetryPolicy.DEFAULT;
        }
        RetryPolicy d = RetryPolicy.DEFAULT;
        Duration base = isBlank(backoff) ? d.base() : parse(where + " backoff", backoff);
        Duration max = isBlank(maxBackoff)
                ? (base.compareTo(d.max()) > 0 ? base : d.max())
                : parse(where + " maxBackoff", maxBackoff);
        double factor = isBlank(multiplier) ? d.factor() : number(where + " multiplier", multiplier, false);
        double spread = isBlank(jitter) ? d.jitter() : number(where + " jitter", jitter, true);
        try {
            return new RetryPolicy(base, factor, max, spread);
        } catch (IllegalArgumentException e) {
            String m = e.getMessage();
            String attr =
                    m.startsWith("factor") ? "multiplier" : m.startsWith("jitter") ? "jitter" : "backoff/maxBackoff";
            Object value = attr.equals("multiplier")
                    ? multiplier
                    : attr.equals("jitter")
                            ? jitter
                            : (isBlank(backoff) ? "1s" : backoff) + "/" + (isBlank(maxBackoff) ? "1h" : maxBackoff);
            String rule = switch (attr) {
                case "multiplier" -> "must be between 1 and 100";
                case "jitter" -> "must be at least 0 and below 1 (a fraction such as 0.2, or 20%)";
                default -> "maxBackoff must not be below backoff";
            };
            throw new InvalidBatonPropertyException(where + " " + attr, value, rule, e);
        }
    }

    private static double number(String where, String text, boolean percentAllowed) {
        String t = text.trim();
        try {
            if (percentAllowed && t.endsWith("%")) {
                return Double.parseDouble(t.substring(0, t.length() - 1).trim()) / 100.0;
            }
            return Double.parseDouble(t);
        } catch (NumberFormatException e) {
            throw new InvalidBatonPropertyException(
                    where,
                    text,
                    percentAllowed ? "not a number; use e.g. 0.2 or 20%" : "not a number; use e.g. 1.5",
                    e);
        }
    }

    private static boolean isBlank(String s) {
        return s == null || s.isBlank();
    }

    /** Runs {@code step}; an {@link IllegalArgumentException} (or bad zone) names {@code where} and the value. */
    private static <T> T check(String where, Object value, java.util.function.Supplier<T> step) {
        try {
            return step.get();
        } catch (IllegalArgumentException | java.time.DateTimeException e) {
            throw new InvalidBatonPropertyException(where, value, e.getMessage(), e);
        }
    }

    static Duration parse(String where, String text) {
        try {
            return DurationStyle.detectAndParse(text.trim());
        } catch (IllegalArgumentException e) {
            throw new InvalidBatonPropertyException(
                    where, text, "not a duration; use e.g. 500ms, 30s, 10m, 1h or " + "ISO-8601 (PT30S)", e);
        }
    }

    private static void invoke(Object bean, Method method, Object[] args) throws Exception {
        Method invocable = AopUtils.selectInvocableMethod(method, bean.getClass());
        ReflectionUtils.makeAccessible(invocable);
        try {
            invocable.invoke(bean, args);
        } catch (InvocationTargetException e) {
            Throwable t = e.getTargetException();
            if (t instanceof Exception ex) {
                throw ex;
            }
            if (t instanceof Error err) {
                throw err;
            }
            throw new IllegalStateException(t);
        }
    }
}
