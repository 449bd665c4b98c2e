package dev.baton.spring;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.ObjectMapper;
import dev.baton.Baton;
import dev.baton.Schedule;
import dev.baton.ScheduleInfo;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.springframework.boot.actuate.health.Status;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * {@code /actuator/baton}'s schedules: origin (declared or runtime) with version or revision, spec with its
 * unit, next and last run, last job state, misfires.
 */
class BatonEndpointTest extends StarterTestSupport {
    static final Set<String> KEYS = Set.of(
            "name",
            "origin",
            "ownerApp",
            "definitionVersion",
            "revision",
            "changedBy",
            "changedAt",
            "spec",
            "kind",
            "expression",
            "intervalMs",
            "zone",
            "job",
            "queue",
            "misfirePolicy",
            "nextRunAt",
            "lastDueAt",
            "lastRunAt",
            "lastJobId",
            "lastState",
            "misfires",
            "enabled",
            "paused",
            "failing",
            "failingSince",
            "errorCount",
            "lastError");

    static class Tasks {
        @BatonSchedule(name = "fast", every = "200ms")
        void fast() {}

        @BatonSchedule(name = "slow", every = "1h")
        void slow() {}

        @BatonSchedule(name = "nightly", cron = "0 3 * * *", zone = "Europe/Berlin")
        void nightly() {}
    }

    @Configuration(proxyBeanMethods = false)
    static class TasksConfig {
        @Bean
        Tasks tasks() {
            return new Tasks();
        }
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> schedule(Map<String, Object> view, String name) {
        return ((List<Map<String, Object>>) view.get("schedules"))
                .stream().filter(s -> name.equals(s.get("name"))).findFirst().orElseThrow();
    }

    @Test
    void schedulesShowTheirSpecWithItsUnitTheLastRunItsStateAndMisfires() {
        runner().withUserConfiguration(TasksConfig.class).run(context -> {
            assertThat(context).hasNotFailed();
            BatonEndpoint endpoint = context.getBean(BatonEndpoint.class);
            Baton baton = context.getBean(Baton.class);

            // Run by the worker: a last run, its job and that job's state.
            Awaitility.await()
                    .atMost(WAIT)
                    .untilAsserted(
                            () -> assertThat(schedule(endpoint.baton(), "fast").get("lastState"))
                                    .isEqualTo("SUCCEEDED"));
            Map<String, Object> fast = schedule(endpoint.baton(), "fast");
            assertThat(fast)
                    .containsEntry("spec", "every 200ms")
                    .containsEntry("kind", "interval")
                    .containsEntry("expression", null)
                    .containsEntry("intervalMs", 200L)
                    .containsEntry("zone", "UTC")
                    .containsEntry("queue", Baton.SWEEP_QUEUE)
                    .containsEntry("misfirePolicy", "skip")
                    .containsEntry("enabled", true)
                    .containsEntry("paused", false)
                    .containsEntry("failing", false)
                    .containsEntry("failingSince", null)
                    .containsEntry("errorCount", 0)
                    .containsEntry("lastError", null);
            assertThat((String) fast.get("lastRunAt")).isNotNull();
            assertThat((String) fast.get("lastDueAt")).isNotNull();
            assertThat((String) fast.get("nextRunAt")).isNotNull();
            long lastJob = (Long) fast.get("lastJobId");
            assertThat(baton.jobs().get(lastJob)).isPresent();

            // Never ran yet: the last-run fields are there, null.
            assertThat(schedule(endpoint.baton(), "slow"))
                    .containsEntry("spec", "every 1h")
                    .containsEntry("intervalMs", 3_600_000L)
                    .containsEntry("lastRunAt", null)
                    .containsEntry("lastJobId", null)
                    .containsEntry("lastState", null)
                    .containsEntry("misfires", 0L);
            assertThat(schedule(endpoint.baton(), "nightly"))
                    .containsEntry("spec", "cron '0 3 * * *' Europe/Berlin")
                    .containsEntry("kind", "cron")
                    .containsEntry("expression", "0 3 * * *")
                    .containsEntry("intervalMs", null)
                    .containsEntry("zone", "Europe/Berlin")
                    .containsEntry("misfirePolicy", "run_once");

            assertThat(new ObjectMapper().writeValueAsString(fast)).contains("\"lastState\":\"SUCCEEDED\"");

            // Instants missed by more than the threshold (1 minute) are dropped by SKIP and counted; the
            // ones within it (about 300 of 200 ms) each fire a job, which queue behind one another.
            try (Connection c = pool.getConnection();
                    PreparedStatement ps = c.prepareStatement("UPDATE " + schema
                            + ".schedule SET next_run_at = now() - interval '5 minutes' WHERE name = 'fast'")) {
                ps.executeUpdate();
            }
            Awaitility.await()
                    .atMost(WAIT)
                    .untilAsserted(() -> assertThat(
                                    (Long) schedule(endpoint.baton(), "fast").get("misfires"))
                            .isGreaterThan(1000L));

            // One shape for every schedule, and JSON as Actuator writes it.
            Map<String, Object> view = endpoint.baton();
            @SuppressWarnings("unchecked")
            List<Map<String, Object>> all = (List<Map<String, Object>>) view.get("schedules");
            assertThat(all).hasSize(3).allSatisfy(s -> assertThat(s.keySet()).isEqualTo(KEYS));
            String json = new ObjectMapper().writeValueAsString(view);
            assertThat(json)
                    .contains("\"spec\":\"every 200ms\"")
                    .contains("\"spec\":\"cron '0 3 * * *' Europe/Berlin\"")
                    .contains("\"misfirePolicy\":\"skip\"");

            assertThat(context.getBean(BatonHealthIndicator.class).health().getStatus())
                    .isEqualTo(Status.UP);

            // The operators' standing controls and this node's state, as `baton status` shows them.
            context.getBean(Baton.class).controls().disableKind("report.hourly", "ops-bob", "vendor down");
            Map<String, Object> controlled = endpoint.baton();
            assertThat(controlled.get("heldByOperator")).isEqualTo(false);
            @SuppressWarnings("unchecked")
            List<Map<String, Object>> controls = (List<Map<String, Object>>) controlled.get("controls");
            assertThat(controls).singleElement().satisfies(c -> {
                assertThat(c.get("action")).isEqualTo("DISABLE_KIND");
                assertThat(c.get("target")).isEqualTo("report.hourly");
                assertThat(c.get("by")).isEqualTo("ops-bob");
            });
        });
    }

    @Test
    void intervalsAreShownInTheirLargestWholeUnit() {
        assertThat(BatonEndpoint.duration(5_000)).isEqualTo("5s");
        assertThat(BatonEndpoint.duration(1_500)).isEqualTo("1500ms");
        assertThat(BatonEndpoint.duration(600_000)).isEqualTo("10m");
        assertThat(BatonEndpoint.duration(90_000)).isEqualTo("90s");
        assertThat(BatonEndpoint.duration(7_200_000)).isEqualTo("2h");
        assertThat(BatonEndpoint.duration(86_400_000)).isEqualTo("1d");
    }

    @Test
    void runtimeSchedulesShowTheirOriginRevisionAndAuthor() {
        runner().withUserConfiguration(TasksConfig.class).run(context -> {
            assertThat(context).hasNotFailed();
            BatonEndpoint endpoint = context.getBean(BatonEndpoint.class);
            Baton baton = context.getBean(Baton.class);
            ScheduleInfo created = baton.schedules()
                    .changedBy("admin@acme")
                    .create(Schedule.cron("report:acme", "0 7 * * *")
                            .zone("Asia/Tokyo")
                            .job("tenant.report", null));

            Map<String, Object> acme = schedule(endpoint.baton(), "report:acme");
            assertThat(acme)
                    .containsEntry("origin", "runtime")
                    .containsEntry("ownerApp", null)
                    .containsEntry("revision", created.revision())
                    .containsEntry("definitionVersion", "r" + created.revision())
                    .containsEntry("changedBy", "admin@acme")
                    .containsEntry("spec", "cron '0 7 * * *' Asia/Tokyo");
            assertThat((String) acme.get("changedAt")).isNotNull();
            Map<String, Object> nightly = schedule(endpoint.baton(), "nightly");
            assertThat(nightly)
                    .containsEntry("origin", "declared")
                    .containsEntry("revision", null)
                    .containsEntry("changedBy", null)
                    .containsEntry("changedAt", null);
            assertThat((String) nightly.get("ownerApp")).isNotEmpty();
            @SuppressWarnings("unchecked")
            List<Map<String, Object>> all =
                    (List<Map<String, Object>>) endpoint.baton().get("schedules");
            assertThat(all).hasSize(4).allSatisfy(s -> assertThat(s.keySet()).isEqualTo(KEYS));
        });
    }
}
