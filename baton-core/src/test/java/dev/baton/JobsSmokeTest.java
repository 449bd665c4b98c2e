package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

class JobsSmokeTest extends DbTest {
    record Greeting(String name) {}

    @Test
    void enqueuedJobsRunAndSucceed() throws Exception {
        Set<String> seen = ConcurrentHashMap.newKeySet();
        Baton b = closeLater(Baton.builder(appPool)
                        .schema(schema)
                        .nodeId("w1")
                        .worker(WorkerConfig.builder()
                                .queue("default", 4)
                                .jobLease(Duration.ofSeconds(2))
                                .heartbeatInterval(Duration.ofMillis(200))
                                .pollInterval(Duration.ofMillis(100))
                                .build())
                        .handle("greet", Greeting.class, (g, ctx) -> seen.add(g.name()))
                        .build())
                .start();
        List<JobRequest> batch = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            batch.add(JobRequest.of("greet", new Greeting("n" + i)));
        }
        List<EnqueueResult> r = b.jobs().enqueueAll(batch);
        assertThat(r).hasSize(50).allMatch(EnqueueResult::created);
        EnqueueResult one =
                b.jobs().enqueue(JobRequest.of("greet", new Greeting("solo")).idempotencyKey("k1"));
        EnqueueResult dup =
                b.jobs().enqueue(JobRequest.of("greet", new Greeting("solo")).idempotencyKey("k1"));
        assertThat(dup.created()).isFalse();
        assertThat(dup.id()).isEqualTo(one.id());
        Awaitility.await().atMost(WAIT).until(() -> seen.size() == 51);
        Awaitility.await()
                .atMost(WAIT)
                .until(() -> b.jobs().get(one.id()).orElseThrow().state() == JobState.SUCCEEDED);
        assertThat(b.jobs().finishedStats())
                .singleElement()
                .satisfies(s -> assertThat(s.succeeded()).isEqualTo(51));
    }

    @Test
    void failingHandlerIsRetriedThenFailsWithEveryErrorKept() throws Exception {
        java.util.concurrent.atomic.AtomicInteger calls = new java.util.concurrent.atomic.AtomicInteger();
        Baton b = closeLater(Baton.builder(appPool)
                        .schema(schema)
                        .nodeId("w1")
                        .worker(WorkerConfig.builder()
                                .queue("default", 2)
                                .jobLease(Duration.ofSeconds(2))
                                .heartbeatInterval(Duration.ofMillis(200))
                                .pollInterval(Duration.ofMillis(50))
                                .build())
                        .handle(
                                "boom",
                                Greeting.class,
                                (g, ctx) -> {
                                    calls.incrementAndGet();
                                    throw new IllegalStateException("boom " + ctx.attempt());
                                },
                                RetryPolicy.immediate())
                        .build())
                .start();
        long id = b.jobs()
                .enqueue(JobRequest.of("boom", new Greeting("x")).maxAttempts(3))
                .id();
        Awaitility.await()
                .atMost(WAIT)
                .until(() -> b.jobs().get(id).orElseThrow().state() == JobState.FAILED);
        JobInfo info = b.jobs().get(id).orElseThrow();
        assertThat(info.attempt()).isEqualTo(3);
        assertThat(info.errors()).extracting(JobError::message).containsExactly("boom 1", "boom 2", "boom 3");
        assertThat(info.errors()).allSatisfy(e -> {
            assertThat(e.errorClass()).isEqualTo("java.lang.IllegalStateException");
            assertThat(e.node()).isEqualTo("w1");
            assertThat(e.at()).isNotNull();
            assertThat(e.stack()).contains("JobsSmokeTest");
        });
        assertThat(calls.get()).isEqualTo(3);
    }
}
