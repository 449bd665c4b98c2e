package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.testkit.PausePoints;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
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
     * With the cleaning kept and the one-by-one fallback of {@code Worker.record} removed, a message the
     * database still refuses would sink the batch the same way; {@link JobErrorsTest} covers the cleaning.
     */
    @Test
    void J15_aBadErrorNeverSinksTheOtherOutcomesOfItsBatch() throws Exception {
        CountDownLatch warmUpStarted = new CountDownLatch(1);
        String poison = "nul\u0000byte, lone \uD800 high and \uDC00 low surrogates, then "
                + "x".repeat(3 * 1024 * 1024);
        Baton node = start(nodeBuilder("j15").worker(fastWorker("default", 8).build())
                .handle("warm-up", Item.class, (item, ctx) -> warmUpStarted.countDown())
                .handle("ok", Item.class, (item, ctx) -> { })
                .handle("plain-failure", Item.class, (item, ctx) -> {
                    throw new IllegalStateException("an ordinary failure");
                })
                .handle("poison", Item.class, (item, ctx) -> {
                    throw new IllegalStateException(poison);
                }));
        Jobs jobs = node.jobs();
        // The first outcome parks the completer, so that the next four end up in one batch.
        PausePoints.Pause completer = points.arm(Hooks.Points.JOB_OUTCOMES_BEFORE_RECORD);
        long warmUp = jobs.enqueue(JobRequest.of("warm-up", new Item("w"))).id();
        completer.awaitReached(WAIT);
        long ok1 = jobs.enqueue(JobRequest.of("ok", new Item("1"))).id();
        long ok2 = jobs.enqueue(JobRequest.of("ok", new Item("2"))).id();
        long plain = jobs.enqueue(JobRequest.of("plain-failure", new Item("3")).maxAttempts(1)).id();
        long bad = jobs.enqueue(JobRequest.of("poison", new Item("4")).maxAttempts(1)).id();
        org.awaitility.Awaitility.await().atMost(WAIT).until(() -> node.pendingOutcomes() == 4);
        completer.release();

        assertThat(awaitState(jobs, warmUp, JobState.SUCCEEDED).attempt()).isEqualTo(1);
        assertThat(awaitState(jobs, ok1, JobState.SUCCEEDED).attempt()).isEqualTo(1);
        assertThat(awaitState(jobs, ok2, JobState.SUCCEEDED).attempt()).isEqualTo(1);
        JobInfo ordinary = awaitState(jobs, plain, JobState.FAILED);
        assertThat(ordinary.stallCount()).as("recorded as it happened, not rescued").isZero();
        assertThat(ordinary.errors()).singleElement().satisfies(e -> assertThat(e.message()).isEqualTo("an ordinary failure"));
        JobInfo poisoned = awaitState(jobs, bad, JobState.FAILED);
        assertThat(poisoned.stallCount()).isZero();
        assertThat(poisoned.errors()).singleElement().satisfies(e -> {
            assertThat(e.errorClass()).isEqualTo(IllegalStateException.class.getName());
            assertThat(e.message()).startsWith("nul\uFFFDbyte, lone \uFFFD high and \uFFFD low surrogates, then xxx")
                    .endsWith("(trimmed)").hasSizeLessThanOrEqualTo(JobErrors.MAX_MESSAGE_CHARS);
            assertThat(e.stack()).hasSizeLessThanOrEqualTo(JobErrors.MAX_STACK_CHARS);
        });
        assertThat(warmUpStarted.getCount()).isZero();
    }
}
