package dev.baton.internal.job;

import dev.baton.BatonMetrics;
import dev.baton.DuplicateJobException;
import dev.baton.EnqueueResult;
import dev.baton.FinishedStats;
import dev.baton.JobError;
import dev.baton.JobInfo;
import dev.baton.JobState;
import dev.baton.QueueStats;
import dev.baton.Uniqueness;
import dev.baton.internal.db.Db;
import dev.baton.internal.db.Identifiers;
import dev.baton.internal.db.Jdbc;
import dev.baton.internal.db.Sql;
import dev.baton.internal.db.SqlCall;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import org.postgresql.PGConnection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** The job table's statements ({@code sql/job.sql}); the only place that runs them. */
public final class JobStore {
    private static final Logger log = LoggerFactory.getLogger(JobStore.class);

    /** unique_violation: a racing claim lost on job_running_key. */
    private static final String UNIQUE_VIOLATION = "23505";

    private final Sql sql;
    private final String channel;
    private final String limitLockPrefix;
    private final JobLimitStore limits;
    private final JobAdminStore admin;
    private volatile BatonMetrics metrics = BatonMetrics.NONE;

    public JobStore(String schema) {
        this.sql = Sql.load("job.sql", Identifiers.schema(schema));
        this.admin = new JobAdminStore(schema, channel(schema));
        this.channel = channel(schema);
        // Advisory locks are database-wide: the schema keeps two Baton schemas in one database apart.
        this.limitLockPrefix = "baton.job-limit:" + schema + ":";
        this.limits = new JobLimitStore(schema);
    }

    /** The store of the job limits the claim statement reads (table job_limit). */
    public JobLimitStore limits() {
        return limits;
    }

    /** The operator's statements on the job table (search, bulk actions, throughput). */
    public JobAdminStore admin() {
        return admin;
    }

    public static String channel(String schema) {
        return Identifiers.channel(schema, "job");
    }

    public String channel() {
        return channel;
    }

    /** Where enqueues, claims and rescues are reported. */
    public JobStore metrics(BatonMetrics metrics) {
        this.metrics = metrics;
        return this;
    }

    /** A request with its payload already encoded; {@code keyFifo}: its key's jobs run in enqueue order. */
    public record Encoded(
            String queue,
            String kind,
            String payloadJson,
            int priority,
            Instant runAt,
            Duration delay,
            int maxAttempts,
            Duration timeout,
            String concurrencyKey,
            String idempotencyKey,
            String metadataJson,
            Unique unique,
            boolean keyFifo) {
        /** A request without a uniqueness key, its concurrency key (if any) in {@link dev.baton.KeyOrder#ANY}. */
        public Encoded(
                String queue,
                String kind,
                String payloadJson,
                int priority,
                Instant runAt,
                Duration delay,
                int maxAttempts,
                Duration timeout,
                String concurrencyKey,
                String idempotencyKey,
                String metadataJson) {
            this(
                    queue,
                    kind,
                    payloadJson,
                    priority,
                    runAt,
                    delay,
                    maxAttempts,
                    timeout,
                    concurrencyKey,
                    idempotencyKey,
                    metadataJson,
                    null,
                    false);
        }
    }

    /** A request's uniqueness: its key, scope and window as the statements take them, and its conflict choice. */
    public record Unique(String key, String scope, Long windowMs, Uniqueness.Scope kind, Uniqueness.Conflict conflict) {
        public static Unique of(String key, Uniqueness u) {
            String scope = switch (u.scope()) {
                case AVAILABLE -> "available";
                case AVAILABLE_OR_RUNNING -> "active";
                case WINDOW -> "window";
            };
            return new Unique(key, scope, u.window() == null ? null : u.window().toMillis(), u.scope(), u.conflict());
        }
    }

    /** True if any request of {@code batch} has a uniqueness key (its enqueue then needs a transaction). */
    public static boolean anyUnique(List<Encoded> batch) {
        for (Encoded e : batch) {
            if (e.unique() != null) {
                return true;
            }
        }
        return false;
    }

    /** A claimed attempt. */
    public record Claimed(
            long id,
            String queue,
            String kind,
            String payloadJson,
            int attempt,
            int maxAttempts,
            long token,
            Long timeoutMs,
            long waitedMs,
            String metadataJson,
            String concurrencyKey,
            int priority,
            Instant runAt) {
        /** Where this job sits in the claim order (priority, run_at, id): a claim may resume after it. */
        public ClaimKey key() {
            return new ClaimKey(priority, runAt, id);
        }
    }

    /**
     * A position in the claim order of a queue's ready jobs, (priority, run_at, id): a claim given one takes only
     * jobs after it (decision 0037). {@link #HEAD} is before every job: the table's CHECK allows priorities 0 to 100.
     */
    public record ClaimKey(int priority, Instant runAt, long id) implements Comparable<ClaimKey> {
        public static final ClaimKey HEAD = new ClaimKey(-1, Instant.EPOCH, 0);

        @Override
        public int compareTo(ClaimKey o) {
            int c = Integer.compare(priority, o.priority);
            if (c == 0) {
                c = runAt.compareTo(o.runAt);
            }
            return c != 0 ? c : Long.compare(id, o.id);
        }
    }

    // ---------------------------------------------------------------- enqueue

    public EnqueueResult enqueueOne(Connection c, Encoded e) throws SQLException {
        return enqueueOne(c, e, true);
    }

    /**
     * One job; {@code notify}: its statement notifies the queue (at commit). Without, the caller wakes the
     * queue's workers once it has committed ({@link EnqueueWakes}). A job with a uniqueness key always notifies.
     */
    public EnqueueResult enqueueOne(Connection c, Encoded e, boolean notify) throws SQLException {
        if (e.unique() != null) {
            return enqueueUnique(c, List.of(e)).get(0);
        }
        Encoded r = e;
        try (SqlCall q = bindJob(sql.prepare(c, "enqueue"), r).setBoolean("notify", notify)) {
            ResultSet rs = q.query();
            if (rs.next()) {
                metrics.jobsEnqueued(r.queue(), r.kind(), 1);
                return new EnqueueResult(rs.getLong(1), true);
            }
        }
        return new EnqueueResult(existing(c, List.of(r.idempotencyKey())).get(r.idempotencyKey()), false);
    }

    /** Binds one job's columns and the notification channel, as the single-row enqueue statements name them. */
    private SqlCall bindJob(SqlCall q, Encoded r) throws SQLException {
        return q.setString("queue", r.queue())
                .setString("kind", r.kind())
                .setString("payload", r.payloadJson())
                .setInt("priority", r.priority())
                .setInstant("run_at", r.runAt())
                .setLong("delay_ms", r.delay().toMillis())
                .setInt("max_attempts", r.maxAttempts())
                .setLongOrNull(
                        "timeout_ms", r.timeout() == null ? null : r.timeout().toMillis())
                .setString("concurrency_key", r.concurrencyKey())
                .setBoolean("key_fifo", r.keyFifo())
                .setString("idempotency_key", r.idempotencyKey())
                .setString("metadata", r.metadataJson())
                .setString("channel", channel);
    }

    public List<EnqueueResult> enqueueBatch(Connection c, List<Encoded> batch) throws SQLException {
        return enqueueBatch(c, batch, true);
    }

    /**
     * True if {@link #enqueueBatch} writes {@code batch} with one statement and nothing after it: no uniqueness or
     * idempotency keys (whose lookups follow the insert) and below the COPY threshold.
     */
    public static boolean oneStatement(List<Encoded> batch) {
        return batch.size() < COPY_FROM && !anyUnique(batch) && noIdempotencyKeys(batch);
    }

    /** Many jobs; {@code notify} as for {@link #enqueueOne(Connection, Encoded, boolean)}. */
    public List<EnqueueResult> enqueueBatch(Connection c, List<Encoded> batch, boolean notify) throws SQLException {
        if (anyUnique(batch)) {
            return enqueueUnique(c, batch);
        }
        if (batch.size() >= COPY_FROM && noIdempotencyKeys(batch) && c.isWrapperFor(PGConnection.class)) {
            return enqueueByCopy(c, batch, notify);
        }
        return enqueuePlainBatch(c, batch, notify);
    }

    /**
     * From how many jobs a batch without idempotency keys goes by COPY (three round trips, each cheap per row)
     * rather than by one statement over arrays (one round trip, the arrays parsed and the rows inserted with ON
     * CONFLICT). {@code baton-bench enqueue} measured batches of 1,000 and 10,000; this threshold itself is a
     * guess, not measured.
     */
    static final int COPY_FROM = 100;

    private static boolean noIdempotencyKeys(List<Encoded> batch) {
        for (Encoded e : batch) {
            if (e.idempotencyKey() != null) {
                return false;
            }
        }
        return true;
    }

    /**
     * Enqueues a batch without idempotency keys by COPY: the ids are reserved first (so the results keep the
     * input order), the rows copied in one COPY (atomic: all or none), and the queues notified. In a
     * transaction (the caller's, or Baton's for {@code enqueueAll}) the notifications go with the reservation
     * (two statements); otherwise three statements each commit on its own, the notification last: a reserved
     * id that is never used leaves a gap, as a rolled-back insert does; a notify that fails costs a poll
     * interval.
     * A job due now gets the database's clock of the reservation as its run_at (the array statement takes it
     * at the insert, a moment later).
     */
    private List<EnqueueResult> enqueueByCopy(Connection c, List<Encoded> batch, boolean notify) throws SQLException {
        int n = batch.size();
        Map<List<String>, Integer> created = new LinkedHashMap<>();
        List<String> queues = new ArrayList<>();
        for (Encoded r : batch) {
            if (created.merge(List.of(r.queue(), r.kind()), 1, Integer::sum) == 1 && !queues.contains(r.queue())) {
                queues.add(r.queue());
            }
        }
        // In a transaction the notifications wait for its commit, so they go with the reservation: one round
        // trip less. Each statement committing on its own, they must follow the rows.
        boolean notifyFirst = notify && !c.getAutoCommit();
        Instant now;
        long[] ids = new long[n];
        try (SqlCall q = notifyFirst
                ? sql.prepare(c, "reserve_ids_and_notify")
                        .setInt("n", n)
                        .setArray("queues", "text", queues.toArray(new String[0]))
                        .setString("channel", channel)
                : sql.prepare(c, "reserve_ids").setInt("n", n)) {
            ResultSet rs = q.query();
            rs.next();
            now = rs.getObject(1, java.time.OffsetDateTime.class).toInstant();
            ResultSet a = rs.getArray(2).getResultSet();
            for (int i = 0; a.next(); i++) {
                ids[i] = a.getLong(2);
            }
        }
        try (BinaryCopy rows =
                new BinaryCopy(c.unwrap(PGConnection.class).getCopyAPI().copyIn(sql.get("copy_jobs")))) {
            for (int i = 0; i < n; i++) {
                Encoded r = batch.get(i);
                rows.row(12)
                        .int8(ids[i])
                        .text(r.queue())
                        .text(r.kind())
                        .jsonb(r.payloadJson())
                        .int2(r.priority())
                        .text("available")
                        .timestamptz((r.runAt() == null ? now : r.runAt()).plus(r.delay()))
                        .int4(r.maxAttempts())
                        .int8OrNull(r.timeout() == null ? null : r.timeout().toMillis())
                        .text(r.concurrencyKey())
                        .bool(r.keyFifo())
                        .jsonb(r.metadataJson());
            }
            rows.finish();
        }
        if (notify && !notifyFirst) {
            notifyAfterCopy(c, n, queues);
        }
        List<EnqueueResult> out = new ArrayList<>(n);
        for (long id : ids) {
            out.add(new EnqueueResult(id, true));
        }
        created.forEach((queueAndKind, count) -> metrics.jobsEnqueued(queueAndKind.get(0), queueAndKind.get(1), count));
        return out;
    }

    /** Wakes the workers of {@code queues} (at the commit of {@code c}'s transaction, if one is open). */
    public void notifyQueues(Connection c, List<String> queues) throws SQLException {
        try (SqlCall q = sql.prepare(c, "notify_queues")
                .setArray("queues", "text", queues.toArray(new String[0]))
                .setString("channel", channel)) {
            q.query().close();
        }
    }

    /** After a COPY whose rows committed on their own: wakes the queues' workers. */
    private void notifyAfterCopy(Connection c, int n, List<String> queues) throws SQLException {
        try {
            notifyQueues(c, queues);
        } catch (SQLException e) {
            if (!c.getAutoCommit()) {
                throw e; // the caller's transaction cannot commit: nothing was written
            }
            // The jobs are committed: reporting a failure would invite an enqueue twice. Workers find them
            // at their next poll instead of at once.
            log.warn("{} jobs enqueued, but their queues {} could not be notified: {}", n, queues, e.getMessage());
        }
    }

    /**
     * Enqueues requests some of which have a uniqueness key; results in input order. Must run in one
     * transaction (the key locks are held until it ends). The key rows are locked first, all at once in key
     * order; then each keyed request, in input order, looks at its key's latest job (which may be one an
     * earlier request of this batch created) and inserts, returns it, replaces it or rejects; the requests
     * without a key go in one batch statement.
     *
     * @throws DuplicateJobException a request with {@link Uniqueness.Conflict#REJECT} found its key's job in
     *                               scope: the caller rolls back (or to its savepoint), so nothing is written
     */
    private List<EnqueueResult> enqueueUnique(Connection c, List<Encoded> batch) throws SQLException {
        int n = batch.size();
        List<String> keys = new ArrayList<>();
        List<Encoded> plain = new ArrayList<>();
        for (Encoded e : batch) {
            if (e.unique() != null) {
                keys.add(e.unique().key());
            } else {
                plain.add(e);
            }
        }
        Map<String, Long> latest = new HashMap<>();
        try (SqlCall q = sql.prepare(c, "unique_lock").setArray("keys", "text", keys.toArray(new String[0]))) {
            ResultSet rs = q.query();
            while (rs.next()) {
                latest.put(rs.getString(1), rs.getLong(2));
            }
        }
        EnqueueResult[] out = new EnqueueResult[n];
        for (int i = 0; i < n; i++) {
            Encoded e = batch.get(i);
            if (e.unique() == null) {
                continue;
            }
            Unique u = e.unique();
            long latestId = latest.get(u.key());
            String state = latestId == 0 ? null : findInScope(c, latestId, u);
            if (state != null) {
                switch (u.conflict()) {
                    case RETURN_EXISTING -> out[i] = new EnqueueResult(latestId, false);
                    case REJECT -> throw new DuplicateJobException(u.key(), latestId);
                    case REPLACE -> {
                        if ("available".equals(state) && replace(c, latestId, e)) {
                            out[i] = new EnqueueResult(latestId, false, EnqueueResult.Outcome.REPLACED);
                        } else if (u.kind() != Uniqueness.Scope.AVAILABLE) {
                            out[i] = new EnqueueResult(latestId, false); // running or finished: never changed
                        } // else claimed since the lookup: it left the scope, so a new job follows
                    }
                }
            }
            if (out[i] == null) {
                out[i] = insertUnique(c, e);
                if (out[i].created()) {
                    latest.put(u.key(), out[i].id());
                }
            }
        }
        if (!plain.isEmpty()) {
            List<EnqueueResult> plainResults = enqueuePlainBatch(c, plain, true);
            int next = 0;
            for (int i = 0; i < n; i++) {
                if (out[i] == null) {
                    out[i] = plainResults.get(next++);
                }
            }
        }
        return List.of(out);
    }

    /** The state of job {@code id} if it is in the scope of {@code u}, else null. */
    private String findInScope(Connection c, long id, Unique u) throws SQLException {
        try (SqlCall q = sql.prepare(c, "unique_find")
                .setLong("id", id)
                .setString("scope", u.scope())
                .setLongOrNull("window_ms", u.windowMs())) {
            ResultSet rs = q.query();
            return rs.next() ? rs.getString(2) : null;
        }
    }

    private boolean replace(Connection c, long id, Encoded e) throws SQLException {
        try (SqlCall q = sql.prepare(c, "unique_replace")
                .setLong("id", id)
                .setString("payload", e.payloadJson())
                .setInstant("run_at", e.runAt())
                .setLong("delay_ms", e.delay().toMillis())
                .setString("channel", channel)) {
            return q.query().next();
        }
    }

    private EnqueueResult insertUnique(Connection c, Encoded r) throws SQLException {
        try (SqlCall q = bindJob(sql.prepare(c, "enqueue_unique"), r)
                .setString("unique_key", r.unique().key())) {
            ResultSet rs = q.query();
            if (rs.next()) {
                metrics.jobsEnqueued(r.queue(), r.kind(), 1);
                return new EnqueueResult(rs.getLong(1), true);
            }
        }
        // The idempotency key was taken: that job stands, and the uniqueness key keeps naming its latest job.
        return new EnqueueResult(existing(c, List.of(r.idempotencyKey())).get(r.idempotencyKey()), false);
    }

    /** Deletes up to {@code limit} uniqueness-key rows whose job is gone; returns how many. */
    public int pruneUnique(Connection c, int limit) throws SQLException {
        try (SqlCall q = sql.prepare(c, "prune_unique").setInt("limit", limit)) {
            return q.update();
        }
    }

    private List<EnqueueResult> enqueuePlainBatch(Connection c, List<Encoded> batch, boolean notify)
            throws SQLException {
        int n = batch.size();
        String[] queues = new String[n];
        String[] kinds = new String[n];
        String[] payloads = new String[n];
        Short[] priorities = new Short[n];
        Timestamp[] runAts = new Timestamp[n];
        Long[] delays = new Long[n];
        Integer[] maxAttempts = new Integer[n];
        Long[] timeouts = new Long[n];
        String[] concurrencyKeys = new String[n];
        Boolean[] keyFifo = new Boolean[n];
        String[] idempotencyKeys = new String[n];
        String[] metadata = new String[n];
        for (int i = 0; i < n; i++) {
            Encoded r = batch.get(i);
            queues[i] = r.queue();
            kinds[i] = r.kind();
            payloads[i] = batch.get(i).payloadJson();
            priorities[i] = (short) r.priority();
            runAts[i] = r.runAt() == null ? null : Timestamp.from(r.runAt());
            delays[i] = r.delay().toMillis();
            maxAttempts[i] = r.maxAttempts();
            timeouts[i] = r.timeout() == null ? null : r.timeout().toMillis();
            concurrencyKeys[i] = r.concurrencyKey();
            keyFifo[i] = r.keyFifo();
            idempotencyKeys[i] = r.idempotencyKey();
            metadata[i] = r.metadataJson();
        }
        List<Long> createdIds = new ArrayList<>();
        Map<String, Long> createdByKey = new HashMap<>();
        try (SqlCall q = sql.prepare(c, "enqueue_batch")
                .setArray("queues", "text", queues)
                .setArray("kinds", "text", kinds)
                .setArray("payloads", "text", payloads)
                .setArray("priorities", "int2", priorities)
                .setArray("run_ats", "timestamptz", runAts)
                .setArray("delays_ms", "int8", delays)
                .setArray("max_attempts", "int4", maxAttempts)
                .setArray("timeouts_ms", "int8", timeouts)
                .setArray("concurrency_keys", "text", concurrencyKeys)
                .setArray("key_fifo", "bool", keyFifo)
                .setArray("idempotency_keys", "text", idempotencyKeys)
                .setArray("metadata", "text", metadata)
                .setString("channel", channel)
                .setBoolean("notify", notify)) {
            ResultSet rs = q.query();
            while (rs.next()) {
                long id = rs.getLong(1);
                String key = rs.getString(2);
                createdIds.add(id);
                if (key != null) {
                    createdByKey.put(key, id);
                }
            }
        }
        // Rows were inserted in input order, so ascending ids map back to the inputs that created a
        // job; inputs whose key already existed (or repeated a key in this batch) get the existing id.
        List<String> missing = new ArrayList<>();
        for (String key : idempotencyKeys) {
            if (key != null && !createdByKey.containsKey(key)) {
                missing.add(key);
            }
        }
        Map<String, Long> existing = missing.isEmpty() ? Map.of() : existing(c, missing);
        List<EnqueueResult> out = new ArrayList<>(n);
        Map<List<String>, Integer> created = new LinkedHashMap<>();
        int next = 0;
        Map<String, Boolean> seenKey = new HashMap<>();
        for (int i = 0; i < n; i++) {
            String key = idempotencyKeys[i];
            if (key == null || createdByKey.containsKey(key) && seenKey.putIfAbsent(key, true) == null) {
                out.add(new EnqueueResult(createdIds.get(next++), true));
                created.merge(List.of(queues[i], kinds[i]), 1, Integer::sum);
            } else {
                Long id = createdByKey.containsKey(key) ? createdByKey.get(key) : existing.get(key);
                out.add(new EnqueueResult(id, false));
            }
        }
        created.forEach((queueAndKind, count) -> metrics.jobsEnqueued(queueAndKind.get(0), queueAndKind.get(1), count));
        return out;
    }

    private Map<String, Long> existing(Connection c, List<String> keys) throws SQLException {
        Map<String, Long> out = new HashMap<>();
        try (SqlCall q = sql.prepare(c, "find_by_keys").setArray("keys", "text", keys.toArray(new String[0]))) {
            ResultSet rs = q.query();
            while (rs.next()) {
                out.put(rs.getString(2), rs.getLong(1));
            }
        }
        for (String k : keys) {
            if (!out.containsKey(k)) {
                // The conflicting job was pruned (or rolled back) between the insert and the lookup.
                throw new SQLException("job with idempotency key '" + k + "' conflicted but could not be found; retry");
            }
        }
        return out;
    }

    // ---------------------------------------------------------------- claim and attempts

    /**
     * Claims up to {@code limit} jobs of the given kinds; empty when none are ready or a racing claim won
     * a key. One statement, run through {@link Db#callOn} (as it is, or in a transaction of its own). Locks
     * up to twice {@code limit} candidate rows, so that one job per concurrency key can still fill the claim.
     */
    public List<Claimed> claim(Connection c, String queue, String[] kinds, int limit, long jobLeaseMs, String nodeId)
            throws SQLException {
        return claim(c, queue, kinds, limit, true, jobLeaseMs, nodeId, ClaimKey.HEAD);
    }

    /**
     * As {@link #claim(Connection, String, String[], int, long, String)}; {@code keyed} false locks only
     * {@code limit} candidate rows, for a queue whose recent jobs had no concurrency key (decision 0028): the
     * second half would be locked (a WAL record and a heap write each) and skipped by every concurrent
     * claimer, never claimed. Only jobs after {@code after} in the claim order are claimed ({@link ClaimKey#HEAD}:
     * any; decision 0037).
     */
    public List<Claimed> claim(
            Connection c,
            String queue,
            String[] kinds,
            int limit,
            boolean keyed,
            long jobLeaseMs,
            String nodeId,
            ClaimKey after)
            throws SQLException {
        try (SqlCall q = sql.prepare(c, "claim")
                .setString("queue", queue)
                .setArray("kinds", "text", kinds)
                .setInt("after_priority", after.priority())
                .setInstant("after_run_at", after.runAt())
                .setLong("after_id", after.id())
                .setInt("candidates", keyed ? limit * 2 : limit)
                .setInt("limit", limit)
                .setLong("job_lease_ms", jobLeaseMs)
                .setString("node_id", nodeId)) {
            return claimed(q, queue, limit);
        } catch (SQLException e) {
            throw keyRace(e);
        }
    }

    /**
     * The limited claim path (decision 0019): like {@link #claim}, but claims only what the limits of
     * {@code limitIds} that apply to the queue allow. Two statements, so the caller must run this in one
     * READ COMMITTED transaction ({@link Db#transaction}): the first waits for the limits' locks, the
     * second takes a fresh snapshot that sees every claim committed before.
     */
    public List<Claimed> claimLimited(
            Connection tx, String queue, String[] kinds, int limit, long jobLeaseMs, String nodeId, String[] limitIds)
            throws SQLException {
        try (SqlCall q = sql.prepare(tx, "lock_limits")
                .setString("prefix", limitLockPrefix)
                .setArray("limit_ids", "text", limitIds)) {
            q.query().close();
        }
        try (SqlCall q = sql.prepare(tx, "claim_limited")
                .setString("queue", queue)
                .setArray("kinds", "text", kinds)
                // More candidates than the plain path: some are ranked out by a limit.
                .setInt("candidates", limit * 4)
                .setInt("limit", limit)
                .setLong("job_lease_ms", jobLeaseMs)
                .setString("node_id", nodeId)
                .setArray("limit_ids", "text", limitIds)
                .setString("prefix", RATE_LIMITER_PREFIX)) {
            return claimed(q, queue, limit);
        } catch (SQLException e) {
            throw keyRace(e);
        }
    }

    /** The limiter name prefix of job rates in table rate_limit (one schema: no schema needed). */
    public static final String RATE_LIMITER_PREFIX = "baton.job:";

    private List<Claimed> claimed(SqlCall q, String queue, int limit) throws SQLException {
        List<Claimed> out = new ArrayList<>(limit);
        try (ResultSet rs = q.query()) {
            // Columns by name, looked up once per claim rather than once per row and column: a claim returns
            // up to a few hundred rows, and the driver's lookup by name is a map probe each time.
            int id = rs.findColumn("id");
            int queueColumn = rs.findColumn("queue");
            int kind = rs.findColumn("kind");
            int payload = rs.findColumn("payload");
            int attempt = rs.findColumn("attempt");
            int maxAttempts = rs.findColumn("max_attempts");
            int token = rs.findColumn("attempt_token");
            int timeout = rs.findColumn("timeout_ms");
            int waited = rs.findColumn("waited_ms");
            int metadata = rs.findColumn("metadata");
            int concurrencyKey = rs.findColumn("concurrency_key");
            int priority = rs.findColumn("priority");
            int runAt = rs.findColumn("run_at");
            while (rs.next()) {
                long timeoutValue = rs.getLong(timeout);
                Long timeoutMs = rs.wasNull() ? null : timeoutValue;
                String kindValue = rs.getString(kind);
                long waitedMs = rs.getLong(waited);
                out.add(new Claimed(
                        rs.getLong(id),
                        rs.getString(queueColumn),
                        kindValue,
                        rs.getString(payload),
                        rs.getInt(attempt),
                        rs.getInt(maxAttempts),
                        rs.getLong(token),
                        timeoutMs,
                        waitedMs,
                        rs.getString(metadata),
                        rs.getString(concurrencyKey),
                        rs.getInt(priority),
                        rs.getObject(runAt, OffsetDateTime.class).toInstant()));
                metrics.jobClaimed(queue, kindValue, Duration.ofMillis(Math.max(0, waitedMs)));
            }
        }
        return out;
    }

    private static SQLException keyRace(SQLException e) {
        if (UNIQUE_VIOLATION.equals(e.getSQLState()) && !(e instanceof KeyRaceLost)) {
            return new KeyRaceLost(e); // another node started a job with the same concurrency key first
        }
        return e;
    }

    /** A racing claim started a job of the same concurrency key first: claim nothing, retry next poll. */
    public static final class KeyRaceLost extends SQLException {
        KeyRaceLost(SQLException cause) {
            super(cause.getMessage(), cause.getSQLState(), cause);
        }
    }

    /** The answer of a heartbeat for one attempt that is still current. */
    public enum Beat {
        /** Lease extended. */
        EXTENDED,
        /** Lease extended, and cancellation was requested. */
        EXTENDED_CANCEL,
        /** Still current but locked by its own completion transaction: not extended this time. */
        LOCKED
    }

    /** Extends leases; returns the attempts that are still current (missing ones are not). */
    public Map<Long, Beat> heartbeat(Connection c, long jobLeaseMs, long[] ids, long[] tokens, long timeoutMs)
            throws SQLException {
        Map<Long, Beat> out = new HashMap<>();
        try (SqlCall q = sql.prepareBounded(c, "heartbeat", timeoutMs)
                .setArray("ids", "int8", boxed(ids))
                .setArray("tokens", "int8", boxed(tokens))
                .setLong("job_lease_ms", jobLeaseMs)) {
            try (ResultSet rs = q.query()) {
                while (rs.next()) {
                    boolean extended = rs.getBoolean(3);
                    out.put(
                            rs.getLong(1),
                            !extended ? Beat.LOCKED : rs.getBoolean(2) ? Beat.EXTENDED_CANCEL : Beat.EXTENDED);
                }
            }
        }
        return out;
    }

    /** Running attempts per node id. */
    public Map<String, Long> runningByNode(Connection c) throws SQLException {
        Map<String, Long> out = new HashMap<>();
        try (SqlCall q = sql.prepare(c, "running_by_node")) {
            ResultSet rs = q.query();
            while (rs.next()) {
                out.put(rs.getString("claimed_by"), rs.getLong("n"));
            }
        }
        return out;
    }

    public List<Long> complete(Connection c, long[] ids, long[] tokens) throws SQLException {
        return idList(c, "complete", ids, tokens);
    }

    public List<Long> release(Connection c, long[] ids, long[] tokens) throws SQLException {
        return idList(c, "release", ids, tokens);
    }

    public boolean fenceAttempt(Connection tx, long id, long token) throws SQLException {
        try (SqlCall q = sql.prepare(tx, "fence_attempt").setLong("id", id).setLong("token", token)) {
            return q.query().next();
        }
    }

    /**
     * Failed (or cancelled) attempts; returns id → new state. Two statements (the rows locked, then
     * updated): call it in a transaction.
     */
    public Map<Long, String> fail(
            Connection tx, long[] ids, long[] tokens, String[] errors, Long[] delaysMs, String[] outcomes)
            throws SQLException {
        Map<Long, String> out = new LinkedHashMap<>();
        if (idList(tx, "lock_attempts", ids, tokens).isEmpty()) {
            return out;
        }
        try (SqlCall q = sql.prepare(tx, "fail")
                .setArray("ids", "int8", boxed(ids))
                .setArray("tokens", "int8", boxed(tokens))
                .setArray("errors", "text", errors)
                .setArray("delays_ms", "int8", delaysMs)
                .setArray("outcomes", "text", outcomes)) {
            ResultSet rs = q.query();
            while (rs.next()) {
                out.put(rs.getLong(1), rs.getString(2));
            }
        }
        return out;
    }

    /**
     * Snoozed attempts: available again after their delay, the attempt given back; returns the ids changed.
     * Two statements (the rows locked, then updated): call it in a transaction.
     */
    public List<Long> snooze(Connection tx, long[] ids, long[] tokens, Long[] delaysMs) throws SQLException {
        List<Long> out = new ArrayList<>(ids.length);
        if (idList(tx, "lock_attempts", ids, tokens).isEmpty()) {
            return out;
        }
        try (SqlCall q = sql.prepare(tx, "snooze")
                .setArray("ids", "int8", boxed(ids))
                .setArray("tokens", "int8", boxed(tokens))
                .setArray("delays_ms", "int8", delaysMs)) {
            ResultSet rs = q.query();
            while (rs.next()) {
                out.add(rs.getLong(1));
            }
        }
        return out;
    }

    /** Returns expired attempts to their queue (or fails them); the number of jobs rescued. */
    public int rescue(Connection c, int limit, int maxStalls, String nodeId) throws SQLException {
        try (SqlCall q = sql.prepare(c, "rescue")
                .setInt("limit", limit)
                .setInt("max_stalls", maxStalls)
                .setString("node_id", nodeId)
                .setString("channel", channel())) {
            int n = 0;
            ResultSet rs = q.query();
            while (rs.next()) {
                n++;
                metrics.jobRescued(
                        rs.getString("queue"), rs.getString("kind"), "available".equals(rs.getString("state")));
            }
            return n;
        }
    }

    public int prune(Connection c, long retentionMs, int limit) throws SQLException {
        try (SqlCall q =
                sql.prepare(c, "prune").setLong("retention_ms", retentionMs).setInt("limit", limit)) {
            return q.update();
        }
    }

    // ---------------------------------------------------------------- operations

    public Optional<JobState> cancel(Connection c, long id) throws SQLException {
        try (SqlCall q = sql.prepare(c, "cancel").setLong("id", id)) {
            ResultSet rs = q.query();
            return rs.next() ? Optional.of(state(rs.getString(1))) : Optional.empty();
        }
    }

    public boolean retry(Connection c, long id) throws SQLException {
        try (SqlCall q = sql.prepare(c, "retry").setLong("id", id)) {
            return q.query().next();
        }
    }

    public void setPaused(Connection c, String queue, boolean paused) throws SQLException {
        try (SqlCall q = sql.prepare(c, "set_paused").setString("queue", queue).setBoolean("paused", paused)) {
            q.update();
        }
    }

    public Optional<JobInfo> get(Connection c, long id, Function<String, List<JobError>> errors) throws SQLException {
        try (SqlCall q = sql.prepare(c, "get").setLong("id", id)) {
            try (ResultSet rs = q.query()) {
                return rs.next() ? Optional.of(info(rs, errors)) : Optional.empty();
            }
        }
    }

    /** The job at the result set's current row, from the columns of statement {@code get}. */
    static JobInfo info(ResultSet rs, Function<String, List<JobError>> errors) throws SQLException {
        return new JobInfo(
                rs.getLong("id"),
                rs.getString("queue"),
                rs.getString("kind"),
                rs.getString("payload"),
                rs.getInt("priority"),
                state(rs.getString("state")),
                Jdbc.instant(rs, "run_at"),
                rs.getInt("attempt"),
                rs.getInt("max_attempts"),
                Optional.ofNullable(rs.getString("claimed_by")),
                Optional.ofNullable(rs.getString("concurrency_key")),
                Optional.ofNullable(rs.getString("idempotency_key")),
                rs.getInt("stall_count"),
                rs.getBoolean("cancel_requested"),
                errors.apply(rs.getString("errors")),
                Jdbc.instant(rs, "created_at"),
                Optional.ofNullable(Jdbc.instantOrNull(rs, "finished_at")),
                JobMetadata.parse(rs.getString("metadata")),
                Optional.ofNullable(JobMetadata.retryPolicy(rs.getString("metadata"))));
    }

    /** Depth by queue, on the partial indexes of unfinished jobs. */
    public List<QueueStats> stats(Connection c) throws SQLException {
        List<QueueStats> out = new ArrayList<>();
        try (SqlCall q = sql.prepare(c, "queue_stats");
                ResultSet rs = q.query()) {
            while (rs.next()) {
                out.add(new QueueStats(
                        rs.getString("queue"),
                        rs.getLong("available"),
                        rs.getLong("running"),
                        Optional.ofNullable(Jdbc.instantOrNull(rs, "oldest_run_at")),
                        rs.getBoolean("paused")));
            }
        }
        return out;
    }

    /** Finished jobs by queue and state (reads every finished row kept). */
    public List<FinishedStats> finishedStats(Connection c) throws SQLException {
        Map<String, long[]> counts = new LinkedHashMap<>();
        try (SqlCall q = sql.prepare(c, "finished_stats");
                ResultSet rs = q.query()) {
            while (rs.next()) {
                long[] byState = counts.computeIfAbsent(rs.getString("queue"), k -> new long[JobState.values().length]);
                byState[state(rs.getString("state")).ordinal()] = rs.getLong("n");
            }
        }
        List<FinishedStats> out = new ArrayList<>();
        counts.forEach((q, n) -> out.add(new FinishedStats(
                q, n[JobState.SUCCEEDED.ordinal()], n[JobState.FAILED.ordinal()], n[JobState.CANCELLED.ordinal()])));
        return out;
    }

    /**
     * Fails up to {@code limit} available jobs due for longer than {@code timeoutMs} whose kind no live
     * node handles (the caller's {@code ownKinds} always count as handled); returns how many.
     */
    public int failUnhandled(Connection c, Collection<String> ownKinds, long timeoutMs, int limit) throws SQLException {
        try (SqlCall q = sql.prepare(c, "fail_unhandled")
                .setArray("own_kinds", "text", ownKinds.toArray())
                .setLong("timeout_ms", timeoutMs)
                .setInt("limit", limit)) {
            int n = 0;
            ResultSet rs = q.query();
            while (rs.next()) {
                n++;
            }
            return n;
        }
    }

    /** A kind of available jobs on {@code queue} that no live node handles. */
    public record UnhandledKind(String queue, String kind) {}

    /**
     * The kinds of available jobs on {@code queues} that no live node (nor the caller, {@code ownKinds})
     * handles; reads only.
     */
    public List<UnhandledKind> unhandledKinds(Connection c, Collection<String> queues, Collection<String> ownKinds)
            throws SQLException {
        try (SqlCall q = sql.prepare(c, "unhandled_kinds")
                .setArray("queues", "text", queues.toArray())
                .setArray("own_kinds", "text", ownKinds.toArray())) {
            List<UnhandledKind> out = new ArrayList<>();
            ResultSet rs = q.query();
            while (rs.next()) {
                out.add(new UnhandledKind(rs.getString("queue"), rs.getString("kind")));
            }
            return out;
        }
    }

    private List<Long> idList(Connection c, String statement, long[] ids, long[] tokens) throws SQLException {
        List<Long> out = new ArrayList<>(ids.length);
        try (SqlCall q = sql.prepare(c, statement)
                .setArray("ids", "int8", boxed(ids))
                .setArray("tokens", "int8", boxed(tokens))) {
            ResultSet rs = q.query();
            while (rs.next()) {
                out.add(rs.getLong(1));
            }
        }
        return out;
    }

    private static Long[] boxed(long[] values) {
        Long[] out = new Long[values.length];
        for (int i = 0; i < values.length; i++) {
            out[i] = values[i];
        }
        return out;
    }

    public static Duration ms(long v) {
        return Duration.ofMillis(v);
    }

    private static JobState state(String dbValue) {
        return JobState.valueOf(dbValue.toUpperCase(Locale.ROOT));
    }

    /**
     * Test support (the inline runner): makes the available jobs of {@code queues} and {@code kinds} that
     * are scheduled for later due now; returns how many.
     */
    public int makeDue(Connection c, String[] queues, String[] kinds) throws SQLException {
        try (SqlCall q =
                sql.prepare(c, "make_due").setArray("queues", "text", queues).setArray("kinds", "text", kinds)) {
            return q.update();
        }
    }
}
