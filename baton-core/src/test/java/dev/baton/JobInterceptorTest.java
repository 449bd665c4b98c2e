package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/** Job metadata, interceptors around enqueue and execution, and the MDC Baton sets for handlers. */
class JobInterceptorTest extends DbTest {
    record Item(String name) {}

    /** Records every call, tagged with the interceptor's name. */
    static final class Recording implements JobInterceptor {
        final String name;
        final List<String> calls;

        Recording(String name, List<String> calls) {
            this.name = name;
            this.calls = calls;
        }

        @Override
        public JobRequest beforeEnqueue(JobRequest job) {
            calls.add(name + ".beforeEnqueue " + job.kind());
            return job.metadata("seen-by-" + name, "yes");
        }

        @Override
        public void afterEnqueue(JobRequest job, EnqueueResult result, Throwable failure) {
            calls.add(name + ".afterEnqueue " + job.kind() + " created=" + (result != null && result.created())
                    + " failure=" + (failure != null));
        }

        @Override
        public BatonMetrics.JobOutcome aroundExecution(JobContext job, Execution execution) {
            calls.add(name + ".in " + job.kind() + " jobId=" + job.jobId());
            BatonMetrics.JobOutcome outcome = execution.proceed();
            calls.add(name + ".out " + outcome + " failure="
                    + execution.failure().map(Throwable::getMessage).orElse("none"));
            execution.whenRecorded(recorded -> calls.add(name + ".recorded " + job.kind() + " " + recorded));
            return outcome;
        }
    }

    private Baton.Builder worker(String id) {
        return Baton.builder(appPool)
                .schema(schema)
                .nodeId(id)
                .notifications(PG.pooled() ? NotificationMode.POLL : NotificationMode.AUTO)
                .worker(WorkerConfig.builder()
                        .queue("default", 2)
                        .jobLease(Duration.ofSeconds(2))
                        .heartbeatInterval(Duration.ofMillis(200))
                        .pollInterval(Duration.ofMillis(50))
                        .build());
    }

    @Test
    void metadataTravelsFromEnqueueToTheHandlerAndIsShownWithTheJob() throws Exception {
        CompletableFuture<Map<String, String>> seen = new CompletableFuture<>();
        Baton b = closeLater(worker("m1")
                        .handle("meta", Item.class, (item, ctx) -> seen.complete(ctx.metadata()))
                        .build())
                .start();
        long id = b.jobs()
                .enqueue(JobRequest.of("meta", new Item("a"))
                        .metadata("tenant", "acme")
                        .metadata("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"))
                .id();
        assertThat(seen.get(WAIT.toMillis(), TimeUnit.MILLISECONDS))
                .containsExactly(
                        Map.entry("tenant", "acme"),
                        Map.entry("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"));
        assertThat(b.jobs().get(id).orElseThrow().metadata()).containsEntry("tenant", "acme");
        long plain = b.jobs().enqueue(JobRequest.of("meta", new Item("b"))).id();
        assertThat(b.jobs().get(plain).orElseThrow().metadata()).isEmpty();
    }

    @Test
    void badMetadataIsRefusedWithWhatIsAllowed() {
        JobRequest r = JobRequest.of("meta", null);
        assertThatThrownBy(() -> r.metadata("", "v"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("metadata key must be 1 to 100 characters, but was 0 characters");
        assertThatThrownBy(() -> r.metadata("k", null))
                .hasMessage("metadata value of 'k' must be a string of at most 2000 characters, but was null");
        assertThatThrownBy(() -> r.metadata("k", "x".repeat(2001)))
                .hasMessage(
                        "metadata value of 'k' must be a string of at most 2000 characters, but was 2001 characters");
        JobRequest full = r;
        for (int i = 0; i < JobRequest.MAX_METADATA_ENTRIES; i++) {
            full = full.metadata("k" + i, "v");
        }
        JobRequest last = full;
        assertThatThrownBy(() -> last.metadata("one-more", "v"))
                .hasMessage("a job carries at most 32 metadata entries; adding 'one-more' would make 33");
        assertThat(last.metadata("k0", "replaced").metadata()).hasSize(32).containsEntry("k0", "replaced");
    }

    /**
     * Interceptors run in registration order on the way in and in reverse on the way out, see the
     * outcome, the handler's failure and the recording. (The MDC keys are checked where a logging backend
     * with an MDC runs: the Spring Boot starter's tests; slf4j-simple here keeps none.)
     */
    @Test
    void interceptorsWrapEnqueueAndExecutionInOrderAndSeeOutcomes() throws Exception {
        List<String> calls = new CopyOnWriteArrayList<>();
        Baton b = closeLater(worker("i1")
                        .interceptor(new Recording("outer", calls))
                        .interceptor(new Recording("inner", calls))
                        .handle(
                                "ok",
                                Item.class,
                                (item, ctx) ->
                                        assertThat(ctx.metadata()).containsKeys("seen-by-outer", "seen-by-inner"))
                        .handle("bad", Item.class, (item, ctx) -> {
                            throw new JobHandler.PermanentFailure("no such customer");
                        })
                        .build())
                .start();
        long ok = b.jobs().enqueue(JobRequest.of("ok", new Item("a"))).id();
        Awaitility.await().atMost(WAIT).until(() -> calls.contains("outer.recorded ok true"));
        long bad = b.jobs().enqueue(JobRequest.of("bad", new Item("b"))).id();
        Awaitility.await().atMost(WAIT).until(() -> calls.contains("outer.recorded bad true"));

        // The enqueue's interceptors and the attempt's each run in order; the two sequences may interleave (a
        // worker can claim and run the job between its commit and the enqueue's afterEnqueue: seen through
        // PgBouncer, where nodes poll).
        assertThat(calls)
                .containsSubsequence(
                        "outer.beforeEnqueue ok",
                        "inner.beforeEnqueue ok",
                        "inner.afterEnqueue ok created=true failure=false",
                        "outer.afterEnqueue ok created=true failure=false")
                .containsSubsequence(
                        "outer.beforeEnqueue ok",
                        "outer.in ok jobId=" + ok,
                        "inner.in ok jobId=" + ok,
                        "inner.out SUCCEEDED failure=none",
                        "outer.out SUCCEEDED failure=none")
                .containsSubsequence(
                        "outer.in bad jobId=" + bad,
                        "inner.in bad jobId=" + bad,
                        "inner.out FAILED failure=no such customer",
                        "outer.out FAILED failure=no such customer");
        assertThat(b.jobs().get(ok).orElseThrow().metadata())
                .containsEntry("seen-by-outer", "yes")
                .containsEntry("seen-by-inner", "yes");
        assertThat(b.jobs().get(bad).orElseThrow().state()).isEqualTo(JobState.FAILED);
    }

    /**
     * An interceptor that throws before letting the attempt go on fails it as the handler would have
     * (retried by the kind's policy), and the handler does not run; one that refuses an enqueue stops
     * the write. Protection removed and seen failing: the {@code !next.proceeded} branch in
     * {@code Interceptors.Run#level} (a NullPointerException then escaped onto the handler thread and the job
     * stayed running until its lease expired: "ended failed" timed out).
     */
    @Test
    void anInterceptorThatThrowsFailsTheAttemptOrRefusesTheEnqueue() throws Exception {
        List<String> ran = new CopyOnWriteArrayList<>();
        List<String> calls = new CopyOnWriteArrayList<>();
        Baton b = closeLater(worker("t1")
                        .interceptor(new Recording("rec", calls))
                        .interceptor(new JobInterceptor() {
                            @Override
                            public JobRequest beforeEnqueue(JobRequest job) {
                                if (job.kind().equals("forbidden")) {
                                    throw new SecurityException("no enqueue of 'forbidden' jobs for this caller");
                                }
                                return job;
                            }

                            @Override
                            public BatonMetrics.JobOutcome aroundExecution(JobContext job, Execution execution) {
                                throw new IllegalStateException("tenant missing");
                            }
                        })
                        .handle("guarded", Item.class, (item, ctx) -> ran.add(item.name()))
                        .build())
                .start();
        assertThatThrownBy(() -> b.jobs().enqueue(JobRequest.of("forbidden", new Item("x"))))
                .isInstanceOf(SecurityException.class);
        assertThat(count("SELECT count(*) FROM " + schema + ".job WHERE kind = 'forbidden'"))
                .isZero();
        // Every beforeEnqueue that ran is paired with an afterEnqueue, also when the enqueue failed: after a
        // later interceptor refused it, or when the payload cannot be encoded.
        assertThat(calls)
                .containsExactly(
                        "rec.beforeEnqueue forbidden", "rec.afterEnqueue forbidden created=false failure=true");
        calls.clear();
        assertThatThrownBy(() -> b.jobs().enqueue(JobRequest.of("guarded", new Object())))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(calls)
                .containsExactly("rec.beforeEnqueue guarded", "rec.afterEnqueue guarded created=false failure=true");
        long id = b.jobs()
                .enqueue(JobRequest.of("guarded", new Item("y")).maxAttempts(1))
                .id();
        Awaitility.await()
                .atMost(WAIT)
                .alias("ended failed")
                .until(() -> b.jobs().get(id).orElseThrow().state() == JobState.FAILED);
        assertThat(ran).isEmpty();
        assertThat(b.jobs().get(id).orElseThrow().errors())
                .singleElement()
                .satisfies(e -> assertThat(e.message()).isEqualTo("tenant missing"));
    }

    /** Schedule firings pass through the interceptors with the schedule's name and due instant. */
    @Test
    void scheduleFiringsPassThroughTheInterceptors() throws Exception {
        List<String> calls = new CopyOnWriteArrayList<>();
        CompletableFuture<Map<String, String>> seen = new CompletableFuture<>();
        Baton b = closeLater(worker("s1")
                        .maintenance(fastLeadership())
                        .interceptor(new Recording("rec", calls))
                        .schedule(Schedule.every("tick", Duration.ofMillis(300)).job("tick", null))
                        .handle("tick", Item.class, (item, ctx) -> seen.complete(ctx.metadata()))
                        .build())
                .start();
        Map<String, String> metadata = seen.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        assertThat(metadata).containsEntry("baton.schedule", "tick").containsKey("baton.due");
        assertThat(metadata).containsEntry("seen-by-rec", "yes");
        Awaitility.await().atMost(WAIT).until(() -> calls.contains("rec.afterEnqueue tick created=true failure=false"));
    }
}
