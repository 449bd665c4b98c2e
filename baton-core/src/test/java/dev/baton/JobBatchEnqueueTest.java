package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.baton.internal.job.JobStore;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Large batches without idempotency keys are written by COPY (JobStore.enqueueByCopy), smaller ones and
 * batches with idempotency keys by one statement over arrays: both must store the same rows.
 */
class JobBatchEnqueueTest extends JobBehaviourTestBase {
    /** Text a text format would have to escape, text it must not touch, and text in several UTF-8 lengths. */
    private static final String[] AWKWARD = {
        "tab\there",
        "line\nbreak",
        "carriage\rreturn",
        "back\\slash",
        "\\N",
        "quote\"s and 'single'",
        "ünïcödé ✓ 𝄞",
        "",
        "\\.",
        "comma, semicolon; pipe|"
    };

    private static List<JobRequest> requests(int n, Instant at) {
        List<JobRequest> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            String text = AWKWARD[i % AWKWARD.length] + " #" + i;
            JobRequest r = JobRequest.of("kind." + (i % 3), new Item(text))
                    .queue(i % 2 == 0 ? "default" : "q-" + (i % 4) + ".x_y")
                    .priority(i % 101)
                    .maxAttempts(1 + i % 1000)
                    .metadata("note", text);
            if (i % 5 == 0) {
                // Sub-microsecond digits: both paths round them the same way. The range's two ends as well.
                r = r.runAt(
                        i == 10
                                ? JobRequest.EARLIEST_RUN_AT
                                : i == 20 ? JobRequest.LATEST_RUN_AT : at.plusNanos(i * 1_234_567L));
            }
            if (i % 7 == 0) {
                r = r.delay(Duration.ofSeconds(30 + i));
            }
            if (i % 3 == 0) {
                r = r.timeout(Duration.ofMillis(1000 + i));
            }
            if (i % 4 == 1) {
                r = r.concurrencyKey("tenant\\" + i + " ü", i % 8 == 1 ? KeyOrder.FIFO : KeyOrder.ANY);
            }
            out.add(r);
        }
        return out;
    }

    /** The stored row of a job, as text per column (run_at relative to created_at when due "now"). */
    private Map<String, Object> stored(long id, boolean explicitRunAt) throws Exception {
        try (Connection c = pool.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT queue, kind, payload::text, priority, state, "
                        + "max_attempts, timeout_ms, concurrency_key, key_fifo, metadata::text, idempotency_key, attempt, "
                        + "errors::text, run_at, extract(epoch FROM run_at - created_at) FROM " + schema
                        + ".job WHERE id = ?")) {
            ps.setLong(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next()).as("job " + id).isTrue();
                Map<String, Object> row = new java.util.LinkedHashMap<>();
                for (int col = 1; col <= 13; col++) {
                    row.put(rs.getMetaData().getColumnName(col), rs.getString(col));
                }
                if (explicitRunAt) {
                    row.put("run_at", rs.getTimestamp(14).toInstant());
                } else {
                    // Due after its delay from enqueue time: whole seconds of run_at - created_at.
                    row.put("run_at - created_at (s, rounded)", Math.round(rs.getDouble(15)));
                }
                return row;
            }
        }
    }

    /**
     * 250 requests with every field set in many ways, text full of tabs, newlines, backslashes, "\N" and
     * non-ASCII: enqueued as one batch (COPY) and again in batches of 50 (the array statement); each pair of
     * rows is the same, and the results come back in input order.
     *
     * <p>Protection removed to see it fail: the rounding of nanoseconds in {@code BinaryCopy.timestamptz} (the
     * nanoseconds truncated instead): the explicit run_at of the copied rows came out one microsecond earlier
     * than the array statement's.
     */
    @Test
    void aCopiedBatchStoresTheSameRowsAsTheArrayStatement() throws Exception {
        Jobs jobs = jobsClient();
        Instant at = Instant.now().plus(Duration.ofDays(1)).truncatedTo(ChronoUnit.SECONDS);
        List<JobRequest> requests = requests(250, at);
        List<EnqueueResult> copied = jobs.enqueueAll(requests);
        List<EnqueueResult> viaArrays = new ArrayList<>();
        for (int from = 0; from < requests.size(); from += 50) {
            viaArrays.addAll(jobs.enqueueAll(requests.subList(from, from + 50)));
        }
        assertThat(copied).hasSize(250).allMatch(EnqueueResult::created);
        assertThat(copied).extracting(EnqueueResult::id).isSorted().doesNotHaveDuplicates();
        for (int i = 0; i < requests.size(); i++) {
            boolean explicit = i % 5 == 0 && i % 7 != 0; // a delay replaces a run-at
            assertThat(stored(copied.get(i).id(), explicit))
                    .as("job %d of the batch", i)
                    .isEqualTo(stored(viaArrays.get(i).id(), explicit));
        }
        assertThat(jobs.get(copied.get(2).id()).orElseThrow().payloadJson())
                .as("payload JSON read back")
                .isEqualTo("{\"name\": \"carriage\\rreturn #2\"}");
    }

    /**
     * Several threads of one process copying batches at once, as request threads of one service do: every job
     * stored once, under its own id, none lost; each thread's ids ascend in its order. The ids are reserved from
     * the sequence before each COPY, so the threads' batches interleave in the table without a conflict.
     *
     * <p>Protection removed to see it fail: the sequence in {@code reserve_ids} replaced by the table's highest id
     * plus one: two threads took the same ids and a batch failed on job_pkey.
     */
    @Test
    void severalThreadsCopyingAtOnceStoreEveryJobOnce() throws Exception {
        int threads = 4;
        Jobs jobs = new Jobs(
                appPoolOf("copiers", threads + 1),
                new JobStore(schema),
                PayloadCodec.jackson(),
                WorkerConfig.DEFAULT_MAX_PAYLOAD_BYTES);
        int batches = 3;
        int size = 250;
        java.util.concurrent.CyclicBarrier start = new java.util.concurrent.CyclicBarrier(threads);
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(threads);
        try {
            List<java.util.concurrent.Future<List<Long>>> results = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                results.add(pool.submit(() -> {
                    start.await();
                    List<Long> ids = new ArrayList<>();
                    for (int b = 0; b < batches; b++) {
                        for (EnqueueResult r : jobs.enqueueAll(requests(size, Instant.now()))) {
                            assertThat(r.created()).isTrue();
                            ids.add(r.id());
                        }
                    }
                    return ids;
                }));
            }
            List<Long> all = new ArrayList<>();
            for (var f : results) {
                List<Long> ids = f.get(1, java.util.concurrent.TimeUnit.MINUTES);
                assertThat(ids).hasSize(batches * size).isSorted();
                all.addAll(ids);
            }
            assertThat(all).doesNotHaveDuplicates();
            assertThat(jobCount()).isEqualTo((long) threads * batches * size);
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * A COPY inside the caller's transaction exists only if it commits; a bad row writes nothing.
     *
     * <p>Protection removed to see it fail: the cancel in {@code BinaryCopy.close}: after the run-at the client
     * could not encode, the rollback of the batch's transaction waited forever for the driver's lock, held by
     * the COPY left open (the test hung and was stopped).
     */
    @Test
    void J10_aCopiedBatchIsAllOrNothing() throws Exception {
        Jobs jobs = jobsClient();
        try (Connection tx = appPool.getConnection()) {
            tx.setAutoCommit(false);
            assertThat(jobs.enqueueAll(tx, requests(150, Instant.now()))).hasSize(150);
            tx.rollback();
        }
        assertThat(jobCount()).isZero();

        // A payload the database refuses (jsonb stores no \u0000) fails the whole COPY: nothing is written.
        List<JobRequest> bad = new ArrayList<>(requests(150, Instant.now()));
        bad.set(149, JobRequest.of("kind.nul", new Item("nul \u0000 char")));
        assertThatThrownBy(() -> jobs.enqueueAll(bad)).isInstanceOf(BatonException.class);
        assertThat(jobCount()).isZero();

        // A run-at the client cannot encode (a delay of 400,000 years) as the last of 1,000 jobs stops the COPY
        // after some chunks went to the server: nothing is written and the pool's connections stay usable.
        List<JobRequest> far = new ArrayList<>(requests(1000, Instant.now()));
        far.set(999, JobRequest.of("kind.far", new Item("far")).delay(Duration.ofDays(400_000L * 366)));
        assertThatThrownBy(() -> jobs.enqueueAll(far))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("outside PostgreSQL's timestamp range");
        assertThat(jobCount()).isZero();
        assertThat(jobs.enqueueAll(requests(150, Instant.now()))).hasSize(150);
        assertThat(jobCount()).isEqualTo(150);
    }
    /**
     * A copied batch wakes its queues' workers when its rows are there, and never for rows that were not
     * written: in a transaction the notification goes with the id reservation and is delivered at the commit
     * (or dropped by the rollback); a connection in auto-commit mode notifies after the rows committed.
     *
     * <p>Protections removed to see it fail: the notification in {@code reserve_ids_and_notify} (the plain
     * {@code reserve_ids} in a transaction too): no notification for the committed batch, and the await timed
     * out. The order in auto-commit mode (the notification with the reservation there as well): the listener
     * found fewer than 1,000 of the batch's rows when the notification arrived.
     */
    @Test
    void aCopiedBatchWakesItsQueuesWhenItsRowsAreThereAndNeverForRowsNotWritten() throws Exception {
        Assumptions.assumeFalse(PG.pooled(), "LISTEN through a transaction pooler loses notifications");
        Jobs jobs = jobsClient();
        try (JobChannelListener listener = new JobChannelListener()) {
            List<String> heard = listener.queues;
            // Rolled back: never heard. Then committed in a transaction: heard once the rows are there.
            try (Connection tx = appPool.getConnection()) {
                tx.setAutoCommit(false);
                jobs.enqueueAll(tx, batchOf(150, "rolled-back"));
                tx.rollback();
                jobs.enqueueAll(tx, batchOf(150, "in-tx"));
                tx.commit();
            }
            await().atMost(WAIT).until(() -> heard.contains("in-tx"));
            assertThat(heard).as("queues heard").containsExactly("in-tx");

            // Auto-commit: the rows commit first, the notification after them.
            try (Connection c = appPool.getConnection()) {
                c.setAutoCommit(true);
                jobs.enqueueAll(c, batchOf(1000, "auto"));
            }
            await().atMost(WAIT).until(() -> heard.contains("auto"));
            assertThat(heard).containsExactly("in-tx", "auto");
            assertThat(listener.rowsWhenHeard)
                    .as("rows of the queue when its notification arrived")
                    .containsExactly(150L, 1000L);
        }
    }

    private static List<JobRequest> batchOf(int n, String queue) {
        List<JobRequest> out = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            out.add(JobRequest.of("kind.wake", new Item("#" + i)).queue(queue));
        }
        return out;
    }
}
