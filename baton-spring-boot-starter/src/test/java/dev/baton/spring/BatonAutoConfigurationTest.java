package dev.baton.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.Baton;
import dev.baton.JobContext;
import dev.baton.JobRequest;
import dev.baton.JobState;
import dev.baton.NodeState;
import dev.baton.SchemaVersionException;
import dev.baton.micrometer.BatonMicrometer;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.springframework.boot.actuate.health.Status;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** Properties bound, beans present or absent, start-up and shutdown, against real PostgreSQL. */
class BatonAutoConfigurationTest extends StarterTestSupport {
    record Greeting(String name) {}

    /** A handler bean that also injects Baton (no cycle: handlers are found by type and looked up per job). */
    static class Greeter {
        final Set<String> greeted = ConcurrentHashMap.newKeySet();
        final Baton baton;

        Greeter(Baton baton) {
            this.baton = baton;
        }

        @BatonJob("greet")
        void greet(Greeting g, JobContext ctx) {
            greeted.add(g.name() + "@" + ctx.queue());
        }

        @BatonSchedule(name = "tick", every = "${test.tick:200ms}")
        void tick() {
            greeted.add("tick");
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class GreeterConfig {
        @Bean
        Greeter greeter(Baton baton) {
            return new Greeter(baton);
        }
    }

    @Test
    void propertiesAreBoundAndTheNodeStartsAndStopsWithTheContext() {
        runner().withPropertyValues(
                        "baton.node-id=spring-1",
                        "baton.application.name=orders",
                        "baton.application.version=1.2.3",
                        "baton.worker.queues.mail=3")
                .run(context -> {
                    assertThat(context)
                            .hasNotFailed()
                            .hasSingleBean(Baton.class)
                            .hasSingleBean(BatonLifecycle.class)
                            .hasSingleBean(BatonHealthIndicator.class)
                            .hasSingleBean(BatonEndpoint.class)
                            .doesNotHaveBean(BatonMicrometer.class);
                    Baton baton = context.getBean(Baton.class);
                    assertThat(baton.nodeId()).isEqualTo("spring-1");
                    assertThat(baton.schema()).isEqualTo(schema);
                    assertThat(baton.nodes().list(null, 100).items())
                            .singleElement()
                            .satisfies(n -> {
                                assertThat(n.id()).isEqualTo("spring-1");
                                assertThat(n.state()).isEqualTo(NodeState.ACTIVE);
                            });
                    assertThat(context.getBean(BatonProperties.class)
                                    .getWorker()
                                    .getQueues())
                            .containsEntry("mail", 3);
                    // The health indicator reads the node registry on the database.
                    assertThat(context.getBean(BatonHealthIndicator.class)
                                    .health()
                                    .getStatus())
                            .isEqualTo(Status.UP);
                    Map<String, Object> view =
                            context.getBean(BatonEndpoint.class).baton();
                    assertThat(view)
                            .containsEntry("node", "spring-1")
                            .containsKeys("nodes", "leases", "queues", "schedules");
                });
        // Closing the context drained and stopped the node.
        try (var probe = new ProbeNode(pool, schema)) {
            assertThat(probe.baton().nodes().list(null, 100).items())
                    .singleElement()
                    .satisfies(n -> assertThat(n.state()).isEqualTo(NodeState.STOPPED));
        }
    }

    @Test
    void annotatedJobsAndSchedulesRunOnTheWorker() {
        runner().withUserConfiguration(GreeterConfig.class)
                .withBean(SimpleMeterRegistry.class)
                .run(context -> {
                    assertThat(context).hasNotFailed().hasSingleBean(BatonMicrometer.class);
                    Baton baton = context.getBean(Baton.class);
                    Greeter greeter = context.getBean(Greeter.class);
                    long id = baton.jobs()
                            .enqueue(JobRequest.of("greet", new Greeting("ada")))
                            .id();
                    Awaitility.await()
                            .atMost(WAIT)
                            .until(() -> greeter.greeted.containsAll(Set.of("ada@default", "tick")));
                    Awaitility.await()
                            .atMost(WAIT)
                            .until(() -> baton.jobs().get(id).orElseThrow().state() == JobState.SUCCEEDED);
                    assertThat(baton.schedules().list(null, 100).items())
                            .extracting(s -> s.name())
                            .containsExactly("tick");
                    MeterRegistry registry = context.getBean(MeterRegistry.class);
                    Awaitility.await()
                            .atMost(WAIT)
                            .untilAsserted(() -> assertThat(registry.get(BatonMicrometer.JOBS_COMPLETED)
                                            .tag("kind", "greet")
                                            .tag("outcome", "succeeded")
                                            .counter()
                                            .count())
                                    .isEqualTo(1));
                });
    }

    @Test
    void healthIsDownOnceTheNodeIsRecordedStopped() {
        runner().run(context -> {
            BatonHealthIndicator health = context.getBean(BatonHealthIndicator.class);
            assertThat(health.health().getStatus()).isEqualTo(Status.UP);
            context.getBean(Baton.class).close(); // the node records itself as stopped
            var h = health.health();
            assertThat(h.getStatus()).isEqualTo(Status.DOWN);
            assertThat(h.getDetails()).containsEntry("reason", "this node is recorded as stopped");
        });
    }

    @Test
    void backsOffWhenDisabledOrWithoutADataSource() {
        runner().withPropertyValues("baton.enabled=false")
                .run(context -> assertThat(context)
                        .hasNotFailed()
                        .doesNotHaveBean(Baton.class)
                        .doesNotHaveBean(BatonHealthIndicator.class));
        new org.springframework.boot.test.context.runner.ApplicationContextRunner()
                .withConfiguration(
                        org.springframework.boot.autoconfigure.AutoConfigurations.of(BatonAutoConfiguration.class))
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(Baton.class));
    }

    @Test
    void noWorkerWithoutQueuesOrHandlers() {
        runner().run(context -> {
            Baton baton = context.getBean(Baton.class);
            // A node without a worker still enqueues; nothing claims the job.
            long id = baton.jobs()
                    .enqueue(JobRequest.of("greet", new Greeting("x")))
                    .id();
            assertThat(baton.jobs().get(id).orElseThrow().state()).isEqualTo(JobState.AVAILABLE);
            assertThat(context).doesNotHaveBean(BatonMicrometer.class);
        });
    }

    @Test
    void migrateOnStartFalseOnlyVerifiesTheSchema() {
        runner().withPropertyValues("baton.migrate-on-start=false").run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).rootCause().isInstanceOf(SchemaVersionException.class);
        });
        Baton.migrate(pool, schema);
        runner().withPropertyValues("baton.migrate-on-start=false")
                .run(context -> assertThat(context).hasNotFailed());
    }

    /** Reads the registry after the context closed. */
    record ProbeNode(Baton baton) implements AutoCloseable {
        ProbeNode(javax.sql.DataSource ds, String schema) {
            this(Baton.builder(ds).schema(schema).build());
        }

        @Override
        public void close() {
            baton.close();
        }
    }
}
