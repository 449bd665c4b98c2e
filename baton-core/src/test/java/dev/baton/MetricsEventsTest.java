package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.internal.job.JobStore;
import dev.baton.internal.maintenance.Maintenance;
import dev.baton.internal.service.Hooks;
import java.time.Duration;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/** The events Baton reports through {@link BatonMetrics}, seen by a recording implementation. */
class MetricsEventsTest extends JobTestSupport {
    /** Every event as a short string, in arrival order. */
    static final class Recording implements BatonMetrics {
        final Queue<String> events = new ConcurrentLinkedQueue<>();

        @Override
        public void leadershipAcquired(String lease, long generation) {
            events.add("acquired " + lease);
        }

        @Override
        public void leaseRenewed(String lease, Duration latency, boolean confirmed) {
            events.add("renewed " + lease + " " + confirmed);
        }

        @Override
        public void jobsEnqueued(String queue, String kind, int count) {
            events.add("enqueued " + queue + " " + kind + " " + count);
        }

        @Override
        public void jobClaimed(String queue, String kind, Duration waited) {
            events.add("claimed " + queue + " " + kind + (waited.isNegative() ? " negative" : ""));
        }

        @Override
        public void jobFinished(String queue, String kind, JobOutcome outcome, Duration ran) {
            events.add("finished " + queue + " " + kind + " " + outcome);
        }

        @Override
        public void scheduleFired(String schedule, Duration delay) {
            events.add("fired " + schedule);
        }

        @Override
        public void jobRescued(String queue, String kind, boolean requeued) {
            events.add("rescued " + queue + " " + kind + " " + requeued);
        }

        @Override
        public void fallbackUsed(String primitive) {
            events.add("fallback " + primitive);
        }

        boolean has(String event) {
            return events.contains(event);
        }

        long count(String event) {
            return events.stream().filter(event::equals).count();
        }
    }

    @Test
    void jobsLeadershipAndSchedulesAreReported() {
        Recording m = new Recording();
        Baton b = startNode(nodeBuilder("m1", pool, Hooks.NONE)
                .metrics(m)
                .worker(fastWorker("default", 2).build())
                .handle("ok", Payload.class, (p, ctx) -> {})
                .handle(
                        "bad",
                        Payload.class,
                        (p, ctx) -> {
                            throw new IllegalStateException("boom");
                        },
                        RetryPolicy.immediate())
                .handle("never", Payload.class, (p, ctx) -> {
                    throw new PermanentFailureForTest();
                })
                .sweep("tick", Duration.ofMillis(200), ctx -> {}));
        b.jobs().enqueueAll(List.of(JobRequest.of("ok", new Payload(1)), JobRequest.of("ok", new Payload(2))));
        b.jobs().enqueue(JobRequest.of("ok", new Payload(3)).idempotencyKey("k"));
        b.jobs().enqueue(JobRequest.of("ok", new Payload(3)).idempotencyKey("k")); // duplicate: not counted
        b.jobs().enqueue(JobRequest.of("bad", new Payload(4)).maxAttempts(2));
        b.jobs().enqueue(JobRequest.of("never", new Payload(5)));

        Awaitility.await().atMost(WAIT).untilAsserted(() -> {
            assertThat(m.count("finished default ok SUCCEEDED")).isEqualTo(3);
            assertThat(m.count("finished default bad RETRIED")).isEqualTo(1);
            assertThat(m.count("finished default bad FAILED")).isEqualTo(1);
            assertThat(m.count("finished default never FAILED")).isEqualTo(1);
            assertThat(m.has("acquired baton.maintenance")).isTrue();
            assertThat(m.has("renewed baton.maintenance true")).isTrue();
            assertThat(m.has("fired sweep:tick")).isTrue();
            assertThat(m.has("finished baton.sweeps baton.sweep:tick SUCCEEDED"))
                    .isTrue();
        });
        assertThat(m.count("enqueued default ok 2")).isEqualTo(1);
        assertThat(m.count("enqueued default ok 1")).isEqualTo(1);
        assertThat(m.count("claimed default bad")).isEqualTo(2);
        assertThat(m.events).noneMatch(e -> e.endsWith("negative"));
    }

    @Test
    void aThrowingImplementationNeverStopsWork() {
        BatonMetrics throwing = new BatonMetrics() {
            @Override
            public void jobFinished(String queue, String kind, JobOutcome outcome, Duration ran) {
                throw new IllegalStateException("metrics backend down");
            }

            @Override
            public void jobsEnqueued(String queue, String kind, int count) {
                throw new IllegalStateException("metrics backend down");
            }
        };
        Baton b = startNode(nodeBuilder("m2", pool, Hooks.NONE)
                .metrics(throwing)
                .worker(fastWorker("default", 2).build())
                .handle("ok", Payload.class, (p, ctx) -> {}));
        long id = b.jobs().enqueue(JobRequest.of("ok", new Payload(1))).id();
        Awaitility.await()
                .atMost(WAIT)
                .until(() -> b.jobs().get(id).orElseThrow().state() == JobState.SUCCEEDED);
    }

    @Test
    void rescuedAttemptsAreReportedWithQueueAndKind() throws Exception {
        Recording m = new Recording();
        long id = jobsApi()
                .enqueue(JobRequest.of("ok", new Payload(1)).queue("mail"))
                .id();
        try (java.sql.Connection c = pool.getConnection()) {
            assertThat(new JobStore(schema).claim(c, "mail", new String[] {"ok"}, 1, 20, "ghost"))
                    .hasSize(1); // a 20 ms lease, never renewed
        }
        Awaitility.await().atMost(WAIT).until(() -> !row(id).leaseLive());
        Maintenance rescuer = maintenance(fastWorker("mail", 1).build(), "rescuer", new JobStore(schema).metrics(m));
        assertThat(rescuer.rescueOnce()).isEqualTo(1);
        assertThat(m.events).containsExactly("rescued mail ok true");
    }

    @Test
    void primitiveFallbacksAreReported() {
        Recording m = new Recording();
        com.zaxxer.hikari.HikariConfig cfg = new com.zaxxer.hikari.HikariConfig();
        cfg.setJdbcUrl("jdbc:postgresql://127.0.0.1:1/unreachable?connectTimeout=1"); // nothing listens on port 1
        cfg.setConnectionTimeout(250);
        cfg.setMinimumIdle(0);
        cfg.setInitializationFailTimeout(-1);
        com.zaxxer.hikari.HikariDataSource dead = closeLater(new com.zaxxer.hikari.HikariDataSource(cfg));
        Coordination c = new Coordination(dead, schema, leases, "n1", System::nanoTime).metrics(m);
        assertThat(c.rateLimiter("login", 10, Duration.ofMinutes(1), 3)
                        .tryAcquire("10.0.0.1")
                        .fallback())
                .isTrue();
        assertThat(c.concurrencyCap("exports", 5, Duration.ofMinutes(1), 1).tryAcquire("acct"))
                .hasValueSatisfying(p -> assertThat(p.local()).isTrue());
        assertThat(c.firstDelivery("stripe", "evt-1", Duration.ofDays(1))).isTrue();
        assertThat(m.events).containsExactly("fallback rate_limiter", "fallback concurrency_cap", "fallback dedupe");
        assertThat(c.fallbacks()).isEqualTo(3);
    }

    static final class PermanentFailureForTest extends JobHandler.PermanentFailure {
        private static final long serialVersionUID = 1L;

        PermanentFailureForTest() {
            super("never retried");
        }
    }
}
