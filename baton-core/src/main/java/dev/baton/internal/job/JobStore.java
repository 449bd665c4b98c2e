package dev.baton.internal.job;

import dev.baton.BatonMetrics;
import dev.baton.EnqueueResult;
import dev.baton.FinishedStats;
import dev.baton.JobError;
import dev.baton.JobInfo;
import dev.baton.JobState;
import dev.baton.QueueStats;
import dev.baton.internal.db.Db;
import dev.baton.internal.db.Identifiers;
import dev.baton.internal.db.Jdbc;
import dev.baton.internal.db.Sql;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.sql.Types;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/** The job table's statements ({@code sql/job.sql}); the only place that runs them. */
public final class JobStore {
    /** unique_violation: a racing claim lost on job_running_key. */
    private static final String UNIQUE_VIOLATION = "23505";

    private final Sql sql;
    private final String channel;
    private volatile BatonMetrics metrics = BatonMetrics.NONE;

    public JobStore(String schema) {
        this.sql = Sql.load("job.sql", Identifiers.schema(schema));
        this.channel = channel(schema);
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

    /** A request with its payload already encoded. */
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
            String idempotencyKey) {}

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
            long waitedMs) {}

    // ---------------------------------------------------------------- enqueue

    public EnqueueResult enqueueOne(Connection c, Encoded e) throws SQLException {
        Encoded r = e;
        try (PreparedStatement ps = c.prepareStatement(sql.get("enqueue"))) {
            ps.setString(1, r.queue());
            ps.setString(2, r.kind());
            ps.setString(3, e.payloadJson());
            ps.setInt(4, r.priority());
            ps.setTimestamp(5, r.runAt() == null ? null : Timestamp.from(r.runAt()));
            ps.setLong(6, r.delay().toMillis());
            ps.setInt(7, r.maxAttempts());
            setNullableLong(ps, 8, r.timeout() == null ? null : r.timeout().toMillis());
            ps.setString(9, r.concurrencyKey());
            ps.setString(10, r.idempotencyKey());
            ps.setString(11, channel);
            try (ResultSet rs = ps.executeQuery()) {
                if (rs.next()) {
                    metrics.jobsEnqueued(r.queue(), r.kind(), 1);
                    return new EnqueueResult(rs.getLong(1), true);
                }
            }
        }
        return new EnqueueResult(existing(c, List.of(r.idempotencyKey())).get(r.idempotencyKey()), false);
    }

    public List<EnqueueResult> enqueueBatch(Connection c, List<Encoded> batch) throws SQLException {
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
        String[] idempotencyKeys = new String[n];
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
            idempotencyKeys[i] = r.idempotencyKey();
        }
        List<Long> createdIds = new ArrayList<>();
        Map<String, Long> createdByKey = new HashMap<>();
        try (PreparedStatement ps = c.prepareStatement(sql.get("enqueue_batch"))) {
            ps.setArray(1, c.createArrayOf("text", queues));
            ps.setArray(2, c.createArrayOf("text", kinds));
            ps.setArray(3, c.createArrayOf("text", payloads));
            ps.setArray(4, c.createArrayOf("int2", priorities));
            ps.setArray(5, c.createArrayOf("timestamptz", runAts));
            ps.setArray(6, c.createArrayOf("int8", delays));
            ps.setArray(7, c.createArrayOf("int4", maxAttempts));
            ps.setArray(8, c.createArrayOf("int8", timeouts));
            ps.setArray(9, c.createArrayOf("text", concurrencyKeys));
            ps.setArray(10, c.createArrayOf("text", idempotencyKeys));
            ps.setString(11, channel);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    long id = rs.getLong(1);
                    String key = rs.getString(2);
                    createdIds.add(id);
                    if (key != null) {
                        createdByKey.put(key, id);
                    }
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
        try (PreparedStatement ps = c.prepareStatement(sql.get("find_by_keys"))) {
            ps.setArray(1, c.createArrayOf("text", keys.toArray(new String[0])));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.put(rs.getString(2), rs.getLong(1));
                }
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
     * a key. One statement, run through {@link Db#callOn} (as it is, or in a transaction of its own).
     */
    public List<Claimed> claim(Connection c, String queue, String[] kinds, int limit, long jobLeaseMs, String nodeId)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.get("claim"))) {
            ps.setString(1, queue);
            ps.setArray(2, c.createArrayOf("text", kinds));
            ps.setString(3, queue);
            ps.setInt(4, limit * 2);
            ps.setInt(5, limit);
            ps.setLong(6, jobLeaseMs);
            ps.setString(7, nodeId);
            List<Claimed> out = new ArrayList<>(limit);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    long timeout = rs.getLong("timeout_ms");
                    Long timeoutMs = rs.wasNull() ? null : timeout;
                    out.add(new Claimed(
                            rs.getLong("id"),
                            rs.getString("queue"),
                            rs.getString("kind"),
                            rs.getString("payload"),
                            rs.getInt("attempt"),
                            rs.getInt("max_attempts"),
                            rs.getLong("attempt_token"),
                            timeoutMs,
                            rs.getLong("waited_ms")));
                    metrics.jobClaimed(
                            queue, rs.getString("kind"), Duration.ofMillis(Math.max(0, rs.getLong("waited_ms"))));
                }
            }
            return out;
        } catch (SQLException e) {
            if (UNIQUE_VIOLATION.equals(e.getSQLState())) {
                throw new KeyRaceLost(e); // another node started a job with the same concurrency key first
            }
            throw e;
        }
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
        try (PreparedStatement ps = Jdbc.prepareBounded(c, sql.get("heartbeat"), timeoutMs)) {
            int o = Jdbc.boundOffset(timeoutMs);
            ps.setArray(1 + o, longs(c, ids));
            ps.setArray(2 + o, longs(c, tokens));
            ps.setLong(3 + o, jobLeaseMs);
            try (ResultSet rs = Jdbc.executeBounded(ps, timeoutMs)) {
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

    public List<Long> complete(Connection c, long[] ids, long[] tokens) throws SQLException {
        return idList(c, "complete", ids, tokens);
    }

    public List<Long> release(Connection c, long[] ids, long[] tokens) throws SQLException {
        return idList(c, "release", ids, tokens);
    }

    public boolean fenceAttempt(Connection tx, long id, long token) throws SQLException {
        try (PreparedStatement ps = tx.prepareStatement(sql.get("fence_attempt"))) {
            ps.setLong(1, id);
            ps.setLong(2, token);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }

    /** Failed (or cancelled) attempts; returns id → new state. */
    public Map<Long, String> fail(
            Connection c, long[] ids, long[] tokens, String[] errors, Long[] delaysMs, String[] outcomes)
            throws SQLException {
        Map<Long, String> out = new LinkedHashMap<>();
        try (PreparedStatement ps = c.prepareStatement(sql.get("fail"))) {
            ps.setArray(1, longs(c, ids));
            ps.setArray(2, longs(c, tokens));
            ps.setArray(3, c.createArrayOf("text", errors));
            ps.setArray(4, c.createArrayOf("int8", delaysMs));
            ps.setArray(5, c.createArrayOf("text", outcomes));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.put(rs.getLong(1), rs.getString(2));
                }
            }
        }
        return out;
    }

    /** Returns expired attempts to their queue (or fails them); the number of jobs rescued. */
    public int rescue(Connection c, int limit, int maxStalls, String nodeId) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.get("rescue"))) {
            ps.setInt(1, limit);
            ps.setInt(2, maxStalls);
            ps.setInt(3, maxStalls);
            ps.setString(4, nodeId);
            ps.setString(5, channel());
            int n = 0;
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    n++;
                    metrics.jobRescued(
                            rs.getString("queue"), rs.getString("kind"), "available".equals(rs.getString("state")));
                }
            }
            return n;
        }
    }

    public int prune(Connection c, long retentionMs, int limit) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.get("prune"))) {
            ps.setLong(1, retentionMs);
            ps.setInt(2, limit);
            return ps.executeUpdate();
        }
    }

    // ---------------------------------------------------------------- operations

    public Optional<JobState> cancel(Connection c, long id) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.get("cancel"))) {
            ps.setLong(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next() ? Optional.of(state(rs.getString(1))) : Optional.empty();
            }
        }
    }

    public boolean retry(Connection c, long id) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.get("retry"))) {
            ps.setLong(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next();
            }
        }
    }

    public void setPaused(Connection c, String queue, boolean paused) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.get("set_paused"))) {
            ps.setString(1, queue);
            ps.setBoolean(2, paused);
            ps.executeUpdate();
        }
    }

    public Optional<JobInfo> get(Connection c, long id, java.util.function.Function<String, List<JobError>> errors)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.get("get"))) {
            ps.setLong(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return Optional.empty();
                }
                return Optional.of(new JobInfo(
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
                        Optional.ofNullable(Jdbc.instantOrNull(rs, "finished_at"))));
            }
        }
    }

    /** Depth by queue, on the partial indexes of unfinished jobs. */
    public List<QueueStats> stats(Connection c) throws SQLException {
        List<QueueStats> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(sql.get("queue_stats"));
                ResultSet rs = ps.executeQuery()) {
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
        try (PreparedStatement ps = c.prepareStatement(sql.get("finished_stats"));
                ResultSet rs = ps.executeQuery()) {
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
        try (PreparedStatement ps = c.prepareStatement(sql.get("fail_unhandled"))) {
            ps.setArray(1, c.createArrayOf("text", ownKinds.toArray()));
            ps.setLong(2, timeoutMs);
            ps.setInt(3, limit);
            ps.setLong(4, timeoutMs);
            int n = 0;
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    n++;
                }
            }
            return n;
        }
    }

    private List<Long> idList(Connection c, String statement, long[] ids, long[] tokens) throws SQLException {
        List<Long> out = new ArrayList<>(ids.length);
        try (PreparedStatement ps = c.prepareStatement(sql.get(statement))) {
            ps.setArray(1, longs(c, ids));
            ps.setArray(2, longs(c, tokens));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(rs.getLong(1));
                }
            }
        }
        return out;
    }

    private static Array longs(Connection c, long[] values) throws SQLException {
        Long[] boxed = new Long[values.length];
        for (int i = 0; i < values.length; i++) {
            boxed[i] = values[i];
        }
        return c.createArrayOf("int8", boxed);
    }

    private static void setNullableLong(PreparedStatement ps, int i, Long v) throws SQLException {
        if (v == null) {
            ps.setNull(i, Types.BIGINT);
        } else {
            ps.setLong(i, v);
        }
    }

    public static Duration ms(long v) {
        return Duration.ofMillis(v);
    }

    private static JobState state(String dbValue) {
        return JobState.valueOf(dbValue.toUpperCase(Locale.ROOT));
    }
}
