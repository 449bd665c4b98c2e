package dev.baton.spring;

import dev.baton.Baton;
import dev.baton.JobContext;
import dev.baton.JobHandler;
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

    private record Job(String kind, Class<?> payloadType, JobHandler<Object> handler, RetryPolicy retry) {}

    private final List<Job> jobs = new ArrayList<>();
    private final List<Schedule> schedules = new ArrayList<>();
    private final List<Job> scheduleHandlers = new ArrayList<>();

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
        for (Schedule s : schedules) {
            builder.schedule(s);
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
            jobs.add(new Job(
                    onType.value(),
                    payload,
                    (p, ctx) -> ((JobHandler<Object>) beans.getBean(beanName)).handle(p, ctx),
                    retry(onType, type.getName())));
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
        String where = "@BatonJob(\"" + ann.value() + "\") on " + method.toGenericString();
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
        return new Job(ann.value(), payload, handler, retry(ann, where));
    }

    private void schedule(ConfigurableListableBeanFactory beans, String beanName, Method method, BatonSchedule ann) {
        String where = "@BatonSchedule(name = \"" + ann.name() + "\") on " + method.toGenericString();
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
        Schedule s;
        try {
            if (hasCron) {
                s = Schedule.cron(ann.name(), cron).zone(ann.zone());
            } else {
                s = Schedule.every(ann.name(), parse(where + " every", every)).misfire(dev.baton.MisfirePolicy.SKIP);
            }
        } catch (IllegalArgumentException | java.time.DateTimeException e) {
            throw new InvalidBatonPropertyException(
                    where, hasCron ? cron + " (zone " + ann.zone() + ")" : every, e.getMessage(), e);
        }
        schedules.add(s.job(kind, null).queue(Baton.SWEEP_QUEUE).maxAttempts(3));
        JobHandler<Object> handler = (ignored, ctx) ->
                invoke(beans.getBean(beanName), method, params.length == 1 ? new Object[] {ctx} : new Object[0]);
        scheduleHandlers.add(new Job(kind, Object.class, handler, RetryPolicy.DEFAULT));
    }

    private static RetryPolicy retry(BatonJob ann, String where) {
        if (ann.backoff().isBlank()) {
            return RetryPolicy.DEFAULT;
        }
        Duration base = parse(where + " backoff", ann.backoff());
        Duration max = parse(where + " maxBackoff", ann.maxBackoff());
        try {
            return RetryPolicy.exponential(base, max);
        } catch (IllegalArgumentException e) {
            throw new InvalidBatonPropertyException(
                    where + " backoff/maxBackoff", ann.backoff() + "/" + ann.maxBackoff(), e.getMessage(), e);
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
