package dev.baton;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.baton.internal.db.Db;
import dev.baton.internal.job.EnqueueWakes;
import dev.baton.internal.job.Interceptors;
import dev.baton.internal.job.JobLimitStore;
import dev.baton.internal.job.JobMetadata;
import dev.baton.internal.job.JobStore;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.function.LongSupplier;
import javax.sql.DataSource;

/**
 * Durable jobs: enqueue (alone, in batches, or inside your own transaction), inspect, cancel, retry,
 * pause and resume queues. Jobs run at least once on whichever node works their queue (see
 * {@link WorkerConfig}); never "exactly once": make handlers idempotent. Thread-safe.
 *
 * <p>A write whose connection fails while the database may already have committed it (its own transaction
 * on an auto-commit pool, or Baton's {@code COMMIT}) throws {@link UnknownOutcomeException}, never a plain
 * {@link BatonException}: an enqueue is retried with its idempotency key; cancel, retry, pause, resume and
 * the limits can be done again.
 */
public final class Jobs {
    /** The most jobs accepted by one batch enqueue. */
    public static final int MAX_BATCH = 10_000;

    private static final ObjectMapper ERRORS = new ObjectMapper();
    /** The end of an unknown outcome's message for a write that sets a state: doing it again does no harm. */
    private static final String AGAIN_IS_SAFE = ". Doing it again is safe: it sets the same state";

    private final Db db;
    private final JobStore store;
    private final PayloadCodec codec;
    private final int maxPayloadBytes;
    private final TransactionBinding binding;
    /** Per-kind defaults (see {@link Baton.Builder#jobDefaults}). */
    private final Map<String, JobDefaults> kindDefaults;
    /** The node's job interceptors (see {@link JobInterceptor}). */
    private final Interceptors interceptors;
    /** Wakes the workers of the enqueues Baton commits itself, at most once per queue per window (decision 0038). */
    private final EnqueueWakes wakes;

    Jobs(DataSource dataSource, JobStore store, PayloadCodec codec, int maxPayloadBytes) {
        this(
                dataSource,
                store,
                codec,
                maxPayloadBytes,
                TransactionBinding.NONE,
                Map.of(),
                Interceptors.NONE,
                System::nanoTime);
    }

    Jobs(
            DataSource dataSource,
            JobStore store,
            PayloadCodec codec,
            int maxPayloadBytes,
            TransactionBinding binding,
            Map<String, JobDefaults> kindDefaults,
            Interceptors interceptors,
            LongSupplier ticker) {
        this.interceptors = interceptors;
        this.db = Db.of(dataSource);
        this.wakes = new EnqueueWakes(db, store, ticker);
        this.binding = binding;
        this.kindDefaults = Map.copyOf(kindDefaults);
        this.store = store;
        this.codec = codec;
        this.maxPayloadBytes = maxPayloadBytes;
    }

    /**
     * Enqueues one job in its own transaction, committed before this returns (whatever the pool's
     * auto-commit setting). With an idempotency key that is already taken, nothing is inserted and the
     * existing job's id is returned ({@code created == false}).
     * Its queue's workers are notified at its commit; within 2 ms of this instance's last notification of
     * the queue, together with the other enqueues since, by the next enqueue's notification or at most 1 ms after
     * the 2 ms by the instance's own (so that many small enqueues do not commit one at a time behind NOTIFY's lock:
     * decisions 0038 and 0042).
     *
     * <p>Inside a transaction the calling thread has open on Baton's data source, as its
     * {@link Baton.Builder#transactionBinding transaction binding} sees it (the Spring Boot starter's: a
     * Spring-managed transaction, {@code @Transactional}), the job is enqueued on that transaction's
     * connection instead, as {@link #enqueue(Connection, JobRequest)} does: it exists only if that
     * transaction commits, and Baton neither commits, rolls back nor closes the connection.
     *
     * @throws IllegalArgumentException if the payload cannot be encoded or is too large
     * @throws DuplicateJobException     the request's uniqueness key is held and it chose
     *                                   {@link Uniqueness.Conflict#REJECT}: nothing was written
     * @throws UnknownOutcomeException   the connection failed while the job committed: it may exist (retry with
     *                                   an idempotency key to find out without enqueuing twice)
     */
    public EnqueueResult enqueue(JobRequest request) {
        Objects.requireNonNull(request, "request");
        try {
            return write(List.of(request), encoded -> {
                        Optional<Connection> open = binding.current(db.dataSource());
                        if (open.isPresent()) {
                            return onBound(open.get(), encoded);
                        }
                        if (JobStore.anyUnique(encoded)) {
                            // The key's lock, lookup and write in one transaction (see JobRequest.unique).
                            return db.transaction(
                                    "an enqueue of a '" + request.kind + "' job with a uniqueness key",
                                    c -> store.enqueueBatch(c, encoded));
                        }
                        EnqueueResult one = wakes.enqueue(
                                List.of(encoded.get(0).queue()),
                                notify -> db.write(
                                        "an enqueue of a '" + request.kind + "' job",
                                        ". Retry with an idempotency key to find out",
                                        c -> store.enqueueOne(c, encoded.get(0), notify)));
                        return List.of(one);
                    })
                    .get(0);
        } catch (SQLException ex) {
            throw Db.failed("enqueue of a '" + request.kind + "' job", ex);
        }
    }

    /**
     * Enqueues one job on the caller's connection, inside its transaction if one is open: the job
     * exists only if that transaction commits, and workers are notified only then. Baton neither
     * commits nor rolls back here: the caller's transaction decides.
     */
    public EnqueueResult enqueue(Connection transaction, JobRequest request) throws SQLException {
        Objects.requireNonNull(request, "request");
        return write(List.of(request), encoded -> onCaller(transaction, encoded))
                .get(0);
    }

    /**
     * Enqueues many jobs at once, all or none; results in input order. A batch of 100 jobs or more without
     * idempotency keys is written by COPY, others by one statement over arrays (docs/benchmarks/enqueue.md).
     * Inside a transaction the calling thread has open on Baton's data source (see
     * {@link #enqueue(JobRequest)}), on that transaction's connection, committed or rolled back with it.
     *
     * @throws UnknownOutcomeException the connection failed while the batch committed (during COMMIT, or during
     *                                 the one statement that is its own transaction): the jobs may exist (retry
     *                                 with idempotency keys to find out without enqueuing twice)
     * @throws DuplicateJobException   a request's uniqueness key is held and it chose
     *                                 {@link Uniqueness.Conflict#REJECT}: nothing of the batch was written
     */
    public List<EnqueueResult> enqueueAll(List<JobRequest> requests) {
        checkBatch(requests);
        try {
            return write(requests, encoded -> {
                Optional<Connection> open = binding.current(db.dataSource());
                if (open.isPresent()) {
                    return onBound(open.get(), encoded);
                }
                // One statement inserts the whole batch; a lookup of existing keys may follow, or a COPY takes
                // three. One transaction then, so that a failed lookup never reports as failed a batch that was
                // committed; a lone statement commits on its own (one round trip less).
                String what = "a batch enqueue of " + requests.size() + " jobs";
                String hint = ". Retry with idempotency keys to find out";
                EnqueueWakes.Write<List<EnqueueResult>> write = JobStore.oneStatement(encoded)
                        ? notify -> db.write(what, hint, c -> store.enqueueBatch(c, encoded, notify))
                        : notify -> db.transaction(what, hint, c -> store.enqueueBatch(c, encoded, notify));
                return JobStore.anyUnique(encoded) ? write.run(true) : wakes.enqueue(queues(encoded), write);
            });
        } catch (SQLException ex) {
            throw Db.failed("batch enqueue of " + requests.size() + " jobs", ex);
        }
    }

    /** Enqueues many jobs on the caller's connection, inside its transaction if one is open. */
    public List<EnqueueResult> enqueueAll(Connection transaction, List<JobRequest> requests) throws SQLException {
        checkBatch(requests);
        return write(requests, encoded -> onCaller(transaction, encoded));
    }

    /**
     * Writes encoded jobs on the caller's connection. Requests with a uniqueness key need their key locks
     * held until the jobs are written: inside the caller's open transaction (under a savepoint, so that a
     * rejected duplicate leaves that transaction as it was), or in a transaction of Baton's when the
     * connection is in auto-commit mode.
     */
    private List<EnqueueResult> onCaller(Connection c, List<JobStore.Encoded> encoded) throws SQLException {
        return onCaller(c, encoded, true);
    }

    /**
     * Writes encoded jobs in the transaction the calling thread has open through the binding. Without uniqueness
     * keys, their workers are woken once that transaction has committed, with other enqueues, if the binding can
     * say when (decision 0039); else by a notification inside it.
     */
    private List<EnqueueResult> onBound(Connection c, List<JobStore.Encoded> encoded) throws SQLException {
        if (JobStore.anyUnique(encoded)) {
            return onCaller(c, encoded, true);
        }
        List<String> queues = queues(encoded);
        boolean later = binding.afterCommit(() -> wakes.afterCommit(queues));
        return onCaller(c, encoded, !later);
    }

    /** {@code notify}: whether the statement notifies the queues (jobs with uniqueness keys always do). */
    private List<EnqueueResult> onCaller(Connection c, List<JobStore.Encoded> encoded, boolean notify)
            throws SQLException {
        if (!JobStore.anyUnique(encoded)) {
            return encoded.size() == 1
                    ? List.of(store.enqueueOne(c, encoded.get(0), notify))
                    : store.enqueueBatch(c, encoded, notify);
        }
        if (c.getAutoCommit()) {
            return db.transactionOn(c, "an enqueue with uniqueness keys", "", x -> store.enqueueBatch(x, encoded));
        }
        Savepoint before = c.setSavepoint();
        List<EnqueueResult> out;
        try {
            out = store.enqueueBatch(c, encoded);
        } catch (DuplicateJobException e) {
            c.rollback(before);
            throw e;
        }
        c.releaseSavepoint(before);
        return out;
    }

    /** The job, with every error of every attempt. */
    public Optional<JobInfo> get(long id) {
        try {
            return db.call("reading job " + id, c -> store.get(c, id, Jobs::errors));
        } catch (SQLException ex) {
            throw Db.failed("reading job " + id, ex);
        }
    }

    /**
     * Cancels a job: an available job ends {@link JobState#CANCELLED} at once; a running job's handler
     * is asked to stop (at its next heartbeat) and the job then ends cancelled, not retried. Returns
     * the state after the call, or empty if the job is unknown or already finished.
     */
    public Optional<JobState> cancel(long id) {
        return db.writeUnchecked(
                "cancelling job " + id,
                ". Cancelling it again is safe: it returns the job's state",
                c -> store.cancel(c, id));
    }

    /**
     * Runs a failed or cancelled job again now, allowing at least one more attempt (at the ceiling of
     * {@link JobRequest#MAX_ATTEMPTS_LIMIT} attempts, one more beyond it).
     */
    public boolean retry(long id) {
        return db.writeUnchecked(
                "retrying job " + id,
                ". Retrying it again is safe: it returns false once the job is no longer failed or cancelled",
                c -> store.retry(c, id));
    }

    /** Stops claims from {@code queue} on every node; its jobs stay available. */
    public void pause(String queue) {
        setPaused(queue, true);
    }

    /** Resumes claiming on {@code queue} on every node (see {@link #pause}). */
    public void resume(String queue) {
        setPaused(queue, false);
    }

    /**
     * The depth of every queue with unfinished jobs (or paused): available and running jobs and the due
     * time of the oldest available one. Cheap enough to poll: it reads only the small partial indexes of
     * unfinished jobs, however many finished jobs are kept.
     */
    public List<QueueStats> stats() {
        try {
            return db.call("reading queue statistics", store::stats);
        } catch (SQLException ex) {
            throw Db.failed("reading queue statistics", ex);
        }
    }

    /**
     * Finished jobs per queue (succeeded, failed, cancelled) among those kept for the retention period.
     * Reads every finished job kept: for an operator's occasional look, not for periodic polling.
     */
    public List<FinishedStats> finishedStats() {
        try {
            return db.call("reading finished-job statistics", store::finishedStats);
        } catch (SQLException ex) {
            throw Db.failed("reading finished-job statistics", ex);
        }
    }

    private void setPaused(String queue, boolean paused) {
        JobRequest.validQueue(queue);
        db.writeUnchecked((paused ? "pausing" : "resuming") + " queue '" + queue + "'", AGAIN_IS_SAFE, c -> {
            store.setPaused(c, queue, paused);
            return null;
        });
    }

    /**
     * Sets a cluster-wide job limit (replacing the values of the limit with the same {@link JobLimit#id()}),
     * committed before this returns. A changed value holds for the next claim on every node; a limit on a
     * queue that had none holds on every node within a second (each node rereads which limits exist once a
     * second). Only nodes of a Baton version that knows job limits enforce them; see {@link JobLimit}.
     */
    public void setLimit(JobLimit limit) {
        if (limit == null) {
            throw new IllegalArgumentException("limit must not be null (build one with JobLimit.perQueue, perKind, "
                    + "perMetadata or their rate variants)");
        }
        db.writeUnchecked("setting job limit " + limit, AGAIN_IS_SAFE, c -> {
            store.limits().upsert(c, row(limit));
            return null;
        });
    }

    /**
     * Removes the limit with the same {@link JobLimit#id()} as {@code limit} (its values are ignored);
     * returns whether there was one.
     */
    public boolean removeLimit(JobLimit limit) {
        if (limit == null) {
            throw new IllegalArgumentException("limit must not be null (build one with JobLimit.perQueue, perKind, "
                    + "perMetadata or their rate variants)");
        }
        return db.writeUnchecked(
                "removing job limit " + limit.id(),
                ". Removing it again is safe: it returns false once the limit is gone",
                c -> store.limits().delete(c, limit.id()));
    }

    /** Every job limit set, in {@link JobLimit#id()} order. */
    public List<JobLimit> limits() {
        List<JobLimit> out = new ArrayList<>();
        for (var r : db.callUnchecked("reading job limits", c -> store.limits().list(c))) {
            out.add(JobLimit.of(
                    r.queue(), r.kind(), r.metadataKey(), r.maxRunning(), r.rateStarts(), r.rateWindowMs()));
        }
        return out;
    }

    static JobLimitStore.Row row(JobLimit l) {
        return new JobLimitStore.Row(
                l.id(),
                l.queue().orElse(null),
                l.kind().orElse(null),
                l.metadataKey().orElse(null),
                l.isRate() ? null : l.maxRunning().getAsInt(),
                l.isRate() ? l.starts().getAsInt() : null,
                l.window().map(Duration::toMillis).orElse(null));
    }

    /** A write of encoded jobs: one result per job, in order. */
    @FunctionalInterface
    private interface Write {
        List<EnqueueResult> apply(List<JobStore.Encoded> encoded) throws SQLException;
    }

    /**
     * Passes the requests through the interceptors, encodes them and writes them; the interceptors then
     * see each result, or the failure.
     */
    private List<EnqueueResult> write(List<JobRequest> requests, Write write) throws SQLException {
        if (interceptors.isEmpty()) {
            return write.apply(encodeEach(requests));
        }
        List<JobRequest> intercepted = interceptors.beforeEnqueue(requests); // a refusal tells those who saw it
        List<EnqueueResult> results = null;
        Throwable failure = null;
        try {
            results = write.apply(encodeEach(intercepted));
            return results;
        } catch (SQLException | RuntimeException | Error e) {
            failure = e;
            throw e;
        } finally {
            interceptors.afterEnqueue(intercepted, results, failure);
        }
    }

    /** The queues of {@code encoded}, each once. */
    private static List<String> queues(List<JobStore.Encoded> encoded) {
        return encoded.stream().map(JobStore.Encoded::queue).distinct().toList();
    }

    /** Notifies what the enqueue notifier still holds; later enqueues notify in their own statement. */
    void close() {
        wakes.close();
    }

    private List<JobStore.Encoded> encodeEach(List<JobRequest> requests) {
        List<JobStore.Encoded> encoded = new ArrayList<>(requests.size());
        for (JobRequest r : requests) {
            encoded.add(encode(r));
        }
        return encoded;
    }

    private static void checkBatch(List<JobRequest> requests) {
        Objects.requireNonNull(requests, "requests");
        if (requests.isEmpty() || requests.size() > MAX_BATCH) {
            throw new IllegalArgumentException(
                    "a batch must hold 1 to " + MAX_BATCH + " jobs, but held " + requests.size());
        }
        for (int i = 0; i < requests.size(); i++) {
            if (requests.get(i) == null) {
                throw new IllegalArgumentException("job request " + i + " of the batch is null");
            }
        }
    }

    JobStore.Encoded encode(JobRequest request) {
        Objects.requireNonNull(request, "request");
        request = request.withDefaults(kindDefaults.get(request.kind));
        String json;
        try {
            json = codec.encode(request.payload);
        } catch (Exception e) {
            throw new IllegalArgumentException(
                    "payload of a '" + request.kind + "' job cannot be encoded by "
                            + codec.getClass().getSimpleName() + ": " + e.getMessage(),
                    e);
        }
        if (json == null) {
            throw new IllegalArgumentException("payload codec returned null for a '" + request.kind + "' job");
        }
        int bytes = json.getBytes(StandardCharsets.UTF_8).length;
        if (bytes > maxPayloadBytes) {
            throw new IllegalArgumentException("payload of a '" + request.kind + "' job is " + bytes + " bytes "
                    + "encoded; the limit is " + maxPayloadBytes + " bytes (WorkerConfig.maxPayloadBytes). Store "
                    + "large data elsewhere and pass a reference");
        }
        return request.encoded(json, JobMetadata.json(request.metadata, request.options.retryPolicy()));
    }

    static List<JobError> errors(String json) {
        List<JobError> out = new ArrayList<>();
        try {
            for (JsonNode e : ERRORS.readTree(json)) {
                out.add(new JobError(
                        e.path("attempt").asInt(),
                        e.path("node").asText(null),
                        e.hasNonNull("at") ? parseInstant(e.get("at").asText()) : null,
                        e.path("class").asText(null),
                        e.path("message").asText(null),
                        e.path("stack").asText(null)));
            }
        } catch (Exception e) {
            out.add(new JobError(0, null, null, "unreadable", json, null));
        }
        return out;
    }

    private static Instant parseInstant(String s) {
        try {
            return java.time.OffsetDateTime.parse(s).toInstant();
        } catch (RuntimeException e) {
            return null;
        }
    }

    /** The payload codec (test support: baton-test decodes enqueued payloads with it). */
    PayloadCodec codec() {
        return codec;
    }
}
