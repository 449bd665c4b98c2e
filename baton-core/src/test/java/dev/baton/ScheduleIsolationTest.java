package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.baton.internal.db.Db;
import dev.baton.internal.job.Interceptors;
import dev.baton.internal.job.JobStore;
import dev.baton.internal.notify.Notifier;
import dev.baton.internal.schedule.Scheduler;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/**
 * S07: one schedule cannot fire (a zone this JVM does not know, a corrupt stored spec, a name too long
 * for the keys derived from it, stored by an older version) next to a healthy one. The healthy one keeps
 * firing on time; each broken one is reported (status, log, metric) and retried with a backoff, never
 * silently stuck.
 */
class ScheduleIsolationTest extends ScheduleTestSupport {
    private static final String LONG_NAME = "n".repeat(180);

    /**
     * Protection removed and seen failing: the per-schedule error boundary in {@code Scheduler.fireDue}
     * (the try/catch around {@code fire}): the first broken schedule, due first, threw out of fireDue and
     * the healthy one never fired ("tick fired" failed); with the boundary kept but {@code retry_at}
     * ignored by the due query, the broken ones were retried at every pass (error count rose without a
     * backoff: "still waiting out its backoff" failed).
     */
    @Test
    void S07_aScheduleThatCannotFireIsReportedAndRetriedWhileTheOthersFireOnTime() throws Exception {
        Schedules schedules = Baton.builder(appPool).schema(schema).build().schedules();
        schedules.declare(
                "svc",
                "1",
                List.of(Schedule.every("tick", Duration.ofMillis(200)).job("tick", null)));
        insertBroken("zone", "cron", "* * * * *", "Mars/Olympus_Mons");
        insertBroken("spec", "interval", "every-now-and-then", "UTC");
        insertBroken(LONG_NAME, "interval", "1000", "UTC");
        List<String> failed = new CopyOnWriteArrayList<>();
        // A poll interval of 10 s: the first backoff (one poll interval) outlasts this test's passes.
        Scheduler scheduler = new Scheduler(
                Db.of(appPool),
                schedules.store(),
                new JobStore(schema),
                Notifier.polling(),
                Duration.ofSeconds(10),
                "svc",
                "1",
                new BatonMetrics() {
                    @Override
                    public void scheduleFailed(String schedule) {
                        failed.add(schedule);
                    }
                },
                System::nanoTime,
                Interceptors.NONE);

        awaitDbClock(nextRunAt("tick"));
        assertThat(scheduler.fireDue()).as("tick fired").isGreaterThanOrEqualTo(1);
        assertThat(failed).containsExactlyInAnyOrder("zone", "spec", LONG_NAME);
        ScheduleInfo zone = info("zone");
        assertThat(zone.failing()).isTrue();
        assertThat(zone.errorCount()).isEqualTo(1);
        assertThat(zone.lastError()).hasValueSatisfying(e -> assertThat(e).contains("Mars/Olympus_Mons"));
        assertThat(info("spec").lastError())
                .hasValueSatisfying(e -> assertThat(e).contains("every-now-and-then"));
        assertThat(info(LONG_NAME).lastError())
                .hasValueSatisfying(e -> assertThat(e).contains("150 characters"));
        assertThat(info("tick").failing()).isFalse();

        // The next instant of tick: it fires again; the broken ones wait out their backoff meanwhile.
        Instant next = nextRunAt("tick");
        awaitDbClock(next);
        scheduler.fireDue();
        assertThat(nextRunAt("tick")).isAfter(next);
        assertThat(info("zone").errorCount())
                .as("still waiting out its backoff")
                .isEqualTo(1);
        assertThat(failed).hasSize(3);

        // Once its backoff is over it is tried again, and reported again: never silently stuck.
        try (Connection c = pool.getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "UPDATE " + schema + ".schedule SET retry_at = clock_timestamp() WHERE name = 'zone'")) {
            ps.executeUpdate();
        }
        scheduler.fireDue();
        assertThat(info("zone").errorCount()).as("retried").isEqualTo(2);
        assertThat(failed).hasSize(4);
        assertThat(jobsOfKind("tick")).hasSizeGreaterThanOrEqualTo(2);
        assertThat(jobsOfKind("broken")).isEmpty();
    }

    /**
     * A name too long for the keys of its jobs is refused when it is declared, naming the limit; so is a
     * sweep whose schedule name would be. Before S07 a 200-character name was accepted and then failed at
     * every firing (the check of these lengths was not there); without the checks nothing is thrown here
     * and each refusal assertion fails.
     */
    @Test
    void S07_namesTooLongForTheirDerivedKeysAreRefusedWhenDeclared() {
        Schedule longest = Schedule.every("s".repeat(Schedule.MAX_NAME_LENGTH), Duration.ofMinutes(1))
                .job("k", null);
        assertThat(longest.name()).hasSize(150);
        assertThatThrownBy(() -> Schedule.every("s".repeat(151), Duration.ofMinutes(1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("1 to 150 characters")
                .hasMessageContaining("151");
        assertThatThrownBy(() -> Schedule.cron("s".repeat(151), "* * * * *"))
                .hasMessageContaining("1 to 150 characters");
        assertThatThrownBy(() -> Baton.builder(appPool)
                        .sweep("w".repeat(Baton.MAX_SWEEP_NAME_LENGTH + 1), Duration.ofMinutes(1), ctx -> {}))
                .hasMessageContaining("sweep name must be 1 to 144 characters");
    }

    /** A schedule row as another version (or a corrupted table) left it, due a minute ago. */
    private void insertBroken(String name, String specKind, String spec, String zone) throws Exception {
        try (Connection c = pool.getConnection();
                PreparedStatement ps = c.prepareStatement("INSERT INTO " + schema
                        + ".schedule (name, owner_app, spec_kind, spec, time_zone, job_kind, job_queue, job_payload, job_priority, "
                        + "job_max_attempts, misfire_policy, misfire_threshold_ms, declared_by, definition_version, next_run_at) "
                        + "VALUES (?, 'svc', ?, ?, ?, 'broken', 'default', 'null', 50, 3, 'run_once', 60000, ARRAY['1'], '1', "
                        + "clock_timestamp() - interval '1 minute')")) {
            ps.setString(1, name);
            ps.setString(2, specKind);
            ps.setString(3, spec);
            ps.setString(4, zone);
            ps.executeUpdate();
        }
    }
}
