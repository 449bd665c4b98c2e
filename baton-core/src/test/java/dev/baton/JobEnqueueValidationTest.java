package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.Connection;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * J10: invalid enqueues fail at once with a clear IllegalArgumentException naming the value and the
 * rule, and write nothing; a duplicate idempotency key returns the existing job; an enqueue inside the
 * caller's transaction exists only if that transaction commits.
 */
class JobEnqueueValidationTest extends JobBehaviourTestBase {

    /**
     * Protection removed and seen failing: the payload size check in Jobs.encode: the oversized
     * payload was accepted and written ("nothing written" and the exception assertion failed).
     */
    @Test
    void J10_oversizedPayloadIsRejectedAndNothingWritten() throws Exception {
        Jobs small = jobsClient(1000);
        String big = "x".repeat(1000); // encoded as a JSON string: 1002 bytes
        assertThatThrownBy(() -> small.enqueue(JobRequest.of("upload", big)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("1002 bytes")
                .hasMessageContaining("limit is 1000 bytes")
                .hasMessageContaining("maxPayloadBytes");
        assertThat(small.enqueue(JobRequest.of("upload", "x".repeat(998))).created())
                .as("1000 bytes fit")
                .isTrue();

        // The node's WorkerConfig sets the limit its Jobs enforce.
        Baton node = start(nodeBuilder("j10-node")
                .worker(fastWorker("other", 1).maxPayloadBytes(1000).build()));
        assertThatThrownBy(() -> node.jobs().enqueue(JobRequest.of("upload", big)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("limit is 1000 bytes");

        // Default limit: 1 MiB.
        Jobs defaults = jobsClient();
        String overMiB = "y".repeat(WorkerConfig.DEFAULT_MAX_PAYLOAD_BYTES);
        assertThatThrownBy(() -> defaults.enqueue(JobRequest.of("upload", overMiB)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining((WorkerConfig.DEFAULT_MAX_PAYLOAD_BYTES + 2) + " bytes")
                .hasMessageContaining("limit is " + WorkerConfig.DEFAULT_MAX_PAYLOAD_BYTES + " bytes");
        assertThat(jobCount()).isEqualTo(1);
    }

    /**
     * Protections removed and seen failing: the priority range check in JobRequest.priority and the
     * queue-name pattern in JobRequest.validQueue: the invalid values were accepted ("expecting code to
     * raise a throwable").
     */
    @Test
    void J10_invalidRequestValuesAreRejectedNamingValueAndRule() throws Exception {
        JobRequest ok = JobRequest.of("send", new Item("a"));
        assertThatThrownBy(() -> ok.queue("Bad Queue!"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'Bad Queue!'")
                .hasMessageContaining("queue must match");
        assertThatThrownBy(() -> ok.queue(""))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("queue must match");
        assertThatThrownBy(() -> ok.queue("q".repeat(64)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("at most 63 characters");
        assertThatThrownBy(() -> ok.priority(-1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("priority must be between 0")
                .hasMessageContaining("and 100")
                .hasMessageContaining("but was -1");
        assertThatThrownBy(() -> ok.priority(101))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("but was 101");
        assertThatThrownBy(() -> ok.maxAttempts(0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("maxAttempts must be between 1 and 1000")
                .hasMessageContaining("but was 0");
        assertThatThrownBy(() -> JobRequest.of("", new Item("a")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("job kind must be 1 to 200 characters")
                .hasMessageContaining("empty");
        assertThatThrownBy(() -> JobRequest.of(null, new Item("a")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("job kind")
                .hasMessageContaining("null");
        assertThatThrownBy(() -> ok.idempotencyKey(""))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("idempotencyKey");
        assertThatThrownBy(() -> ok.concurrencyKey("k".repeat(201)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("concurrencyKey")
                .hasMessageContaining("201 characters");
        assertThatThrownBy(() -> ok.delay(java.time.Duration.ofSeconds(-1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("delay");
        assertThatThrownBy(() -> ok.runAt(java.time.Instant.MAX))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("runAt must be between 1970-01-01T00:00:00Z and 9999-12-31T23:59:59.999999Z")
                .hasMessageContaining("but was +1000000000-12-31T23:59:59.999999999Z");
        assertThatThrownBy(() -> ok.runAt(java.time.Instant.parse("1969-12-31T23:59:59.999999Z")))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("but was 1969-12-31T23:59:59.999999Z");
        Jobs jobs = jobsClient();
        assertThatThrownBy(() -> jobs.pause("Not A Queue"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'Not A Queue'");
        assertThat(jobCount()).isZero();
        // The valid boundaries are accepted.
        assertThat(jobs.enqueue(ok.queue("q-1.x_2").priority(0).maxAttempts(1)).created())
                .isTrue();
        assertThat(jobs.enqueue(ok.priority(100).maxAttempts(JobRequest.MAX_ATTEMPTS_LIMIT))
                        .created())
                .isTrue();
        assertThat(jobs.enqueue(ok.runAt(JobRequest.EARLIEST_RUN_AT)).created()).isTrue();
        assertThat(jobs.enqueue(ok.runAt(JobRequest.LATEST_RUN_AT)).created()).isTrue();
        assertThat(jobCount()).isEqualTo(4);
    }

    /**
     * Protection removed and seen failing: encoding and checking every request before the batch
     * statement (Jobs.encodeAll): with the null check removed the batch failed with a
     * NullPointerException instead of the IllegalArgumentException naming the index.
     */
    @Test
    void J10_invalidBatchesAreRejectedAndNothingWritten() throws Exception {
        Jobs jobs = jobsClient(1000);
        JobRequest ok = JobRequest.of("send", new Item("a"));
        assertThatThrownBy(() -> jobs.enqueueAll(List.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("a batch must hold 1 to " + Jobs.MAX_BATCH + " jobs, but held 0");
        List<JobRequest> tooMany = Collections.nCopies(Jobs.MAX_BATCH + 1, ok);
        assertThatThrownBy(() -> jobs.enqueueAll(tooMany))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("but held " + (Jobs.MAX_BATCH + 1));
        List<JobRequest> withNull = Arrays.asList(ok, ok, null, ok);
        assertThatThrownBy(() -> jobs.enqueueAll(withNull))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("job request 2 of the batch is null");
        List<JobRequest> withOversized = List.of(ok, ok, JobRequest.of("upload", "z".repeat(2000)), ok);
        assertThatThrownBy(() -> jobs.enqueueAll(withOversized))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("limit is 1000 bytes");
        assertThat(jobCount()).as("nothing half-written").isZero();

        // The largest batch is accepted, in one statement.
        List<EnqueueResult> max = jobs.enqueueAll(Collections.nCopies(Jobs.MAX_BATCH, ok));
        assertThat(max).hasSize(Jobs.MAX_BATCH).allMatch(EnqueueResult::created);
        assertThat(max.stream().map(EnqueueResult::id).distinct().count()).isEqualTo(Jobs.MAX_BATCH);
        assertThat(jobCount()).isEqualTo(Jobs.MAX_BATCH);
    }

    /**
     * Single and batch enqueue with taken keys return the existing job (created=false, same id),
     * including a key repeated inside one batch.
     *
     * <p>Protection removed and seen failing: mapping a key repeated inside the batch to its first
     * occurrence (JobStore.enqueueBatch without the {@code seenKey} check): the repeat consumed the id
     * of the next created job and the mapping ran off the end (IndexOutOfBoundsException).
     */
    @Test
    void J10_duplicateIdempotencyKeyReturnsExistingJob() throws Exception {
        Jobs jobs = jobsClient();
        EnqueueResult first = jobs.enqueue(JobRequest.of("send", new Item("a")).idempotencyKey("welcome:42"));
        EnqueueResult again = jobs.enqueue(JobRequest.of("send", new Item("b")).idempotencyKey("welcome:42"));
        assertThat(first.created()).isTrue();
        assertThat(again).isEqualTo(new EnqueueResult(first.id(), false));
        assertThat(jobs.get(first.id()).orElseThrow().payloadJson())
                .as("the first payload stands")
                .contains("\"a\"");

        List<JobRequest> batch = new ArrayList<>();
        batch.add(JobRequest.of("send", new Item("new-1")).idempotencyKey("k1")); // 0: created
        batch.add(JobRequest.of("send", new Item("keyless"))); // 1: created
        batch.add(JobRequest.of("send", new Item("existing")).idempotencyKey("welcome:42")); // 2: existing job
        batch.add(JobRequest.of("send", new Item("new-1 again")).idempotencyKey("k1")); // 3: same as 0
        batch.add(JobRequest.of("send", new Item("new-2")).idempotencyKey("k2")); // 4: created
        batch.add(JobRequest.of("send", new Item("keyless 2"))); // 5: created
        batch.add(JobRequest.of("send", new Item("new-2 again")).idempotencyKey("k2")); // 6: same as 4
        List<EnqueueResult> r = jobs.enqueueAll(batch);
        assertThat(r).extracting(EnqueueResult::created).containsExactly(true, true, false, false, true, true, false);
        assertThat(r.get(2).id()).isEqualTo(first.id());
        assertThat(r.get(3).id()).isEqualTo(r.get(0).id());
        assertThat(r.get(6).id()).isEqualTo(r.get(4).id());
        assertThat(List.of(r.get(0).id(), r.get(1).id(), r.get(4).id(), r.get(5).id()))
                .doesNotHaveDuplicates()
                .doesNotContain(first.id());
        assertThat(jobs.get(r.get(0).id()).orElseThrow().payloadJson()).contains("\"new-1\"");
        assertThat(jobs.get(r.get(1).id()).orElseThrow().payloadJson()).contains("\"keyless\"");
        assertThat(jobs.get(r.get(4).id()).orElseThrow().payloadJson()).contains("\"new-2\"");
        assertThat(jobs.get(r.get(5).id()).orElseThrow().payloadJson()).contains("\"keyless 2\"");
        assertThat(jobCount()).isEqualTo(5);

        // The whole batch again: nothing new, every id the same.
        List<EnqueueResult> replay = jobs.enqueueAll(batch.subList(0, 1));
        assertThat(replay).containsExactly(new EnqueueResult(r.get(0).id(), false));
        assertThat(jobCount()).isEqualTo(5);
    }

    /**
     * Protection: the job is inserted on the caller's connection (its transaction), and workers are
     * notified at commit. Seen failing when Jobs.enqueue(Connection, …) was pointed at the pool: the
     * rolled-back job existed.
     */
    @Test
    void J10_transactionalEnqueueExistsOnlyIfTheTransactionCommits() throws Exception {
        java.util.Set<String> ran = java.util.concurrent.ConcurrentHashMap.newKeySet();
        Baton node = start(nodeBuilder("j10-node")
                .worker(fastWorker("default", 2).build())
                .handle("send", Item.class, (item, ctx) -> ran.add(item.name())));
        Jobs jobs = node.jobs();
        long rolledBack;
        try (Connection tx = pool.getConnection()) {
            tx.setAutoCommit(false);
            rolledBack = jobs.enqueue(tx, JobRequest.of("send", new Item("rolled back")))
                    .id();
            jobs.enqueueAll(tx, List.of(JobRequest.of("send", new Item("rolled back too"))));
            tx.rollback();
        }
        assertThat(jobs.get(rolledBack)).isEmpty();
        assertThat(jobCount()).isZero();

        long committed;
        try (Connection tx = pool.getConnection()) {
            tx.setAutoCommit(false);
            committed = jobs.enqueue(tx, JobRequest.of("send", new Item("committed")))
                    .id();
            tx.commit();
        }
        assertThat(awaitState(jobs, committed, JobState.SUCCEEDED).attempt()).isEqualTo(1);
        // A later job has run; the rolled-back ones never existed.
        assertThat(ran).containsExactly("committed");
        assertThat(jobCount()).isEqualTo(1);
    }
}
