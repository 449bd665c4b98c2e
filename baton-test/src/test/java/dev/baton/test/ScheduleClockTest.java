package dev.baton.test;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.Baton;
import dev.baton.JobState;
import dev.baton.Schedule;
import dev.baton.WorkerConfig;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** The schedule clock: nothing before the due instant, one job per due instant when the clock reaches it. */
@BatonTest
class ScheduleClockTest {
    record Report(String name) {}

    Baton baton;
    final AtomicInteger reports = new AtomicInteger();

    @BeforeEach
    void build(BatonTestDatabase db) {
        baton = db.batonBuilder()
                .application("clock-test", "1.0.0")
                .worker(WorkerConfig.builder().queue("default", 1).build())
                .handle("report.hourly", Report.class, (r, ctx) -> reports.incrementAndGet())
                .schedule(
                        Schedule.every("hourly-report", Duration.ofHours(1)).job("report.hourly", new Report("sales")))
                .build(); // not started: only the clock fires the schedule
    }

    @AfterEach
    void close() {
        baton.close();
    }

    @Test
    void advancingToTheNextDueInstantEnqueuesOneJobOfTheSchedule() {
        ScheduleClock clock = ScheduleClock.of(baton);
        Instant due = clock.nextDue().orElseThrow();
        assertThat(due).isAfter(clock.now());

        List<EnqueuedJob> fired = clock.advanceToNextDue();

        assertThat(fired).hasSize(1);
        assertThat(fired.get(0).kind()).isEqualTo("report.hourly");
        assertThat(fired.get(0).payloadJson()).isEqualTo("{\"name\": \"sales\"}");
        assertThat(clock.now()).isEqualTo(due);
        assertThat(clock.nextDue()).contains(due.plus(Duration.ofHours(1)));
        // At the same instant again: nothing more is due.
        assertThat(clock.advanceBy(Duration.ZERO)).isEmpty();
        // The next instant: one more job.
        assertThat(clock.advanceToNextDue()).hasSize(1);
    }

    @Test
    void nothingFiresBeforeTheDueInstant() {
        ScheduleClock clock = ScheduleClock.of(baton);
        Instant due = clock.nextDue().orElseThrow();

        assertThat(clock.advanceTo(due.minusMillis(1))).isEmpty();
        assertThat(BatonAssertions.enqueued(EnqueuedJobs.of(baton), "report.hourly", Report.class))
                .isEmpty();
        assertThat(clock.advanceTo(due)).hasSize(1);
    }

    @Test
    void theFiredJobRunsInline() {
        ScheduleClock clock = ScheduleClock.of(baton);
        long id = clock.advanceToNextDue().get(0).id();

        InlineRun run = InlineWorker.of(baton).runDue();

        // The class's tests share its schema: jobs fired by the others run too.
        assertThat(run.succeeded()).contains(id);
        assertThat(reports).hasValue(run.succeeded().size());
        assertThat(baton.jobs().get(id).orElseThrow().state()).isEqualTo(JobState.SUCCEEDED);
    }
}
