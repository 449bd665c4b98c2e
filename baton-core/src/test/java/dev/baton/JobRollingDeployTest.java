package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;

/**
 * J16: rolling deploy. A kind that only the new version handles is enqueued while old nodes still run:
 * old nodes do not take it (no attempt used, no error), a new node runs it. And {@code retry} of a job at
 * its attempt ceiling works.
 */
class JobRollingDeployTest extends JobBehaviourTestBase {
    record Order(String id) {}

    /**
     * Protection removed and seen failing: the claim's kind filter ({@code j.kind = ANY (?::text[])}
     * dropped): the old node claimed the new kind and failed its attempt as "UnknownJobKind"; "no attempt
     * used" and "no error" failed, and the new node ran it as attempt 2.
     */
    @Test
    void J16_oldNodesLeaveANewKindToANodeThatHandlesIt() throws Exception {
        Set<String> ranOnOld = ConcurrentHashMap.newKeySet();
        Baton old = start(nodeBuilder("old-node")
                .application("shop", "1")
                .worker(fastWorker("default", 2).build())
                .handle("order", Order.class, (o, ctx) -> ranOnOld.add(o.id())));
        Jobs jobs = old.jobs();
        long invoice =
                jobs.enqueue(JobRequest.of("invoice.v2", new Item("new"))).id();
        // Orders enqueued behind it, before and after, all run: the old node keeps claiming past it.
        List<Long> orders = new ArrayList<>();
        for (int round = 0; round < 3; round++) {
            long id =
                    jobs.enqueue(JobRequest.of("order", new Order("o" + round))).id();
            awaitState(jobs, id, JobState.SUCCEEDED);
            orders.add(id);
        }
        assertThat(ranOnOld).containsExactlyInAnyOrder("o0", "o1", "o2");
        Row waiting = row(invoice);
        assertThat(waiting.state()).isEqualTo("available");
        assertThat(waiting.attempt()).as("no attempt used").isZero();
        assertThat(waiting.attemptedAt()).as("never claimed").isNull();
        assertThat(waiting.errorsJson()).as("no error").isEqualTo("[]");

        Set<String> ranOnNew = ConcurrentHashMap.newKeySet();
        start(nodeBuilder("new-node")
                .application("shop", "2")
                .worker(fastWorker("default", 2).build())
                .handle("order", Order.class, (o, ctx) -> ranOnNew.add(o.id()))
                .handle("invoice.v2", Item.class, (item, ctx) -> ranOnNew.add("invoice:" + ctx.attempt())));
        JobInfo done = awaitState(jobs, invoice, JobState.SUCCEEDED);
        assertThat(done.attempt()).isEqualTo(1);
        assertThat(done.claimedBy()).contains("new-node");
        assertThat(done.errors()).isEmpty();
        assertThat(ranOnNew).contains("invoice:1");
    }

    /**
     * Protection removed and seen failing: the ceiling in the retry statement ({@code least(…, 1000)}
     * dropped, as before): retrying a job at 1000 attempts broke the {@code max_attempts} check and threw.
     */
    @Test
    void retryAtTheAttemptCeilingRunsOnceMore() throws Exception {
        Jobs jobs = jobsClient();
        long id = jobs.enqueue(JobRequest.of("flaky", new Item("f")).maxAttempts(JobRequest.MAX_ATTEMPTS_LIMIT))
                .id();
        try (Connection c = pool.getConnection();
                PreparedStatement ps =
                        c.prepareStatement("UPDATE " + schema + ".job SET state = 'failed', attempt = 1000, "
                                + "finished_at = clock_timestamp() WHERE id = ?")) {
            ps.setLong(1, id);
            ps.executeUpdate();
        }
        assertThat(jobs.retry(id)).isTrue();
        JobInfo again = jobs.get(id).orElseThrow();
        assertThat(again.state()).isEqualTo(JobState.AVAILABLE);
        assertThat(again.maxAttempts()).isEqualTo(JobRequest.MAX_ATTEMPTS_LIMIT);

        start(nodeBuilder("worker")
                .worker(fastWorker("default", 1).build())
                .handle("flaky", Item.class, (item, ctx) -> {
                    throw new IllegalStateException("still failing at attempt " + ctx.attempt());
                }));
        JobInfo failed = awaitState(jobs, id, JobState.FAILED);
        assertThat(failed.attempt()).as("one more attempt, then failed again").isEqualTo(1001);
        assertThat(failed.errors())
                .last()
                .satisfies(e -> assertThat(e.message()).contains("attempt 1001"));
    }
}
