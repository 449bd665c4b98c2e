package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.internal.db.Jdbc;
import dev.baton.internal.job.JobErrors;
import dev.baton.internal.service.Hooks;
import dev.baton.testkit.PausePoints;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * J15: a handler fails with an error whose message holds NUL bytes, lone surrogates and megabytes of
 * text, in the same completion batch as other outcomes. Every other outcome in the batch is recorded as
 * it happened; the bad error is kept, cleaned and truncated.
 */
class JobErrorRecordTest extends JobBehaviourTestBase {

    /**
     * Protection removed and seen failing: the cleaning in {@code JobErrors.clean} (messages passed
     * through as they are, as the hand-written error JSON did before): PostgreSQL refused the batch's
     * fail statement ("unsupported Unicode escape sequence"), the other failure in the same batch was
     * not recorded either (it stayed running until its lease expired: "recorded as it happened" failed).
     * {@link JobErrorsTest} covers the cleaning itself, and the next test the fallback for an error the
     * database refuses even so.
     */
    @Test
    void J15_aBadErrorNeverSinksTheOtherOutcomesOfItsBatch() throws Exception {
        String poison =
                "nul\u0000byte, lone \uD800 high and \uDC00 low surrogates, then " + "x".repeat(3 * 1024 * 1024);
        Baton node = start(nodeBuilder("j15")
                .worker(fastWorker("default", 8).build())
                .handle("warm-up", Item.class, (item, ctx) -> {})
                .handle("ok", Item.class, (item, ctx) -> {})
                .handle("plain-failure", Item.class, (item, ctx) -> {
                    throw new IllegalStateException("an ordinary failure");
                })
                .handle("poison", Item.class, (item, ctx) -> {
                    throw new IllegalStateException(poison);
                }));
        Jobs jobs = node.jobs();
        List<Long> ids = inOneBatch(
                node,
                JobRequest.of("ok", new Item("1")),
                JobRequest.of("ok", new Item("2")),
                JobRequest.of("plain-failure", new Item("3")).maxAttempts(1),
                JobRequest.of("poison", new Item("4")).maxAttempts(1));

        assertThat(awaitState(jobs, ids.get(0), JobState.SUCCEEDED).attempt()).isEqualTo(1);
        assertThat(awaitState(jobs, ids.get(1), JobState.SUCCEEDED).attempt()).isEqualTo(1);
        assertRecordedAsItHappened(jobs, ids.get(2));
        JobInfo poisoned = awaitState(jobs, ids.get(3), JobState.FAILED);
        assertThat(poisoned.stallCount()).isZero();
        assertThat(poisoned.errors()).singleElement().satisfies(e -> {
            assertThat(e.errorClass()).isEqualTo(IllegalStateException.class.getName());
            assertThat(e.message())
                    .startsWith("nul\uFFFDbyte, lone \uFFFD high and \uFFFD low surrogates, then xxx")
                    .endsWith("(trimmed)")
                    .hasSizeLessThanOrEqualTo(JobErrors.MAX_MESSAGE_CHARS);
            assertThat(e.stack()).hasSizeLessThanOrEqualTo(JobErrors.MAX_STACK_CHARS);
        });
    }

    /**
     * An error the database refuses although it was cleaned (here a trigger refuses it, as a constraint or
     * an extension could): the other outcomes of the batch are recorded one by one, and the refused
     * attempt ends failed with a record that says its error could not be stored. Protection removed and
     * seen failing: the one-by-one fallback of {@code Worker.record} (the batch's error rethrown): the
     * ordinary failure in the same batch was not recorded and "recorded as it happened" failed.
     */
    @Test
    void J15_anErrorTheDatabaseRefusesIsRecordedWithoutItAndTheOthersAsTheyHappened() throws Exception {
        try (Connection c = pool.getConnection()) {
            Jdbc.execute(
                    c,
                    "CREATE FUNCTION " + schema + ".refuse_error() RETURNS trigger LANGUAGE plpgsql AS $$ "
                            + "BEGIN RAISE EXCEPTION 'this error cannot be stored' USING ERRCODE = '22000'; END $$");
            Jdbc.execute(
                    c,
                    "CREATE TRIGGER refuse_error BEFORE UPDATE ON " + schema + ".job FOR EACH ROW "
                            + "WHEN (NEW.errors::text LIKE '%refuse-me%') EXECUTE FUNCTION " + schema
                            + ".refuse_error()");
        }
        Baton node = start(nodeBuilder("j15-refused")
                .worker(fastWorker("default", 8).build())
                .handle("warm-up", Item.class, (item, ctx) -> {})
                .handle("ok", Item.class, (item, ctx) -> {})
                .handle("plain-failure", Item.class, (item, ctx) -> {
                    throw new IllegalStateException("an ordinary failure");
                })
                .handle("refused", Item.class, (item, ctx) -> {
                    throw new IllegalStateException("refuse-me");
                }));
        Jobs jobs = node.jobs();
        List<Long> ids = inOneBatch(
                node,
                JobRequest.of("ok", new Item("1")),
                JobRequest.of("plain-failure", new Item("2")).maxAttempts(1),
                JobRequest.of("refused", new Item("3")).maxAttempts(1));

        assertThat(awaitState(jobs, ids.get(0), JobState.SUCCEEDED).attempt()).isEqualTo(1);
        assertRecordedAsItHappened(jobs, ids.get(1));
        JobInfo refused = awaitState(jobs, ids.get(2), JobState.FAILED);
        assertThat(refused.stallCount()).as("recorded, not rescued").isZero();
        assertThat(refused.errors()).singleElement().satisfies(e -> {
            assertThat(e.errorClass()).isEqualTo("unrecordable");
            assertThat(e.message()).contains("could not be stored").contains("this error cannot be stored");
        });
    }

    /**
     * Enqueues {@code requests} so that their outcomes are recorded in one batch: a first job's outcome
     * parks the completer until every one of them has finished. Returns their ids, in order.
     */
    private List<Long> inOneBatch(Baton node, JobRequest... requests) {
        PausePoints.Pause completer = points.arm(Hooks.Points.JOB_OUTCOMES_BEFORE_RECORD);
        node.jobs().enqueue(JobRequest.of("warm-up", new Item("w")));
        completer.awaitReached(WAIT);
        List<Long> ids = new ArrayList<>();
        for (JobRequest r : requests) {
            ids.add(node.jobs().enqueue(r).id());
        }
        org.awaitility.Awaitility.await().atMost(WAIT).until(() -> node.pendingOutcomes() == requests.length);
        completer.release();
        return ids;
    }

    private void assertRecordedAsItHappened(Jobs jobs, long id) {
        JobInfo ordinary = awaitState(jobs, id, JobState.FAILED);
        assertThat(ordinary.stallCount())
                .as("recorded as it happened, not rescued")
                .isZero();
        assertThat(ordinary.errors())
                .singleElement()
                .satisfies(e -> assertThat(e.message()).isEqualTo("an ordinary failure"));
    }
}
