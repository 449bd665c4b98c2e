package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.internal.db.Db;
import dev.baton.internal.job.JobStore;
import dev.baton.internal.job.UnhandledKindWatch;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * J09 (reporting): jobs of a kind no live node handles are reported by the workers that serve their
 * queue (a WARN and a metric once per kind and queue on a node, the latest view in
 * {@link Baton#unhandledKinds()}), while they wait without using an attempt.
 *
 * <p>Before the watch, J09 ({@code JobBadInputTest}) already showed such jobs stay available with attempt 0
 * (no "retried 8 times"), but nothing reported them. Protection removed and seen failing: the once-per-kind
 * guard ({@code reported.add}) in {@code UnhandledKindWatch}: the metric was reported at every check; the
 * live-node condition of {@code unhandled_kinds} in job.sql (the {@code live.meta -> 'kinds' @> ...} line
 * dropped): the kind was still reported once a live node handled it, and the last await timed out.
 */
class JobUnhandledKindReportTest extends JobBehaviourTestBase {
    static final class Recording implements BatonMetrics {
        final Queue<String> unhandled = new ConcurrentLinkedQueue<>();

        @Override
        public void jobKindUnhandled(String queue, String kind) {
            unhandled.add(queue + " " + kind);
        }
    }

    @Test
    void aKindNoLiveNodeHandlesIsReportedOncePerKindAndQueueAndWaitsWithoutAnAttempt() throws Exception {
        Recording nodeMetrics = new Recording();
        Baton node = start(nodeBuilder("unhandled-node")
                .worker(fastWorker("default", 2)
                        .rescueInterval(Duration.ofMillis(100))
                        .build())
                .metrics(nodeMetrics)
                .handle("order", String.class, (o, ctx) -> {}));
        Jobs jobs = node.jobs();
        List<EnqueueResult> ids = jobs.enqueueAll(List.of(
                JobRequest.of("invoice.v2", "a"), JobRequest.of("invoice.v2", "b"), JobRequest.of("invoice.v2", "c")));
        long handled = jobs.enqueue(JobRequest.of("order", "x")).id();
        awaitState(jobs, handled, JobState.SUCCEEDED);

        // The node's own watch: the kind shows in its view, and its metric is reported once.
        Awaitility.await()
                .atMost(WAIT)
                .until(() -> node.unhandledKinds().equals(Map.of("invoice.v2", Set.of("default"))));
        assertThat(nodeMetrics.unhandled).containsExactly("default invoice.v2");

        // Repeated checks (as by the watch's loop) report nothing new: once per kind and queue, not per job or pass.
        Recording metrics = new Recording();
        UnhandledKindWatch watch = new UnhandledKindWatch(
                Db.of(appPool),
                new JobStore(schema),
                List.of("default"),
                List.of("order"),
                Duration.ofSeconds(1),
                WorkerConfig.DEFAULT_UNHANDLED_KIND_TIMEOUT,
                metrics,
                System::nanoTime);
        for (int i = 0; i < 3; i++) {
            assertThat(watch.checkOnce()).isEqualTo(Map.of("invoice.v2", Set.of("default")));
        }
        assertThat(metrics.unhandled).containsExactly("default invoice.v2");
        for (EnqueueResult r : ids) {
            JobInfo job = jobs.get(r.id()).orElseThrow();
            assertThat(job.state()).isEqualTo(JobState.AVAILABLE);
            assertThat(job.attempt()).as("no attempt used").isZero();
        }

        // A live node that handles the kind (on another queue here, so it does not run them): not unhandled.
        start(nodeBuilder("handler-node")
                .worker(fastWorker("elsewhere", 1).build())
                .handle("invoice.v2", String.class, (o, ctx) -> {}));
        Awaitility.await().atMost(WAIT).until(() -> watch.checkOnce().isEmpty());
        assertThat(metrics.unhandled).hasSize(1);
    }
}
