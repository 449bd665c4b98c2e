package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.internal.maintenance.Maintenance;
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
     * A job of a kind no node handles is never claimed (no attempt is used; other jobs run), and once it
     * has waited longer than {@code unhandledKindTimeout} with no live node handling its kind, the
     * maintenance leader fails it with a clear error, its payload kept. A live node that does not say
     * which kinds it handles (an older version) might handle it: then nothing is failed.
     *
     * <p>Protections removed and seen failing: the kind filter of the claim ({@code j.kind = ANY (...)}
     * dropped from job.sql): the job was claimed and failed attempts as "UnknownJobKind" ("never claimed"
     * and "attempt 0" failed); the fail_unhandled step of maintenance: the job stayed available and the
     * await for FAILED timed out; the older-version guard ({@code live.meta -> 'kinds' IS NULL}): the job
     * was failed while such a node was live.
     */
    @Test
    void J09_unknownKindIsNotClaimedAndFailsWithClearErrorWhenNoLiveNodeHandlesIt() throws Exception {
        Set<String> done = ConcurrentHashMap.newKeySet();
        // A live node of an older version (it does not list its kinds): nothing may be failed meanwhile.
        insertOlderVersionNode("old-version-node");
        Baton node = start(nodeBuilder("j09-node")
                .worker(fastWorker("default", 4).build())
                .handle("order", Order.class, (o, ctx) -> done.add(o.id())));
        Jobs jobs = node.jobs();
        List<JobRequest> batch = new ArrayList<>();
        batch.add(JobRequest.of("invoice.v2", new Item("from a newer release")).maxAttempts(2));
        for (int i = 0; i < 5; i++) {
            batch.add(JobRequest.of("order", new Order("o" + i, i + 1)));
        }
        List<EnqueueResult> ids = jobs.enqueueAll(batch);
        long unknown = ids.get(0).id();
        // The orders queued behind it ran: the claims passed over it.
        for (int i = 1; i < ids.size(); i++) {
            assertThat(awaitState(jobs, ids.get(i).id(), JobState.SUCCEEDED).errors())
                    .isEmpty();
        }
        assertThat(done).hasSize(5);
        assertThat(row(unknown).attemptedAt()).as("never claimed").isNull();

        // The maintenance step, with a 300 ms timeout, once the job has waited longer than that.
        Maintenance maintenance = maintenance(fastWorker("default", 1)
                .unhandledKindTimeout(Duration.ofMillis(300))
                .build());
        Awaitility.await()
                .atMost(WAIT)
                .pollInterval(Duration.ofMillis(20))
                .until(() -> count("SELECT count(*) FROM " + schema + ".job WHERE id = " + unknown
                                + " AND run_at < clock_timestamp() - interval '300 ms'")
                        == 1);
        assertThat(maintenance.failUnhandledOnce())
                .as("not while an older node might handle it")
                .isZero();
        assertThat(row(unknown).state()).isEqualTo("available");

        stopOlderVersionNode();
        assertThat(maintenance.failUnhandledOnce()).isEqualTo(1);
        JobInfo failed = jobs.get(unknown).orElseThrow();
        assertThat(failed.state()).isEqualTo(JobState.FAILED);
        assertThat(failed.attempt()).as("no attempt used").isZero();
        assertThat(failed.errors()).singleElement().satisfies(e -> {
            assertThat(e.errorClass()).isEqualTo("UnhandledJobKind");
            assertThat(e.message())
                    .contains("no live node handles job kind 'invoice.v2'")
                    .contains("unhandledKindTimeout");
            assertThat(e.at()).isNotNull();
        });
        assertThat(failed.payloadJson()).as("nothing lost: the payload is kept").contains("from a newer release");
        assertThat(maintenance.failUnhandledOnce()).isZero();
    }

    /** A node row as a node of an older version writes it: live, no "kinds" in its metadata. */
    private void insertOlderVersionNode(String id) throws Exception {
        try (var c = pool.getConnection();
                var ps = c.prepareStatement("INSERT INTO " + schema + ".node (id, started_at, "
                        + "heartbeat_at, heartbeat_interval_ms, state, protocol_version, meta) VALUES (?, clock_timestamp(), "
                        + "clock_timestamp(), 600000, 'active', 1, '{\"app\":\"default\",\"appVersion\":\"0\"}')")) {
            ps.setString(1, id);
            ps.executeUpdate();
        }
    }

    private void stopOlderVersionNode() throws Exception {
        try (var c = pool.getConnection();
                var ps = c.prepareStatement(
                        "UPDATE " + schema + ".node SET state = 'stopped' WHERE id = 'old-version-node'")) {
            ps.executeUpdate();
        }
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
        Baton node = start(nodeBuilder("j09-node")
                .worker(fastWorker("default", 4).build())
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
            assertThat(e.message())
                    .contains("cannot be decoded")
                    .contains(Order.class.getName())
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
