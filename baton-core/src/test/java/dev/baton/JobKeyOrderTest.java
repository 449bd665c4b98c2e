package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Strict FIFO per concurrency key ({@link KeyOrder#FIFO}): a job of the key is claimed only when no older
 * job of its key is still waiting, so a retried job keeps its place ahead of newer jobs of its key.
 */
class JobKeyOrderTest extends JobBehaviourTestBase {
    private static final RetryPolicy ONE_HOUR = new RetryPolicy(Duration.ofHours(1), 1.0, Duration.ofHours(1), 0.0);

    /**
     * Jobs A, B, C of one FIFO key; A fails its first attempt and waits an hour for its retry. A job D of no
     * key, enqueued after that, runs and succeeds: the claim that took D (D comes after B in claim order, and
     * there are free slots) would have taken B if B could be claimed; B and C are still untouched. Once A is
     * cancelled, B and then C run, in that order. Run on the plain claim statement and on the limited one (a
     * queue with a job limit).
     *
     * <p>Protection removed and seen failing: the FIFO condition of the claim statements ({@code AND (NOT
     * j.key_fifo OR NOT EXISTS (... o.id < j.id))}) in both: B ran during A's backoff (attempt 1 instead of 0).
     */
    @ParameterizedTest(name = "with a queue limit: {0}")
    @ValueSource(booleans = {false, true})
    void aRetriedJobKeepsItsPlaceAheadOfNewerJobsOfItsKey(boolean limited) throws Exception {
        List<String> runs = new CopyOnWriteArrayList<>();
        Baton.Builder b = nodeBuilder("fifo-" + limited)
                .worker(fastWorker("default", 4).build())
                .handle("step", Item.class, recordingAFails(runs), ONE_HOUR)
                .handle("other", Item.class, (item, ctx) -> runs.add(item.name()));
        if (limited) {
            b.jobLimit(JobLimit.perQueue("default", 10));
        }
        Baton node = start(b);
        Jobs jobs = node.jobs();
        long a = jobs.enqueue(step("A")).id();
        List<EnqueueResult> bc = jobs.enqueueAll(List.of(step("B"), step("C")));
        long bId = bc.get(0).id();
        long cId = bc.get(1).id();

        awaitFailedOnce(a);
        long d = jobs.enqueue(JobRequest.of("other", new Item("D"))).id();
        awaitState(jobs, d, JobState.SUCCEEDED);
        assertThat(row(bId).attempt())
                .as("B did not pass A while A waits for its retry")
                .isZero();
        assertThat(row(cId).attempt()).isZero();
        assertThat(runs).containsExactly("A1", "D");

        jobs.cancel(a);
        awaitState(jobs, cId, JobState.SUCCEEDED);
        assertThat(runs).containsExactly("A1", "D", "B1", "C1");
    }

    /**
     * A key in {@link KeyOrder#ANY} lets a newer job pass one that waits for its retry (today's behaviour,
     * kept): the counterpart of the test above, showing that its B would run if it could.
     */
    @Test
    void inAnyOrderANewerJobPassesOneWaitingForItsRetry() throws Exception {
        List<String> runs = new CopyOnWriteArrayList<>();
        Baton node = start(nodeBuilder("any-order")
                .worker(fastWorker("default", 4).build())
                .handle("step", Item.class, recordingAFails(runs), ONE_HOUR));
        Jobs jobs = node.jobs();
        long a = jobs.enqueue(JobRequest.of("step", new Item("A")).concurrencyKey("k"))
                .id();
        long bId = jobs.enqueue(JobRequest.of("step", new Item("B")).concurrencyKey("k", KeyOrder.ANY))
                .id();
        awaitState(jobs, bId, JobState.SUCCEEDED);
        assertThat(row(a).state()).isEqualTo("available");
        assertThat(runs).containsExactly("A1", "B1");
    }

    /**
     * Every enqueue path stores the key order: alone, in a batch, with a uniqueness key, and on the caller's
     * transaction; a request without it stores ANY.
     *
     * <p>Protection removed and seen failing: the {@code key_fifo} column in the batch statement's insert
     * (the batch's jobs stored false).
     */
    @Test
    void everyEnqueuePathStoresTheKeyOrder() throws Exception {
        Jobs jobs = jobsClient();
        List<Long> fifo = new ArrayList<>();
        fifo.add(jobs.enqueue(step("one")).id());
        jobs.enqueueAll(List.of(step("two"), step("three"))).forEach(r -> fifo.add(r.id()));
        fifo.add(jobs.enqueue(step("four").unique("u-4", Uniqueness.whileAvailable()))
                .id());
        try (Connection c = appPool.getConnection()) {
            c.setAutoCommit(false);
            fifo.add(jobs.enqueue(c, step("five")).id());
            c.commit();
        }
        long plain = jobs.enqueue(JobRequest.of("step", new Item("six")).concurrencyKey("k"))
                .id();
        for (long id : fifo) {
            assertThat(keyFifo(id)).as("job %d", id).isTrue();
        }
        assertThat(keyFifo(plain)).isFalse();
        assertThat(step("x").keyOrder()).isEqualTo(KeyOrder.FIFO);
        assertThat(JobRequest.of("step", null).keyOrder()).isEqualTo(KeyOrder.ANY);
    }

    /** A missing order or key is refused, naming what is allowed; the request is left as it was. */
    @Test
    void badKeyOrdersAreRefused() {
        JobRequest r = JobRequest.of("step", null);
        assertThatThrownBy(() -> r.concurrencyKey("k", null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("key order must be KeyOrder.ANY or KeyOrder.FIFO, but was null");
        assertThatThrownBy(() -> r.concurrencyKey(null, KeyOrder.FIFO))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("concurrencyKey must be 1 to 200 characters, but was null");
        assertThat(r.keyOrder()).isEqualTo(KeyOrder.ANY);
    }

    /** Records each run as name and attempt; job A's attempts fail (and wait an hour for their retry). */
    private static JobHandler<Item> recordingAFails(List<String> runs) {
        return (item, ctx) -> {
            runs.add(item.name() + ctx.attempt());
            if (item.name().equals("A")) {
                throw new IllegalStateException("A fails");
            }
        };
    }

    private static JobRequest step(String name) {
        return JobRequest.of("step", new Item(name)).concurrencyKey("k", KeyOrder.FIFO);
    }

    /** Waits until A's failed first attempt is recorded: available again, waiting for its retry. */
    private void awaitFailedOnce(long id) {
        Awaitility.await().atMost(WAIT).pollInterval(Duration.ofMillis(20)).until(() -> {
            Row r = row(id);
            return r.state().equals("available") && r.attempt() == 1;
        });
    }

    private boolean keyFifo(long id) throws Exception {
        try (Connection c = pool.getConnection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT key_fifo FROM " + schema + ".job WHERE id = " + id)) {
            assertThat(rs.next()).isTrue();
            return rs.getBoolean(1);
        }
    }
}
