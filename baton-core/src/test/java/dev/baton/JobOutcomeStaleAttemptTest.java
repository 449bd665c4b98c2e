package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.internal.maintenance.Maintenance;
import dev.baton.internal.service.Hooks;
import dev.baton.testkit.PausePoints;
import java.io.IOException;
import java.time.Duration;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * J05 for the handler outcomes of issue 15: a stale attempt (its lease expired, the job rescued and claimed
 * again elsewhere) that snoozes or asks for a retry-after changes nothing; the new attempt's outcome stands.
 * Same setup as {@link JobStaleAttemptTest}: node A is stalled as a whole before its handler runs, its lease
 * expires on the database clock, the rescuer requeues the job, node B claims attempt 2 and is held; then A
 * resumes and its handler ends with the outcome under test; then B succeeds.
 */
class JobOutcomeStaleAttemptTest extends JobTestSupport {
    private final PausePoints pointsA = new PausePoints();
    private final PausePoints pointsB = new PausePoints();

    /**
     * Protection removed and seen failing: {@code AND j.attempt_token = t.token} in the snooze statement:
     * A's stale snooze changed the row of attempt 2 while it ran ("attempt 2 untouched by A" failed).
     */
    @Test
    void J05_staleSnoozeChangesNothing() throws Exception {
        run(new JobHandler.Snooze(Duration.ZERO));
    }

    /**
     * Protection removed and seen failing: {@code AND j.attempt_token = t.token} in the fail statement (which
     * records a retry-after): A's stale retry-after changed the row of attempt 2 while it ran ("attempt 2
     * untouched by A" failed).
     */
    @Test
    void J05_staleRetryAfterChangesNothing() throws Exception {
        run(new JobHandler.RetryAfter(Duration.ZERO, new IOException("429 from a stale attempt")));
    }

    private void run(RuntimeException staleOutcome) throws Exception {
        WorkerConfig config = fastWorker("default", 1).build();
        PausePoints.Pause aHandler = pointsA.arm(Hooks.Points.JOB_BEFORE_HANDLER);
        PausePoints.Pause aBeats = pointsA.armAll(Hooks.Points.JOB_HEARTBEAT_BEFORE_SEND);
        var aPool = ownPool("j05o-a", 8);
        Baton a = startNode(nodeBuilder("j05o-a", aPool, pointsA::reach)
                .worker(config)
                .handle(
                        "pay",
                        Payload.class,
                        (p, ctx) -> {
                            throw staleOutcome;
                        },
                        RetryPolicy.immediate()));
        closeLater(pointsA::releaseAll);

        long id = a.jobs()
                .enqueue(JobRequest.of("pay", new Payload(5)).maxAttempts(5))
                .id();
        aHandler.awaitReached(WAIT);
        aBeats.awaitReached(WAIT);
        assertThat(row(id).attempt()).isEqualTo(1);

        awaitLeaseExpired(id);
        Maintenance rescuer = rescuer(config, "j05o-rescuer");
        Awaitility.await().atMost(WAIT).pollInterval(Duration.ofMillis(20)).until(() -> {
            rescuer.rescueOnce();
            return !row(id).state().equals("running");
        });

        PausePoints.Pause bHandler = pointsB.arm(Hooks.Points.JOB_BEFORE_HANDLER);
        var bPool = ownPool("j05o-b", 8);
        startNode(nodeBuilder("j05o-b", bPool, pointsB::reach)
                .worker(config)
                .handle("pay", Payload.class, (p, ctx) -> {}, RetryPolicy.immediate()));
        closeLater(pointsB::releaseAll);
        bHandler.awaitReached(WAIT);
        JobRow attempt2 = row(id);
        assertThat(attempt2.state()).isEqualTo("running");
        assertThat(attempt2.attempt()).isEqualTo(2);

        PausePoints.Pause aRecorded = pointsA.arm(Hooks.Points.JOB_OUTCOMES_RECORDED);
        aHandler.release();
        aRecorded.awaitReached(WAIT); // A's completer sent its (stale) outcome, fenced by the token
        aRecorded.release();
        assertThat(row(id)).as("attempt 2 untouched by A").isEqualTo(attempt2);
        aBeats.release();

        bHandler.release();
        awaitState(id, "succeeded");
        JobInfo info = a.jobs().get(id).orElseThrow();
        assertThat(info.attempt()).isEqualTo(2);
        assertThat(info.errors()).as("only the stall; nothing of A's outcome").hasSize(1);
        assertThat(info.errors().get(0).errorClass()).isEqualTo("stalled");
    }
}
