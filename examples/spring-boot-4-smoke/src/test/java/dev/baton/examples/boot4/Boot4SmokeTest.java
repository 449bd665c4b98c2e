package dev.baton.examples.boot4;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.Baton;
import dev.baton.JobContext;
import dev.baton.JobRequest;
import dev.baton.spring.BatonEndpoint;
import dev.baton.spring.BatonJob;
import dev.baton.spring.BatonSchedule;
import dev.baton.spring.BatonSingleRunner;
import dev.baton.spring.SingleRunner;
import dev.baton.testkit.BatonPostgres;
import dev.baton.testkit.TestTimeouts;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.SpringBootVersion;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.health.actuate.endpoint.HealthDescriptor;
import org.springframework.boot.health.actuate.endpoint.HealthEndpoint;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.health.contributor.Status;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

/**
 * The starter on Spring Boot 4: the node starts from the DataSource, annotations work, the health indicator
 * and the actuator endpoint report, it drains on close.
 */
class Boot4SmokeTest {
    @RegisterExtension
    static final BatonPostgres PG = new BatonPostgres();

    static final Duration WAIT = TestTimeouts.scaled(Duration.ofSeconds(20));
    static final Set<String> SEEN = ConcurrentHashMap.newKeySet();

    record Note(String text) {}

    @SpringBootApplication
    @EnableScheduling
    static class App {}

    @Component
    static class Work {
        @BatonJob("note")
        public void note(Note n, JobContext ctx) {
            SEEN.add("job:" + n.text());
        }

        @BatonSchedule(name = "tick", every = "200ms")
        public void tick() {
            SEEN.add("schedule");
        }

        @Scheduled(fixedDelay = 200)
        @BatonSingleRunner("smoke.single")
        public void single() {
            SingleRunner.currentGrant().ifPresent(g -> SEEN.add("single:" + g.name()));
        }
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> tick(BatonEndpoint endpoint) {
        return ((List<Map<String, Object>>) endpoint.baton().get("schedules"))
                .stream().filter(s -> "tick".equals(s.get("name"))).findFirst().orElseThrow();
    }

    @Test
    void starterRunsOnSpringBoot4() {
        String schema = PG.freshSchemaName();
        try (ConfigurableApplicationContext ctx = new SpringApplicationBuilder(App.class, Work.class)
                .web(WebApplicationType.NONE)
                .run(
                        "--spring.datasource.url=" + PG.jdbcUrl(),
                        "--baton.schema=" + schema,
                        "--baton.notifications=" + (PG.pooled() ? "POLL" : "AUTO"),
                        "--baton.worker.poll-interval=100ms",
                        "--spring.jmx.enabled=true",
                        "--management.endpoints.jmx.exposure.include=health,baton",
                        "--management.endpoint.health.show-details=always")) {
            assertThat(SpringBootVersion.getVersion()).startsWith("4.");
            Baton baton = ctx.getBean(Baton.class);
            baton.jobs().enqueue(JobRequest.of("note", new Note("hello")));
            Awaitility.await()
                    .atMost(WAIT)
                    .untilAsserted(() -> assertThat(SEEN).contains("job:hello", "schedule", "single:smoke.single"));
            // The actuator endpoint: the schedule with its spec and unit, its last run and that job's state.
            BatonEndpoint endpoint = ctx.getBean(BatonEndpoint.class);
            Awaitility.await()
                    .atMost(WAIT)
                    .untilAsserted(() -> assertThat(tick(endpoint)).containsEntry("lastState", "SUCCEEDED"));
            assertThat(tick(endpoint))
                    .containsEntry("spec", "every 200ms")
                    .containsEntry("kind", "interval")
                    .containsEntry("intervalMs", 200L)
                    .containsEntry("misfires", 0L)
                    .containsEntry("paused", false)
                    .containsEntry("failing", false)
                    .containsKeys("nextRunAt", "lastRunAt", "lastJobId", "lastError");
            assertThat(tick(endpoint).get("lastRunAt")).isNotNull();
            // Health: Boot 4's types (org.springframework.boot.health), the baton component in the health endpoint.
            HealthIndicator indicator = ctx.getBean("batonHealthIndicator", HealthIndicator.class);
            Health health = indicator.health(true);
            assertThat(health.getStatus()).isEqualTo(Status.UP);
            assertThat(health.getDetails())
                    .containsEntry("node", baton.nodeId())
                    .containsKey("leading");
            HealthDescriptor viaEndpoint = ctx.getBean(HealthEndpoint.class).healthForPath("baton");
            assertThat(viaEndpoint).isNotNull();
            assertThat(viaEndpoint.getStatus()).isEqualTo(Status.UP);
            System.out.println("BOOT4 SMOKE: Spring Boot " + SpringBootVersion.getVersion() + ": "
                    + new java.util.TreeSet<>(SEEN));
        } finally {
            PG.dropSchema(schema);
        }
    }
}
