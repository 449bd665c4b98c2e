package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * J09: a job of a kind no handler on the node knows, and a payload that cannot be decoded: each fails
 * with a clear error kept on the job; nothing is lost; other jobs are unaffected.
 */
class JobBadInputTest extends JobBehaviourTestBase {
    /** The type the "order" handler expects. */
    record Order(String id, int quantity) {}

    /**
     * An unknown kind fails the attempt with "no handler for job kind" and is retried (another node of
     * a newer version may know it) until its max attempts, then ends FAILED with every error kept.
     *
     * <p>Protection removed and seen failing: the retry of unknown kinds (Worker.runHandler returning
     * Outcome.fail instead of retryOrFail): the job failed after one attempt, "retried until max
     * attempts" failed.
     */
    @Test
    void J09_unknownKindFailsAttemptWithClearErrorAndIsRetriedUntilMaxAttempts() throws Exception {
        Set<String> done = ConcurrentHashMap.newKeySet();
        Baton node = start(nodeBuilder("old-node").worker(fastWorker("default", 4).build())
                .handle("order", Order.class, (o, ctx) -> done.add(o.id())));
        Jobs jobs = node.jobs();
        List<JobRequest> batch = new ArrayList<>();
        batch.add(JobRequest.of("invoice.v2", new Item("from a newer release")).maxAttempts(2));
        for (int i = 0; i < 5; i++) {
            batch.add(JobRequest.of("order", new Order("o" + i, i + 1)));
        }
        List<EnqueueResult> ids = jobs.enqueueAll(batch);
        long unknown = ids.get(0).id();

        // Two attempts with the default backoff (about 1 s) between them.
        JobInfo failed = awaitState(jobs, unknown, JobState.FAILED);
        assertThat(failed.attempt()).as("retried until max attempts").isEqualTo(2);
        assertThat(failed.errors()).hasSize(2).allSatisfy(e -> {
            assertThat(e.errorClass()).isEqualTo("UnknownJobKind");
            assertThat(e.message()).contains("no handler for job kind 'invoice.v2'").contains("old-node")
                    .contains("order");
            assertThat(e.node()).isEqualTo("old-node");
            assertThat(e.at()).isNotNull();
        });
        assertThat(failed.errors()).extracting(JobError::attempt).containsExactly(1, 2);
        assertThat(failed.payloadJson()).as("nothing lost: the payload is kept").contains("from a newer release");
        for (int i = 1; i < ids.size(); i++) {
            assertThat(awaitState(jobs, ids.get(i).id(), JobState.SUCCEEDED).errors()).isEmpty();
        }
        assertThat(done).hasSize(5);
    }

    /**
     * Mixed versions: an old node fails the unknown kind's first attempt (error kept, job available
     * again); a newer node that knows the kind then runs it.
     *
     * <p>Protection removed and seen failing: the retry of unknown kinds (Outcome.fail instead of
     * retryOrFail): the job ended FAILED on the old node, "available again" failed.
     */
    @Test
    void J09_unknownKindIsRunByANodeThatKnowsIt() throws Exception {
        Baton old = start(nodeBuilder("old-node").worker(fastWorker("default", 2).build())
                .handle("order", Order.class, (o, ctx) -> { }));
        Jobs jobs = old.jobs();
        long id = jobs.enqueue(JobRequest.of("invoice.v2", new Item("new")).maxAttempts(5)).id();
        Awaitility.await().atMost(WAIT).pollInterval(Duration.ofMillis(20))
                .until(() -> jobs.get(id).orElseThrow().errors().size() == 1);
        old.close();
        JobInfo waiting = jobs.get(id).orElseThrow();
        assertThat(waiting.state()).isEqualTo(JobState.AVAILABLE);
        assertThat(waiting.attempt()).isEqualTo(1);

        Set<String> ranOn = ConcurrentHashMap.newKeySet();
        start(nodeBuilder("new-node").worker(fastWorker("default", 2).build())
                .handle("invoice.v2", Item.class, (item, ctx) -> ranOn.add("new-node:" + item.name())));
        JobInfo done = awaitState(jobs, id, JobState.SUCCEEDED);
        assertThat(done.attempt()).isEqualTo(2);
        assertThat(done.claimedBy()).contains("new-node");
        assertThat(done.errors()).singleElement().satisfies(e -> {
            assertThat(e.errorClass()).isEqualTo("UnknownJobKind");
            assertThat(e.node()).isEqualTo("old-node");
        });
        assertThat(ranOn).containsExactly("new-node:new");
    }

    /**
     * A payload that cannot be decoded into the handler's type (a JSON string where an Order object is
     * expected) fails at once, not retried, with "cannot be decoded"; the handler never sees it; jobs
     * enqueued alongside succeed.
     *
     * <p>Protection removed and seen failing: failing undecodable payloads at once (Worker.runHandler
     * using retryOrFail for them): the job was retried, "failed at once" (attempt 1, one error) failed.
     */
    @Test
    void J09_undecodablePayloadFailsAtOnceWithClearErrorOthersSucceed() throws Exception {
        Set<String> done = ConcurrentHashMap.newKeySet();
        Baton node = start(nodeBuilder("j09-node").worker(fastWorker("default", 4).build())
                .handle("order", Order.class, (o, ctx) -> done.add(o.id()), RetryPolicy.immediate()));
        Jobs jobs = node.jobs();
        List<JobRequest> batch = new ArrayList<>();
        batch.add(JobRequest.of("order", new Order("before", 1)));
        batch.add(JobRequest.of("order", "just a string, not an order").maxAttempts(5));
        batch.add(JobRequest.of("order", new Order("after", 2)));
        List<EnqueueResult> ids = jobs.enqueueAll(batch);
        long bad = ids.get(1).id();

        JobInfo failed = awaitState(jobs, bad, JobState.FAILED);
        assertThat(failed.attempt()).as("failed at once").isEqualTo(1);
        assertThat(failed.errors()).singleElement().satisfies(e -> {
            assertThat(e.errorClass()).isEqualTo("UndecodablePayload");
            assertThat(e.message()).contains("cannot be decoded").contains(Order.class.getName())
                    .contains("job " + bad);
            assertThat(e.attempt()).isEqualTo(1);
            assertThat(e.node()).isEqualTo("j09-node");
        });
        assertThat(failed.payloadJson()).isEqualTo("\"just a string, not an order\"");
        awaitState(jobs, ids.get(0).id(), JobState.SUCCEEDED);
        awaitState(jobs, ids.get(2).id(), JobState.SUCCEEDED);
        assertThat(done).containsExactlyInAnyOrder("before", "after");
        assertThat(jobs.get(bad).orElseThrow().attempt()).isEqualTo(1);
    }
}
