package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import dev.baton.internal.schedule.Scheduler;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * The operator API of schedules: {@code list()} with next run, last run and the last run's job
 * state; {@code pause}, {@code resume}, {@code trigger}. A worker node runs the jobs; the test holds
 * the scheduler's lease so no node fires, and fires itself with {@link Scheduler#fireDue()}.
 */
class SchedulesApiTest extends ScheduleTestSupport {
    private static final Duration EVERY = Duration.ofMillis(300);

    @Test
    void listPauseResumeTrigger() throws Exception {
        blockNodeSchedulers();
        HikariDataSource ds = closeLater(PG.newPool("api-node", 8));
        Baton node = startNode(nodeBuilder("api-node", ds)
                .application("svc", "3")
                .worker(fastWorker("default", 2).build())
                .schedule(Schedule.every("api", EVERY)
                        .job("api.job", java.util.Map.of("k", 1))
                        .priority(7))
                .handle("api.job", Object.class, (p, ctx) -> {}));
        Schedules api = node.schedules();
        Scheduler scheduler = scheduler(pool, "svc");

        ScheduleInfo declared = info("api");
        assertThat(declared.ownerApp()).isEqualTo("svc");
        assertThat(declared.specKind()).isEqualTo("interval");
        assertThat(declared.spec()).isEqualTo("300");
        assertThat(declared.timeZone()).isEqualTo("UTC");
        assertThat(declared.jobKind()).isEqualTo("api.job");
        assertThat(declared.queue()).isEqualTo("default");
        assertThat(declared.misfirePolicy()).isEqualTo("run_once");
        assertThat(declared.allowOverlap()).isFalse();
        assertThat(declared.enabled()).isTrue();
        assertThat(declared.paused()).isFalse();
        assertThat(declared.declaredBy()).containsExactly("3");
        assertThat(declared.definitionVersion()).isEqualTo("3");
        assertThat(declared.lastDueAt()).isEmpty();
        assertThat(declared.lastFiredAt()).isEmpty();
        assertThat(declared.lastJobId()).isEmpty();
        assertThat(declared.lastJobState()).isEmpty();
        assertThat(declared.misfiredTotal()).isZero();
        assertThat(declared.nextRunAt().toEpochMilli() % EVERY.toMillis()).isZero();

        // Fire the first instant: the last run, its job and (once the worker ran it) the job's state.
        Instant first = declared.nextRunAt();
        awaitDbClock(first);
        assertThat(scheduler.fireDue()).isGreaterThanOrEqualTo(1);
        ScheduleInfo fired = info("api");
        Instant lastDue = fired.lastDueAt().orElseThrow();
        assertThat(lastDue).isAfterOrEqualTo(first);
        assertThat(fired.nextRunAt()).isEqualTo(lastDue.plus(EVERY));
        assertThat(fired.lastFiredAt()).hasValueSatisfying(t -> assertThat(t).isAfterOrEqualTo(lastDue));
        long lastJob = fired.lastJobId().orElseThrow();
        JobInfo job = jobsApi().get(lastJob).orElseThrow();
        assertThat(job.idempotencyKey()).contains(Schedule.idempotencyKey("api", lastDue));
        assertThat(job.concurrencyKey()).contains("schedule:api");
        assertThat(job.priority()).isEqualTo(7);
        assertThat(job.payloadJson()).contains("\"k\"");
        Awaitility.await()
                .atMost(WAIT)
                .pollInterval(Duration.ofMillis(20))
                .until(() -> info("api").lastJobState().orElse(null) == JobState.SUCCEEDED);

        // Pause: nothing fires, the next run stays where it was, however much time passes.
        assertThat(api.pause("api")).isTrue();
        assertThat(info("api").paused()).isTrue();
        Instant pausedNext = fired.nextRunAt();
        awaitDbClock(pausedNext.plus(EVERY.multipliedBy(3)));
        assertThat(scheduler.fireDue()).isZero();
        assertThat(info("api").nextRunAt()).isEqualTo(pausedNext);
        int jobsWhilePaused = jobsOfKind("api.job").size();

        // Resume: the instants missed while paused are within the default 1-minute threshold, so fire.
        assertThat(api.resume("api")).isTrue();
        assertThat(info("api").paused()).isFalse();
        int caughtUp = scheduler.fireDue();
        assertThat(caughtUp).isGreaterThanOrEqualTo(4);
        List<Instant> instants = firedInstants("api", "api.job");
        assertThat(instants)
                .hasSize(jobsWhilePaused + caughtUp)
                .doesNotHaveDuplicates()
                .containsAll(grid(pausedNext, info("api").nextRunAt(), EVERY));

        // Trigger: a job now, outside the timetable, which does not move the next run.
        Instant nextBefore = info("api").nextRunAt();
        EnqueueResult manual = api.trigger("api");
        assertThat(manual.created()).isTrue();
        JobInfo m = jobsApi().get(manual.id()).orElseThrow();
        assertThat(m.kind()).isEqualTo("api.job");
        assertThat(m.idempotencyKey()).hasValueSatisfying(k -> assertThat(k).startsWith("schedule:api:manual:"));
        assertThat(m.concurrencyKey()).contains("schedule:api");
        assertThat(m.priority()).isEqualTo(7);
        assertThat(info("api").nextRunAt()).isEqualTo(nextBefore);
        Awaitility.await()
                .atMost(WAIT)
                .pollInterval(Duration.ofMillis(20))
                .until(() -> jobsApi().get(manual.id()).orElseThrow().state() == JobState.SUCCEEDED);

        // Unknown names.
        assertThat(api.pause("nope")).isFalse();
        assertThat(api.resume("nope")).isFalse();
        assertThatThrownBy(() -> api.trigger("nope"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("no schedule named 'nope'");
    }
}
