package dev.baton.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.Baton;
import dev.baton.BatonMetrics;
import dev.baton.JobContext;
import dev.baton.JobInterceptor;
import dev.baton.JobRequest;
import dev.baton.Leadership;
import dev.baton.LeadershipConfig;
import dev.baton.Mdc;
import dev.baton.micrometer.BatonObservation;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.slf4j.MDC;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.annotation.Order;

/**
 * {@link JobInterceptor} beans reach the node in their {@code @Order}, {@link BatonObservation} joins them when
 * an {@link ObservationRegistry} exists, and Baton's MDC keys are set in a handler (Logback has a real MDC) and
 * gone from its thread once the attempt is over.
 */
class InterceptorsAndTracingTest extends StarterTestSupport {
    record Order1(int n) {}

    static final List<String> calls = new CopyOnWriteArrayList<>();
    static final List<String> observed = new CopyOnWriteArrayList<>();
    static final CompletableFuture<Map<String, String>> inHandler = new CompletableFuture<>();
    static final CompletableFuture<Thread> handlerThread = new CompletableFuture<>();
    static final CompletableFuture<Map<String, String>> afterAttempt = new CompletableFuture<>();
    static final CompletableFuture<Thread> afterAttemptThread = new CompletableFuture<>();

    static Map<String, String> batonMdc() {
        Map<String, String> m = new HashMap<>();
        for (String key : List.of(Mdc.JOB_ID, Mdc.JOB_KIND, Mdc.JOB_ATTEMPT, Mdc.NODE, Mdc.JOB_QUEUE)) {
            String v = MDC.get(key);
            if (v != null) {
                m.put(key, v);
            }
        }
        return m;
    }

    /** Records the order interceptors run in, by name. */
    record Named(String name) implements JobInterceptor {
        @Override
        public BatonMetrics.JobOutcome aroundExecution(JobContext job, Execution execution) {
            calls.add(name + ">");
            BatonMetrics.JobOutcome outcome = execution.proceed();
            calls.add("<" + name);
            if (name.equals("first")) {
                // The handler completes in its own transaction: the callback then runs on the handler's
                // thread once Baton has ended the attempt there.
                execution.whenRecorded(recorded -> {
                    afterAttemptThread.complete(Thread.currentThread());
                    afterAttempt.complete(batonMdc());
                });
            }
            return outcome;
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class Interceptors {
        @Bean
        @Order(2)
        JobInterceptor second() {
            return new Named("second");
        }

        @Bean
        @Order(1)
        JobInterceptor first() {
            return new Named("first");
        }

        @Bean
        BatonCustomizer mdcHandler() {
            return b -> b.handle("order.mdc", Order1.class, (order, ctx) -> {
                handlerThread.complete(Thread.currentThread());
                inHandler.complete(batonMdc());
                ctx.transaction(connection -> null);
            });
        }

        @Bean
        ObservationRegistry observationRegistry() {
            ObservationRegistry registry = ObservationRegistry.create();
            registry.observationConfig().observationHandler(new ObservationHandler<Observation.Context>() {
                @Override
                public void onStop(Observation.Context context) {
                    observed.add(context.getName());
                }

                @Override
                public boolean supportsContext(Observation.Context context) {
                    return true;
                }
            });
            return registry;
        }
    }

    @Test
    void interceptorBeansRunInOrderWithTracingAndTheMdcIsSetInTheHandlerOnly() throws Exception {
        runner().withUserConfiguration(Interceptors.class)
                .withPropertyValues("baton.node-id=spring-mdc", "baton.worker.queues.default=1")
                .run(context -> {
                    assertThat(context).hasNotFailed().hasSingleBean(BatonObservation.class);
                    Baton baton = context.getBean(Baton.class);
                    long id = baton.jobs()
                            .enqueue(JobRequest.of("order.mdc", new Order1(1)))
                            .id();
                    Awaitility.await().atMost(WAIT).until(() -> observed.contains(BatonObservation.COMPLETE));
                    assertThat(calls).containsExactly("first>", "second>", "<second", "<first");
                    assertThat(observed)
                            .contains(BatonObservation.ENQUEUE, BatonObservation.EXECUTE, BatonObservation.COMPLETE);
                    assertThat(inHandler.get(WAIT.toMillis(), TimeUnit.MILLISECONDS))
                            .containsEntry(Mdc.JOB_ID, Long.toString(id))
                            .containsEntry(Mdc.JOB_KIND, "order.mdc")
                            .containsEntry(Mdc.JOB_ATTEMPT, "1")
                            .containsEntry(Mdc.NODE, "spring-mdc")
                            .containsEntry(Mdc.JOB_QUEUE, "default");
                    assertThat(afterAttemptThread.get(WAIT.toMillis(), TimeUnit.MILLISECONDS))
                            .isSameAs(handlerThread.get());
                    assertThat(afterAttempt.get()).isEmpty();
                });
        // The context closed and the node with it: its maintenance term ended, observed through the
        // leadership events the starter added to the composite metrics.
        assertThat(observed).contains(BatonObservation.LEADERSHIP_TERM);
    }

    /** A leader task's thread carries the node, the lease and the generation of its term. */
    @Test
    void aLeaderTaskSeesItsLeaseAndGenerationInTheMdc() {
        runner().withPropertyValues("baton.node-id=spring-leader").run(context -> {
            Baton baton = context.getBean(Baton.class);
            CompletableFuture<Map<String, String>> seen = new CompletableFuture<>();
            try (Leadership leadership = baton.leadership(
                    "mdc-lease",
                    LeadershipConfig.builder()
                            .leaseTtl(Duration.ofSeconds(1))
                            .renewInterval(Duration.ofMillis(200))
                            .build(),
                    ctx -> {
                        seen.complete(Map.of(
                                Mdc.NODE,
                                String.valueOf(MDC.get(Mdc.NODE)),
                                Mdc.LEASE,
                                String.valueOf(MDC.get(Mdc.LEASE)),
                                Mdc.GENERATION,
                                String.valueOf(MDC.get(Mdc.GENERATION)),
                                "term",
                                Long.toString(ctx.grant().generation())));
                        while (!ctx.awaitCancellation(Duration.ofSeconds(1))) {
                            // hold the term until the test closes the runner
                        }
                    })) {
                leadership.start();
                assertThat(seen.get(WAIT.toMillis(), TimeUnit.MILLISECONDS))
                        .containsEntry(Mdc.NODE, "spring-leader")
                        .containsEntry(Mdc.LEASE, "mdc-lease")
                        .satisfies(m -> assertThat(m.get(Mdc.GENERATION)).isEqualTo(m.get("term")));
            }
        });
    }

    @Test
    void tracingCanBeTurnedOff() {
        runner().withUserConfiguration(Interceptors.class)
                .withPropertyValues("baton.tracing.enabled=false", "baton.worker.queues.default=1")
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(BatonObservation.class));
    }
}
