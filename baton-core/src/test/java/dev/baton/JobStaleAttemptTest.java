package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.internal.maintenance.Maintenance;
import dev.baton.internal.service.Hooks;
import dev.baton.testkit.PausePoints;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * J05: a stale attempt (its lease expired, the job rescued and claimed again elsewhere) tries to
 * record its outcome while the new attempt is running. Every outcome path is fenced by the attempt
 * token, so the stale one changes nothing and the new attempt's outcome stands.
 *
 * <p>Setup common to the tests: node A claims attempt 1 and is stalled as a whole (its handler
 * thread at {@code JOB_BEFORE_HANDLER}, its heartbeater at {@code JOB_HEARTBEAT_BEFORE_SEND}, so it
 * neither beats nor self-stops, like a process in a long GC pause). Its lease expires on the database
 * clock, the rescuer requeues the job, node B claims attempt 2 and is held before its handler. Then A
 * resumes and tries to finish attempt 1; then B finishes attempt 2.
 */
class JobStaleAttemptTest extends JobTestSupport {
    enum StaleOutcome {
        BATCHED_SUCCESS,
        TRANSACTION,
        FAILURE
    }

    private final PausePoints pointsA = new PausePoints();
    private final PausePoints pointsB = new PausePoints();

    /**
     * J05 (complete, batched path): A's handler returns normally; the completer's batched completion
     * for attempt 1 must match nothing. B's attempt 2 then fails permanently, and the job ends failed.
     *
     * <p>Protection removed to see it fail: {@code AND j.attempt_token = t.token} in the complete
     * statement ({@code job.sql}, name: complete). A's success then completed the job while attempt 2
     * was running: the job ended succeeded, not failed, and attempt 2's failure was lost.
     */
    @Test
    void J05_staleBatchedSuccessIsRejectedByAttemptToken() throws Exception {
        run(StaleOutcome.BATCHED_SUCCESS);
    }

    /**
     * J05 (complete, transactional path): A's {@code ctx.transaction} (rows + completion) is refused by
     * the fence; B's transaction commits its row and the completion.
     *
     * <p>Protection removed to see it fail: the attempt token in the fence ({@code job.sql}, name:
     * fence_attempt: {@code attempt_token = ?} → {@code (attempt_token = ? OR true)}). A's transaction
     * then committed its row and completed the job; B's transaction was refused: the effect row was
     * attempt 1's and the assertions on the effect rows failed.
     */
    @Test
    void J05_staleTransactionIsRejectedByAttemptToken() throws Exception {
        run(StaleOutcome.TRANSACTION);
    }

    /**
     * J05 (fail path): A's handler throws, so the completer records a retryable failure for attempt 1;
     * it must match nothing. B's attempt 2 succeeds and no error of attempt 1's handler is recorded.
     *
     * <p>Protection removed to see it fail: {@code AND j.attempt_token = t.token} in the fail
     * statement ({@code job.sql}, name: fail). A's failure then put the job back to available with its
     * error while attempt 2 was running; B's completion was refused and the job ran a third time: the
     * assertions on attempt and errors failed.
     */
    @Test
    void J05_staleFailureIsRejectedByAttemptToken() throws Exception {
        run(StaleOutcome.FAILURE);
    }

    private void run(StaleOutcome mode) throws Exception {
        createEffectTable(false);
        WorkerConfig config = fastWorker("default", 1).build();
        CompletableFuture<Throwable> aTransaction = new CompletableFuture<>();

        PausePoints.Pause aHandler = pointsA.arm(Hooks.Points.JOB_BEFORE_HANDLER);
        PausePoints.Pause aBeats = pointsA.armAll(Hooks.Points.JOB_HEARTBEAT_BEFORE_SEND);
        var aPool = ownPool("j05-a", 8);
        Baton a = startNode(nodeBuilder("j05-a", aPool, pointsA::reach)
                .worker(config)
                .handle(
                        "pay",
                        Payload.class,
                        (p, ctx) -> {
                            switch (mode) {
                                case BATCHED_SUCCESS -> {} // return normally: batched completion
                                case TRANSACTION -> {
                                    try {
                                        ctx.transaction(tx -> {
                                            insertEffect(tx, ctx.jobId(), ctx.attempt(), "j05-a", 0);
                                            return null;
                                        });
                                        aTransaction.complete(null);
                                    } catch (RuntimeException e) {
                                        aTransaction.complete(e);
                                        throw e;
                                    }
                                }
                                case FAILURE -> throw new IllegalStateException("stale attempt fails");
                            }
                        },
                        RetryPolicy.immediate()));
        closeLater(pointsA::releaseAll); // closed before node A, so A's parked threads can stop

        long id = a.jobs()
                .enqueue(JobRequest.of("pay", new Payload(5)).maxAttempts(5))
                .id();
        aHandler.awaitReached(WAIT);
        aBeats.awaitReached(WAIT);
        JobRow attempt1 = row(id);
        assertThat(attempt1.claimedBy()).isEqualTo("j05-a");
        assertThat(attempt1.attempt()).isEqualTo(1);

        // A is stalled: its lease expires on the database clock and the rescuer requeues the job.
        awaitLeaseExpired(id);
        Maintenance rescuer = rescuer(config, "j05-rescuer");
        Awaitility.await().atMost(WAIT).pollInterval(Duration.ofMillis(20)).until(() -> {
            rescuer.rescueOnce();
            return !row(id).state().equals("running");
        });

        // B claims attempt 2 and is held before its handler.
        PausePoints.Pause bHandler = pointsB.arm(Hooks.Points.JOB_BEFORE_HANDLER);
        var bPool = ownPool("j05-b", 8);
        startNode(nodeBuilder("j05-b", bPool, pointsB::reach)
                .worker(config)
                .handle(
                        "pay",
                        Payload.class,
                        (p, ctx) -> {
                            if (mode == StaleOutcome.BATCHED_SUCCESS) {
                                throw new JobHandler.PermanentFailure("attempt 2 says no");
                            }
                            ctx.transaction(tx -> {
                                insertEffect(tx, ctx.jobId(), ctx.attempt(), "j05-b", 0);
                                return null;
                            });
                        },
                        RetryPolicy.immediate()));
        closeLater(pointsB::releaseAll);
        bHandler.awaitReached(WAIT);
        JobRow attempt2 = row(id);
        assertThat(attempt2.state()).isEqualTo("running");
        assertThat(attempt2.attempt()).isEqualTo(2);
        assertThat(attempt2.claimedBy()).isEqualTo("j05-b");
        assertThat(attempt2.token()).isNotEqualTo(attempt1.token());

        // A resumes and tries to finish attempt 1 while attempt 2 runs.
        if (mode == StaleOutcome.TRANSACTION) {
            aHandler.release();
            assertThat(aTransaction.get(WAIT.toMillis(), TimeUnit.MILLISECONDS))
                    .as("A's completion transaction")
                    .isInstanceOf(AttemptLostException.class);
        } else {
            PausePoints.Pause aRecorded = pointsA.arm(Hooks.Points.JOB_OUTCOMES_RECORDED);
            aHandler.release();
            aRecorded.awaitReached(WAIT); // A's completer sent its (stale) outcome, fenced by token
            aRecorded.release();
        }
        assertThat(row(id)).as("attempt 2 untouched by A").isEqualTo(attempt2);
        assertThat(count("SELECT count(*) FROM " + schema + ".effect"))
                .as("A wrote nothing")
                .isZero();
        aBeats.release();

        // B finishes attempt 2; its outcome is the job's.
        bHandler.release();
        String expected = mode == StaleOutcome.BATCHED_SUCCESS ? "failed" : "succeeded";
        awaitState(id, expected);
        JobInfo info = a.jobs().get(id).orElseThrow();
        assertThat(info.attempt()).isEqualTo(2);
        assertThat(info.stallCount()).isEqualTo(1);
        assertThat(info.errors()).first().satisfies(e -> {
            assertThat(e.errorClass()).isEqualTo("stalled");
            assertThat(e.attempt()).isEqualTo(1);
        });
        if (mode == StaleOutcome.BATCHED_SUCCESS) {
            assertThat(info.errors()).hasSize(2).last().satisfies(e -> {
                assertThat(e.attempt()).isEqualTo(2);
                assertThat(e.node()).isEqualTo("j05-b");
                assertThat(e.message()).isEqualTo("attempt 2 says no");
            });
            assertThat(count("SELECT count(*) FROM " + schema + ".effect")).isZero();
        } else {
            assertThat(info.errors()).hasSize(1);
            assertThat(count("SELECT count(*) FROM " + schema + ".effect")).isEqualTo(1);
            assertThat(count("SELECT count(*) FROM " + schema + ".effect WHERE attempt = 2 AND node = 'j05-b'"))
                    .isEqualTo(1);
        }
    }
}
