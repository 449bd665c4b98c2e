package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * J08: a handler that throws is retried with backoff; after max attempts the job is failed with every
 * error kept. A permanent failure fails at once; {@link Jobs#retry(long)} brings a failed job back.
 */
class JobRetryTest extends JobBehaviourTestBase {
    /** 40 ms doubling, no jitter: the delays after attempts 1, 2, 3 are 40, 80, 160 ms exactly. */
    private static final RetryPolicy BACKOFF = new RetryPolicy(Duration.ofMillis(40), 2.0, Duration.ofSeconds(2), 0.0);

    /** What attempt n's handler saw: the job's run_at (when it was due) and the database clock. */
    record Seen(int attempt, Instant runAt, Instant dbNow) {}

    /**
     * Protections removed and seen failing: the retry delay (the fail statement's run_at set to
     * clock_timestamp() without {@code + delay}): the retry was due no later than the failure, "retry 2
     * due after the failure of attempt 1" failed; keeping every error (the fail statement's {@code errors = j.errors || ...} replaced by
     * only the new error): "every error kept" failed with one error left.
     */
    @Test
    void J08_throwingHandlerIsRetriedWithBackoffThenFailsWithEveryErrorKept() throws Exception {
        List<Seen> seen = new CopyOnWriteArrayList<>();
        Baton node = start(nodeBuilder("j08-node")
                .worker(fastWorker("default", 2).build())
                .handle(
                        "flaky",
                        Item.class,
                        (item, ctx) -> {
                            seen.add(seenNow(ctx.jobId(), ctx.attempt()));
                            throw new IllegalStateException("flaky failed on attempt " + ctx.attempt());
                        },
                        BACKOFF));
        Jobs jobs = node.jobs();
        long id = jobs.enqueue(JobRequest.of("flaky", new Item("f")).maxAttempts(4))
                .id();

        JobInfo failed = awaitState(jobs, id, JobState.FAILED);
        assertThat(failed.attempt()).isEqualTo(4);
        assertThat(failed.finishedAt()).isPresent();
        List<JobError> errors = failed.errors();
        assertThat(errors).as("every error kept").hasSize(4);
        for (int i = 0; i < errors.size(); i++) {
            JobError e = errors.get(i);
            assertThat(e.attempt()).isEqualTo(i + 1);
            assertThat(e.errorClass()).isEqualTo(IllegalStateException.class.getName());
            assertThat(e.message()).isEqualTo("flaky failed on attempt " + (i + 1));
            assertThat(e.stack()).contains("IllegalStateException").contains("JobRetryTest");
            assertThat(e.node()).isEqualTo("j08-node");
            assertThat(e.at()).isNotNull();
            if (i > 0) {
                assertThat(e.at()).isAfter(errors.get(i - 1).at());
            }
        }
        assertThat(seen).extracting(Seen::attempt).containsExactly(1, 2, 3, 4);
        for (int n = 2; n <= 4; n++) {
            Seen retry = seen.get(n - 1);
            Instant previousFailure = errors.get(n - 2).at();
            Duration backoff = BACKOFF.delayAfter(n - 1);
            assertThat(retry.runAt())
                    .as("retry %d due after the failure of attempt %d", n, n - 1)
                    .isAfter(previousFailure);
            // run_at = statement_timestamp() + delay, and the error's 'at' is that same instant. With
            // clock_timestamp() per column (as before) this failed: 0.039983S, not 0.04S.
            assertThat(Duration.between(previousFailure, retry.runAt()))
                    .as("retry %d due the backoff (%s) after the failure", n, backoff)
                    .isEqualTo(backoff);
            assertThat(retry.dbNow())
                    .as("attempt %d did not run before it was due", n)
                    .isAfterOrEqualTo(retry.runAt());
        }
    }

    /**
     * Protection removed and seen failing: the PermanentFailure branch in Worker.runHandler (so it was
     * handled like any exception): the job was retried, "attempt 1 only" failed.
     */
    @Test
    void J08_permanentFailureFailsAtOnceWithoutRetry() throws Exception {
        AtomicInteger calls = new AtomicInteger();
        Baton node = start(nodeBuilder("j08-node")
                .worker(fastWorker("default", 2).build())
                .handle(
                        "doomed",
                        Item.class,
                        (item, ctx) -> {
                            calls.incrementAndGet();
                            throw new JobHandler.PermanentFailure("the account " + item.name() + " is closed");
                        },
                        RetryPolicy.immediate())
                .handle("marker", Item.class, (item, ctx) -> {}));
        Jobs jobs = node.jobs();
        long id = jobs.enqueue(JobRequest.of("doomed", new Item("acc-1")).maxAttempts(5))
                .id();
        JobInfo failed = awaitState(jobs, id, JobState.FAILED);
        assertThat(failed.attempt()).as("attempt 1 only").isEqualTo(1);
        assertThat(failed.errors()).singleElement().satisfies(e -> {
            assertThat(e.errorClass()).isEqualTo(JobHandler.PermanentFailure.class.getName());
            assertThat(e.message()).isEqualTo("the account acc-1 is closed");
            assertThat(e.attempt()).isEqualTo(1);
            assertThat(e.stack()).contains("PermanentFailure");
        });
        // FAILED is final: a later job has run and the failed one was not attempted again.
        awaitState(jobs, jobs.enqueue(JobRequest.of("marker", new Item("m"))).id(), JobState.SUCCEEDED);
        assertThat(calls.get()).isEqualTo(1);
        assertThat(jobs.get(id).orElseThrow().state()).isEqualTo(JobState.FAILED);
    }

    /**
     * Jobs.retry brings a failed job back: it runs again (one more attempt allowed) and succeeds; its
     * earlier error is kept. Retrying a job that is not failed or cancelled does nothing.
     *
     * <p>Protection removed and seen failing: {@code max_attempts = greatest(max_attempts, attempt + 1)}
     * in the retry statement: the job came back with max_attempts 1 and ran as attempt 2 beyond its
     * limit (had it failed again, it would have been given no further retry); "one more attempt
     * allowed" (maxAttempts 2) failed.
     */
    @Test
    void J08_retryBringsFailedJobBackAndItRuns() throws Exception {
        Map<Integer, Boolean> ran = new ConcurrentHashMap<>();
        Baton node = start(nodeBuilder("j08-node")
                .worker(fastWorker("default", 2).build())
                .handle(
                        "once-broken",
                        Item.class,
                        (item, ctx) -> {
                            ran.put(ctx.attempt(), true);
                            if (ctx.attempt() == 1) {
                                throw new IllegalArgumentException("bad data, fixed by an operator later");
                            }
                        },
                        RetryPolicy.immediate()));
        Jobs jobs = node.jobs();
        long id = jobs.enqueue(JobRequest.of("once-broken", new Item("x")).maxAttempts(1))
                .id();
        JobInfo failed = awaitState(jobs, id, JobState.FAILED);
        assertThat(failed.attempt()).isEqualTo(1);
        assertThat(jobs.retry(id)).isTrue();
        JobInfo done = awaitState(jobs, id, JobState.SUCCEEDED);
        assertThat(done.attempt()).isEqualTo(2);
        assertThat(done.maxAttempts()).as("one more attempt allowed").isEqualTo(2);
        assertThat(done.errors())
                .singleElement()
                .satisfies(e -> assertThat(e.message()).isEqualTo("bad data, fixed by an operator later"));
        assertThat(ran).containsOnlyKeys(1, 2);
        assertThat(jobs.retry(id)).as("a succeeded job is not retried").isFalse();
        assertThat(jobs.retry(Long.MAX_VALUE)).as("unknown job").isFalse();
        assertThat(jobs.get(id).orElseThrow().state()).isEqualTo(JobState.SUCCEEDED);
    }

    private Seen seenNow(long id, int attempt) throws Exception {
        try (Connection c = pool.getConnection();
                PreparedStatement ps =
                        c.prepareStatement("SELECT run_at, clock_timestamp() FROM " + schema + ".job WHERE id = ?")) {
            ps.setLong(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return new Seen(
                        attempt,
                        rs.getTimestamp(1).toInstant(),
                        rs.getTimestamp(2).toInstant());
            }
        }
    }
}
