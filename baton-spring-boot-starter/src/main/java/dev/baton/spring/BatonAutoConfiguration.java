package dev.baton.spring;

import dev.baton.Baton;
import dev.baton.BatonMetrics;
import dev.baton.JobInterceptor;
import dev.baton.LeadershipConfig;
import dev.baton.TransactionBinding;
import dev.baton.WorkerConfig;
import dev.baton.micrometer.BatonMicrometer;
import dev.baton.micrometer.BatonObservation;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.observation.ObservationRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.postgresql.ds.PGSimpleDataSource;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.core.Ordered;
import org.springframework.core.annotation.Order;
import org.springframework.core.env.Environment;

/**
 * Baton from the application's {@link DataSource}: a node built from {@code baton.*} properties, the
 * {@link BatonJob} and {@link BatonSchedule} beans, {@link BatonCustomizer}s and any {@link BatonMetrics}
 * beans (plus Micrometer when a {@link MeterRegistry} exists), the {@link JobInterceptor} beans in their
 * {@code @Order} (plus {@link BatonObservation} when an {@link ObservationRegistry} exists: traces of jobs and
 * leadership terms; {@code baton.tracing.enabled=false} turns it off); started and drained with the context.
 *
 * <p>Optional beans by name: {@code batonCoordinationDataSource} (a small pool for renewals and
 * heartbeats) and {@code batonListenDataSource} (direct connections for LISTEN; or set {@code baton.listen.url}).
 */
@AutoConfiguration(
        afterName = {
            "org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration",
            "org.springframework.boot.actuate.autoconfigure.metrics.MetricsAutoConfiguration",
            "org.springframework.boot.actuate.autoconfigure.metrics.CompositeMeterRegistryAutoConfiguration",
            "org.springframework.boot.actuate.autoconfigure.metrics.export.simple.SimpleMetricsExportAutoConfiguration",
            "org.springframework.boot.actuate.autoconfigure.observation.ObservationAutoConfiguration",
            // The same auto-configurations under their Spring Boot 4 names (absent names are ignored).
            "org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration",
            "org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration",
            "org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration",
            "org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration",
            "org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration"
        })
@ConditionalOnClass(Baton.class)
@ConditionalOnBean(DataSource.class)
@ConditionalOnProperty(prefix = "baton", name = "enabled", havingValue = "true", matchIfMissing = true)
@EnableConfigurationProperties(BatonProperties.class)
public class BatonAutoConfiguration {
    static final String COORDINATION_DATA_SOURCE = "batonCoordinationDataSource";
    static final String LISTEN_DATA_SOURCE = "batonListenDataSource";
    static final String SINGLE_RUNNER_LEASE_TTL = "baton.single-runner.lease-ttl";

    @Bean
    @ConditionalOnMissingBean
    RenewalTracker batonRenewalTracker() {
        return new RenewalTracker();
    }

    @Bean
    @ConditionalOnMissingBean(name = "batonMicrometer")
    @ConditionalOnProperty(prefix = "baton.metrics", name = "enabled", havingValue = "true", matchIfMissing = true)
    @ConditionalOnBean(MeterRegistry.class)
    BatonMicrometer batonMicrometer(MeterRegistry registry) {
        return new BatonMicrometer(registry);
    }

    /** Built here, started by {@link BatonLifecycle}; closed by it too (not by the bean's destroy). */
    @Bean(destroyMethod = "")
    @ConditionalOnMissingBean
    Baton baton(
            ObjectProvider<DataSource> dataSources,
            BatonProperties properties,
            ConfigurableListableBeanFactory beans,
            Environment environment,
            ObjectProvider<BatonMetrics> metrics,
            ObjectProvider<TransactionBinding> transactionBinding,
            ObjectProvider<JobInterceptor> interceptors,
            ObjectProvider<BatonCustomizer> customizers) {
        DataSource main = dataSources.getIfAvailable();
        Baton.Builder b = Baton.builder(main);
        Props.apply(b, properties, environment);
        if (beans.containsBean(COORDINATION_DATA_SOURCE)) {
            b.coordinationDataSource(beans.getBean(COORDINATION_DATA_SOURCE, DataSource.class));
        }
        if (beans.containsBean(LISTEN_DATA_SOURCE)) {
            b.listenDataSource(beans.getBean(LISTEN_DATA_SOURCE, DataSource.class));
        } else if (properties.getListen().getUrl() != null) {
            b.listenDataSource(listenDataSource(properties.getListen()));
        }
        AnnotatedHandlers annotated = AnnotatedHandlers.scan(beans);
        Map<String, Integer> queues = new LinkedHashMap<>(properties.getWorker().getQueues());
        boolean work = properties.getWorker().isEnabled() && (!queues.isEmpty() || !annotated.isEmpty());
        if (work) {
            annotated.addQueues(queues, !properties.getWorker().getQueues().isEmpty());
            b.worker(Props.worker(properties.getWorker(), queues, environment));
            annotated.applyTo(b);
        } else if (!annotated.isEmpty()) {
            // baton.worker.enabled=false: this node enqueues and fires schedules, other nodes run them.
            annotated.declareSchedulesOnly(b);
        }
        List<BatonMetrics> all = new ArrayList<>();
        metrics.orderedStream().forEach(all::add);
        if (!all.isEmpty()) {
            b.metrics(all.size() == 1 ? all.get(0) : new CompositeMetrics(all));
        }
        transactionBinding.ifAvailable(b::transactionBinding);
        interceptors.orderedStream().forEach(b::interceptor);
        customizers.orderedStream().forEach(c -> c.customize(b));
        return b.build();
    }

    /**
     * With spring-jdbc on the class path, Spring's transactions are Baton's: {@code jobs().enqueue} joins
     * a {@code @Transactional} method's transaction, and {@code ctx.transaction} is the thread's Spring
     * transaction while its work runs (see {@link SpringTransactionBinding}).
     */
    @org.springframework.context.annotation.Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.jdbc.datasource.DataSourceUtils")
    static class Transactions {
        @Bean
        @ConditionalOnMissingBean
        TransactionBinding batonTransactionBinding() {
            return new SpringTransactionBinding();
        }
    }

    /**
     * With an {@link ObservationRegistry} (Spring Boot's actuator configures one, bridged to OpenTelemetry or
     * Brave by Micrometer Tracing), jobs are observed: enqueue, execution and completion, continuing the
     * enqueuer's trace on any node; and this node's leadership terms, through the composite metrics.
     */
    @org.springframework.context.annotation.Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "io.micrometer.observation.ObservationRegistry")
    @ConditionalOnBean(ObservationRegistry.class)
    @ConditionalOnProperty(prefix = "baton.tracing", name = "enabled", havingValue = "true", matchIfMissing = true)
    static class Tracing {
        /** First among the interceptors, so that the others (and their log lines) run inside its spans. */
        @Bean
        @ConditionalOnMissingBean
        @Order(Ordered.HIGHEST_PRECEDENCE + 100)
        BatonObservation batonObservation(ObjectProvider<ObservationRegistry> registry, BatonProperties properties) {
            return new BatonObservation(registry.getObject(), properties.getNodeId());
        }

        @Bean
        BatonMetrics batonLeadershipObservations(BatonObservation observation) {
            return observation.leadershipEvents();
        }
    }

    @Bean
    @ConditionalOnMissingBean
    BatonLifecycle batonLifecycle(Baton baton, BatonProperties properties, ObjectProvider<BatonMicrometer> micrometer) {
        return new BatonLifecycle(
                baton, micrometer.getIfAvailable(), properties.getMetrics().getQueueDepthRefresh());
    }

    @Bean
    static SingleRunnerPostProcessor batonSingleRunnerPostProcessor(
            ObjectProvider<Baton> baton,
            ObjectProvider<BatonProperties> properties,
            ConfigurableListableBeanFactory beans,
            Environment environment) {
        return new SingleRunnerPostProcessor(
                baton::getObject,
                () -> properties.getObject().getSingleRunner().getLeaseTtl(),
                beans::resolveEmbeddedValue,
                () -> Props.written(
                        environment,
                        SINGLE_RUNNER_LEASE_TTL,
                        properties.getObject().getSingleRunner().getLeaseTtl()));
    }

    private static DataSource listenDataSource(BatonProperties.Listen listen) {
        PGSimpleDataSource ds = new PGSimpleDataSource();
        InvalidBatonPropertyException.check("baton.listen.url", listen.getUrl(), () -> {
            if (!listen.getUrl().startsWith("jdbc:postgresql:")) {
                throw new IllegalArgumentException("must be a PostgreSQL JDBC URL (jdbc:postgresql://host:port/db)");
            }
            ds.setUrl(listen.getUrl());
        });
        if (listen.getUsername() != null) {
            ds.setUser(listen.getUsername());
        }
        if (listen.getPassword() != null) {
            ds.setPassword(listen.getPassword());
        }
        return ds;
    }

    /** Copies properties into Baton's builders, naming the property when Baton refuses a value. */
    static final class Props {
        private Props() {}

        static void apply(Baton.Builder b, BatonProperties p, Environment env) {
            InvalidBatonPropertyException.check("baton.schema", p.getSchema(), () -> b.schema(p.getSchema()));
            if (p.getNodeId() != null) {
                InvalidBatonPropertyException.check("baton.node-id", p.getNodeId(), () -> b.nodeId(p.getNodeId()));
            }
            b.migrateOnStart(p.isMigrateOnStart());
            b.notifications(p.getNotifications());
            if (p.getNodeHeartbeat() != null) {
                InvalidBatonPropertyException.check(
                        "baton.node-heartbeat", p.getNodeHeartbeat(), () -> b.nodeHeartbeat(p.getNodeHeartbeat()));
            }
            String app = p.getApplication().getName() != null
                    ? p.getApplication().getName()
                    : env.getProperty("spring.application.name", "default");
            InvalidBatonPropertyException.check(
                    "baton.application.name/version",
                    app + "/" + p.getApplication().getVersion(),
                    () -> b.application(app, p.getApplication().getVersion()));
            BatonProperties.Maintenance m = p.getMaintenance();
            LeadershipConfig.Builder lb = LeadershipConfig.builder();
            if (m.getLeaseTtl() != null) {
                lb.leaseTtl(m.getLeaseTtl());
            }
            if (m.getRenewInterval() != null) {
                lb.renewInterval(m.getRenewInterval());
            }
            if (m.getPollInterval() != null) {
                lb.pollInterval(m.getPollInterval());
            }
            if (m.getStopTimeout() != null) {
                lb.stopTimeout(m.getStopTimeout());
            }
            b.maintenance(build(
                    "baton.maintenance.",
                    List.of("leaseTtl", "renewInterval", "pollInterval", "stopTimeout"),
                    lb::build,
                    env,
                    LeadershipConfig.defaults()));
            SingleRunnerInterceptor.checkTtl(
                    SINGLE_RUNNER_LEASE_TTL,
                    written(env, SINGLE_RUNNER_LEASE_TTL, p.getSingleRunner().getLeaseTtl()),
                    p.getSingleRunner().getLeaseTtl());
            BatonProperties.Metrics metrics = p.getMetrics();
            InvalidBatonPropertyException.check(
                    "baton.metrics.queue-depth-refresh",
                    written(env, "baton.metrics.queue-depth-refresh", metrics.getQueueDepthRefresh()),
                    () -> {
                        if (metrics.getQueueDepthRefresh().compareTo(BatonMicrometer.MIN_QUEUE_REFRESH) < 0) {
                            throw new IllegalArgumentException("must be at least "
                                    + human(BatonMicrometer.MIN_QUEUE_REFRESH)
                                    + " (each refresh is one query over the job table)");
                        }
                    });
        }

        static WorkerConfig worker(BatonProperties.Worker w, Map<String, Integer> queues, Environment env) {
            WorkerConfig.Builder wb = WorkerConfig.builder();
            queues.forEach((q, n) -> InvalidBatonPropertyException.check("baton.worker.queues." + q, n, () -> {
                if (n == null || n < 1 || n > 1000) {
                    throw new IllegalArgumentException("the concurrency of a queue must be 1 to 1000");
                }
                wb.queue(q, n);
            }));
            if (w.getJobLease() != null) {
                wb.jobLease(w.getJobLease());
            }
            if (w.getHeartbeatInterval() != null) {
                wb.heartbeatInterval(w.getHeartbeatInterval());
            }
            if (w.getPollInterval() != null) {
                wb.pollInterval(w.getPollInterval());
            }
            if (w.getRescueInterval() != null) {
                wb.rescueInterval(w.getRescueInterval());
            }
            if (w.getMaxStalls() != null) {
                wb.maxStalls(w.getMaxStalls());
            }
            if (w.getDrainTimeout() != null) {
                wb.drainTimeout(w.getDrainTimeout());
            }
            if (w.getRetention() != null) {
                wb.retention(w.getRetention());
            }
            if (w.getMaxPayloadBytes() != null) {
                wb.maxPayloadBytes(w.getMaxPayloadBytes());
            }
            if (w.getUnhandledKindTimeout() != null) {
                wb.unhandledKindTimeout(w.getUnhandledKindTimeout());
            }
            return build(
                    "baton.worker.",
                    List.of(
                            "jobLease",
                            "heartbeatInterval",
                            "pollInterval",
                            "rescueInterval",
                            "maxStalls",
                            "drainTimeout",
                            "retention",
                            "maxPayloadBytes",
                            "unhandledKindTimeout"),
                    wb::build,
                    env,
                    WorkerConfig.builder().build());
        }

        /**
         * Builds a Baton config; its refusal names builder fields ({@code jobLease}), which are rewritten
         * to the properties that set them ({@code baton.worker.job-lease}); the values are shown as written
         * (or as the default, when unset), and durations in the rule in the same short style ({@code 1s}).
         */
        static <T> T build(
                String prefix,
                List<String> fields,
                java.util.function.Supplier<T> builder,
                Environment env,
                Object defaults) {
            try {
                return builder.get();
            } catch (IllegalArgumentException e) {
                String message = humanDurations(e.getMessage());
                List<String> named = new ArrayList<>();
                List<String> values = new ArrayList<>();
                for (String f : fields) {
                    java.util.regex.Matcher matcher =
                            java.util.regex.Pattern.compile("\\b" + f + "\\b").matcher(message);
                    if (matcher.find()) {
                        String property = prefix + kebab(f);
                        named.add(property);
                        values.add(written(env, property, defaultOf(defaults, f)));
                        message = matcher.replaceAll(property);
                    }
                }
                throw new InvalidBatonPropertyException(
                        named.isEmpty() ? prefix + "*" : String.join(" and ", named),
                        values.isEmpty() ? null : String.join(" and ", values),
                        message,
                        e);
            }
        }

        /** A config's default for {@code field} (its accessor of the same name), for the message. */
        private static Object defaultOf(Object defaults, String field) {
            try {
                return defaults.getClass().getMethod(field).invoke(defaults);
            } catch (ReflectiveOperationException | RuntimeException e) {
                return null;
            }
        }

        /** The value of {@code property} as the user wrote it, else the default in short style, marked as such. */
        static String written(Environment env, String property, Object fallback) {
            String raw = env == null ? null : env.getProperty(property);
            if (raw != null) {
                return raw;
            }
            Object v = fallback instanceof Duration d ? human(d) : fallback;
            return v + " (default)";
        }

        /** A duration in Spring's short style: {@code 500ms}, {@code 2s}, {@code 10m}, {@code 1h}, {@code 7d}. */
        static String human(Duration d) {
            long ms = d.toMillis();
            if (!Duration.ofMillis(ms).equals(d)) {
                return d.toString();
            }
            if (ms != 0 && ms % 86_400_000L == 0) {
                return ms / 86_400_000L + "d";
            }
            if (ms != 0 && ms % 3_600_000L == 0) {
                return ms / 3_600_000L + "h";
            }
            if (ms != 0 && ms % 60_000L == 0) {
                return ms / 60_000L + "m";
            }
            if (ms % 1000L == 0) {
                return ms / 1000L + "s";
            }
            return ms + "ms";
        }

        /** ISO-8601 durations ({@code PT0.5S}) in a message rewritten in the short style ({@code 500ms}). */
        static String humanDurations(String message) {
            java.util.regex.Matcher m =
                    java.util.regex.Pattern.compile("-?P(?:\\d+D)?T[0-9HMS.]+").matcher(message);
            StringBuilder out = new StringBuilder();
            while (m.find()) {
                String replacement;
                try {
                    replacement = human(Duration.parse(m.group()));
                } catch (RuntimeException e) {
                    replacement = m.group();
                }
                m.appendReplacement(out, java.util.regex.Matcher.quoteReplacement(replacement));
            }
            m.appendTail(out);
            return out.toString();
        }

        static String kebab(String camel) {
            return camel.replaceAll("([a-z0-9])([A-Z])", "$1-$2").toLowerCase(java.util.Locale.ROOT);
        }
    }
}
