package dev.baton.internal.job;

import dev.baton.internal.db.Identifiers;
import dev.baton.internal.db.Sql;
import dev.baton.internal.db.SqlCall;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;

/** The job_limit table's statements ({@code sql/job_limit.sql}); the only place that runs them. */
public final class JobLimitStore {
    private final Sql sql;

    public JobLimitStore(String schema) {
        this.sql = Sql.load("job_limit.sql", Identifiers.schema(schema));
    }

    /**
     * A stored limit: filters (null = any), and either {@code maxRunning} or a rate.
     *
     * @param id          the limit's identity ({@code JobLimit.id()})
     * @param metadataKey the metadata entry whose values are limited separately, or null
     */
    public record Row(
            String id,
            String queue,
            String kind,
            String metadataKey,
            Integer maxRunning,
            Integer rateStarts,
            Long rateWindowMs) {
        /** Whether claims from {@code queue} of jobs of one of {@code kinds} must respect this limit. */
        public boolean appliesTo(String queue, List<String> kinds) {
            return (this.queue == null || this.queue.equals(queue)) && (kind == null || kinds.contains(kind));
        }
    }

    public void upsert(Connection c, Row r) throws SQLException {
        try (SqlCall q = sql.prepare(c, "upsert")
                .setString("id", r.id())
                .setString("queue", r.queue())
                .setString("kind", r.kind())
                .setString("metadata_key", r.metadataKey())
                .setLongOrNull(
                        "max_running",
                        r.maxRunning() == null ? null : r.maxRunning().longValue())
                .setLongOrNull(
                        "rate_starts",
                        r.rateStarts() == null ? null : r.rateStarts().longValue())
                .setLongOrNull("rate_window_ms", r.rateWindowMs())) {
            q.update();
        }
    }

    public boolean delete(Connection c, String id) throws SQLException {
        try (SqlCall q = sql.prepare(c, "delete").setString("id", id)) {
            return q.update() > 0;
        }
    }

    public List<Row> list(Connection c) throws SQLException {
        List<Row> out = new ArrayList<>();
        try (SqlCall q = sql.prepare(c, "list");
                ResultSet rs = q.query()) {
            while (rs.next()) {
                out.add(new Row(
                        rs.getString("id"),
                        rs.getString("queue"),
                        rs.getString("kind"),
                        rs.getString("metadata_key"),
                        (Integer) rs.getObject("max_running"),
                        (Integer) rs.getObject("rate_starts"),
                        (Long) rs.getObject("rate_window_ms")));
            }
        }
        return out;
    }
}
