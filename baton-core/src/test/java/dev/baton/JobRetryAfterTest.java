package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * {@link JobHandler.RetryAfter} (the handler's own delay before the next attempt) and a retry policy per
 * job ({@link JobRequest#retryPolicy}), which wins over the handler's.
 */
class JobRetryAfterTest extends JobBehaviourTestBase {
    private static final RetryPolicy ONE_HOUR = new RetryPolicy(Duration.ofHours(1), 1.0, Duration.ofHours(1), 0.0);

    /**
     * The next attempt is due no sooner than the given delay after the failure was recorded (database
     * clock), not after the handler policy's immediate retry; the attempt is used and its error is the cause.
     *
     * <p>Protection removed and seen failing: the handler's delay (JobExecutor's RetryAfter branch using the
     * policy's backoff, {@code retryOrFail}, instead of {@code e.delay()}): the job was retried at once, again
     * and again ("attempt 1" failed: it was at attempt 8 when first seen waiting).
     */
    @Test
    void theHandlersDelayReplacesThePolicysBackoff() throws Exception {
        Baton node = start(nodeBuilder("retry-after")
                .worker(fastWorker("default", 1).build())
                .handle(
                        "call",
                        Item.class,
                        (item, ctx) -> {
                            throw new JobHandler.RetryAfter(
                                    Duration.ofHours(1), new IOException("HTTP 429, Retry-After: 3600"));
                        },
                        RetryPolicy.immediate()));
        long id = node.jobs().enqueue(JobRequest.of("call", new Item("c"))).id();
        JobInfo waiting = awaitRetried(node.jobs(), id);
        assertThat(waiting.attempt()).isEqualTo(1);
        JobError e = waiting.errors().get(0);
        assertThat(e.errorClass()).isEqualTo(IOException.class.getName());
        assertThat(e.message()).isEqualTo("HTTP 429, Retry-After: 3600");
        assertThat(waiting.runAt()).isEqualTo(e.at().plus(Duration.ofHours(1)));
    }

    /** Retry-after uses attempts like any failure: after the last one the job ends failed. */
    @Test
    void theLastAttemptStillFails() throws Exception {
        Baton node = start(nodeBuilder("retry-after-last")
                .worker(fastWorker("default", 1).build())
                .handle("call", Item.class, (item, ctx) -> {
                    throw new JobHandler.RetryAfter(Duration.ZERO, null);
                }));
        long id = node.jobs()
                .enqueue(JobRequest.of("call", new Item("c")).maxAttempts(3))
                .id();
        JobInfo failed = awaitState(node.jobs(), id, JobState.FAILED);
        assertThat(failed.attempt()).isEqualTo(3);
        assertThat(failed.errors())
                .hasSize(3)
                .allSatisfy(err -> assertThat(err.errorClass()).isEqualTo(JobHandler.RetryAfter.class.getName()));
    }

    /**
     * A job's own retry policy wins over its handler's, both ways: an hour where the handler retries at
     * once, at once where the handler waits an hour. JobInfo shows it; metadata does not carry it.
     *
     * <p>Protection removed and seen failing: the per-job policy in JobExecutor.retryOrFail ({@code own}
     * ignored): the first job was due again at the failure's time instead of an hour later.
     */
    @Test
    void aJobsOwnRetryPolicyWinsOverItsHandlers() throws Exception {
        List<String> handlerMetadata = new CopyOnWriteArrayList<>();
        Baton node = start(nodeBuilder("own-policy")
                .worker(fastWorker("default", 1).build())
                .handle(
                        "patient",
                        Item.class,
                        (item, ctx) -> {
                            handlerMetadata.add(ctx.metadata().toString());
                            if (ctx.attempt() == 1) {
                                throw new IllegalStateException("first attempt fails");
                            }
                        },
                        RetryPolicy.immediate())
                .handle(
                        "hasty",
                        Item.class,
                        (item, ctx) -> {
                            if (ctx.attempt() == 1) {
                                throw new IllegalStateException("first attempt fails");
                            }
                        },
                        ONE_HOUR));
        Jobs jobs = node.jobs();
        long slow = jobs.enqueue(JobRequest.of("patient", new Item("s"))
                        .metadata("tenant", "t1")
                        .retryPolicy(ONE_HOUR))
                .id();
        long fast = jobs.enqueue(JobRequest.of("hasty", new Item("f")).retryPolicy(RetryPolicy.immediate()))
                .id();

        JobInfo waiting = awaitRetried(jobs, slow);
        // One instant is the failure's time and the base of its delay (the fail statement's
        // statement_timestamp()); read with a clock per column, they differed by 1.4 ms in CI.
        assertThat(waiting.runAt()).isEqualTo(waiting.errors().get(0).at().plus(Duration.ofHours(1)));
        assertThat(waiting.retryPolicy()).contains(ONE_HOUR);
        assertThat(waiting.metadata()).containsOnlyKeys("tenant");
        assertThat(handlerMetadata).containsExactly("{tenant=t1}");

        JobInfo done = awaitState(jobs, fast, JobState.SUCCEEDED);
        assertThat(done.attempt()).isEqualTo(2);
        assertThat(done.retryPolicy()).contains(RetryPolicy.immediate());
        long plain = jobs.enqueue(
                        JobRequest.of("hasty", new Item("p")).runAt(java.time.Instant.parse("2999-01-01T00:00:00Z")))
                .id();
        assertThat(jobs.get(plain).orElseThrow().retryPolicy()).isEmpty();
    }

    /** Out-of-range delays and a null policy are refused, naming what is allowed. */
    @Test
    void badInputIsRefused() {
        for (Duration bad :
                new Duration[] {null, Duration.ofMillis(-1), Duration.ofDays(30).plusMillis(1)}) {
            assertThatThrownBy(() -> new JobHandler.RetryAfter(bad, null))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage(
                            "retry-after delay must be between zero and PT720H (JobHandler.MAX_DELAY), but was " + bad);
        }
        assertThatThrownBy(() -> JobRequest.of("call", null).retryPolicy(null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("retryPolicy must be set");
    }

    /** Waits until the job's first failure is recorded and it waits for its next attempt. */
    private JobInfo awaitRetried(Jobs jobs, long id) {
        Awaitility.await().atMost(WAIT).pollInterval(Duration.ofMillis(20)).until(() -> {
            JobInfo j = jobs.get(id).orElseThrow();
            return j.state() == JobState.AVAILABLE && !j.errors().isEmpty();
        });
        return jobs.get(id).orElseThrow();
    }
}
