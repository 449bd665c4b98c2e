package dev.baton.internal.job;

import dev.baton.JobError;
import dev.baton.JobInfo;
import dev.baton.internal.db.Identifiers;
import dev.baton.internal.db.Jdbc;
import dev.baton.internal.db.Sql;
import dev.baton.internal.db.SqlCall;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

/**
 * The operator's statements on the job table ({@code sql/job_admin.sql}): search, bulk actions and
 * throughput; the only place that runs them. Reached through {@link JobStore#admin()}.
 */
public final class JobAdminStore {
    private final Sql sql;
    private final String channel;

    JobAdminStore(String schema, String channel) {
        this.sql = Sql.load("job_admin.sql", Identifiers.schema(schema));
        this.channel = channel;
    }

    /**
     * What a search selects; a null field filters nothing. {@code states} lists the database names of the
     * states wanted (never empty); {@code errorLike} is a LIKE pattern already escaped with {@code '\'}
     * (see {@link #containsPattern}).
     */
    public record Filter(
            String[] states,
            String queue,
            String kind,
            Instant createdFrom,
            Instant createdTo,
            String concurrencyKey,
            String idempotencyKey,
            String errorLike) {}

    /** How many jobs a bulk statement found among its ids, changed, and (cancel) asked to stop. */
    public record Bulk(int found, int changed, int requested) {}

    /** One bucket of finished jobs: its start (ms since the epoch, database clock) and counts by outcome. */
    public record Bucket(long startMs, long succeeded, long failed, long cancelled) {}

    /**
     * A LIKE pattern that matches {@code text} anywhere, its own wildcards ({@code %}, {@code _}) and the
     * escape character itself escaped with {@code '\'}: the user's text is matched as text.
     */
    public static String containsPattern(String text) {
        StringBuilder out = new StringBuilder(text.length() + 8).append('%');
        for (int i = 0; i < text.length(); i++) {
            char ch = text.charAt(i);
            if (ch == '\\' || ch == '%' || ch == '_') {
                out.append('\\');
            }
            out.append(ch);
        }
        return out.append('%').toString();
    }

    /**
     * Up to {@code limit} ids of jobs matching {@code f} below {@code before}, newest first. In the caller's
     * transaction, which it sets to plan each statement with its values ({@code plan_cache_mode =
     * force_custom_plan}, for the rest of the transaction): only such a plan leaves out the filters that are off
     * and takes the index the others allow. Before, where the server forced generic plans, a search by
     * idempotency key walked the whole job table (220–245 ms instead of 0.8–3.9 at 800,000 jobs, PostgreSQL 15)
     * and a search of every job was compiled by the JIT (102–144 ms instead of 2.5–8.9); JobPlansTest, decision
     * 0045.
     *
     * @throws IllegalStateException {@code c} is in auto-commit mode, where that setting would not hold
     */
    public List<Long> match(Connection c, Filter f, long before, int limit) throws SQLException {
        if (c.getAutoCommit()) {
            throw new IllegalStateException("match runs in a transaction, which it sets to custom plans");
        }
        Jdbc.execute(c, "SET LOCAL plan_cache_mode = force_custom_plan");
        try (SqlCall q = sql.prepare(c, "match")
                .setLong("before", before)
                .setArray("states", "text", f.states())
                .setString("queue", f.queue())
                .setString("kind", f.kind())
                .setInstant("created_from", f.createdFrom())
                .setInstant("created_to", f.createdTo())
                .setString("concurrency_key", f.concurrencyKey())
                .setString("idempotency_key", f.idempotencyKey())
                .setString("error_like", f.errorLike())
                .setInt("limit", limit)) {
            List<Long> out = new ArrayList<>();
            try (ResultSet rs = q.query()) {
                while (rs.next()) {
                    out.add(rs.getLong(1));
                }
            }
            return out;
        }
    }

    /** The jobs of {@code ids} that exist, newest first, each error without its stack trace. */
    public List<JobInfo> rows(Connection c, List<Long> ids, Function<String, List<JobError>> errors)
            throws SQLException {
        List<JobInfo> out = new ArrayList<>(ids.size());
        if (ids.isEmpty()) {
            return out;
        }
        try (SqlCall q = sql.prepare(c, "rows").setArray("ids", "int8", ids.toArray(new Long[0]))) {
            try (ResultSet rs = q.query()) {
                while (rs.next()) {
                    out.add(JobStore.info(rs, errors));
                }
            }
        }
        return out;
    }

    /** Cancels the available jobs of {@code ids} and asks the running ones to stop. */
    public Bulk cancel(Connection c, List<Long> ids) throws SQLException {
        return bulk(c, "cancel_ids", ids);
    }

    /** Makes the failed and cancelled jobs of {@code ids} available again now. */
    public Bulk retry(Connection c, List<Long> ids) throws SQLException {
        return bulk(c, "retry_ids", ids);
    }

    /** Deletes the finished and available jobs of {@code ids}; never a running one. */
    public Bulk delete(Connection c, List<Long> ids) throws SQLException {
        return bulk(c, "delete_ids", ids);
    }

    private Bulk bulk(Connection c, String statement, List<Long> ids) throws SQLException {
        try (SqlCall q = sql.prepare(c, statement).setArray("ids", "int8", ids.toArray(new Long[0]))) {
            if (statement.equals("retry_ids")) {
                q.setString("channel", channel);
            }
            try (ResultSet rs = q.query()) {
                rs.next();
                return new Bulk(rs.getInt("found"), rs.getInt("changed"), rs.getInt("requested"));
            }
        }
    }

    /** Finished jobs per bucket over the last {@code buckets} buckets of {@code bucketMs}; {@code queue} null: all. */
    public List<Bucket> throughput(Connection c, String queue, long bucketMs, int buckets) throws SQLException {
        List<Bucket> out = new ArrayList<>(buckets);
        try (SqlCall q = sql.prepare(c, "throughput")
                .setString("queue", queue)
                .setLong("bucket_ms", bucketMs)
                .setInt("buckets", buckets)) {
            try (ResultSet rs = q.query()) {
                while (rs.next()) {
                    out.add(new Bucket(
                            rs.getLong("start_ms"),
                            rs.getLong("succeeded"),
                            rs.getLong("failed"),
                            rs.getLong("cancelled")));
                }
            }
        }
        return out;
    }

    /** The database clock. */
    public Instant dbNow(Connection c) throws SQLException {
        try (SqlCall q = sql.prepare(c, "db_now");
                ResultSet rs = q.query()) {
            rs.next();
            return Jdbc.instant(rs, "now");
        }
    }
}
