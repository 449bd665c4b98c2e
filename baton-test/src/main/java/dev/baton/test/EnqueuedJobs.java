package dev.baton.test;

import dev.baton.Baton;
import dev.baton.PayloadCodec;
import dev.baton.internal.testsupport.TestSupport;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * The jobs waiting in one Baton schema, read for assertions (see {@link BatonAssertions}): every job in
 * state {@code available}, due now or scheduled for later (a delay, a retry's backoff). Running and
 * finished jobs are not "enqueued". Each call reads the table afresh; nothing is cached.
 *
 * <p>Build it on a node ({@link #of(Baton)}: its pool, schema and payload codec) or, when the test brings
 * its own pool (a Spring test), on a data source and schema ({@link #of(DataSource, String)}, with the
 * default Jackson codec unless {@link #codec(PayloadCodec)} says otherwise). Thread-safe.
 */
public final class EnqueuedJobs {
    private final DataSource dataSource;
    private final String schema;
    private final PayloadCodec codec;

    private EnqueuedJobs(DataSource dataSource, String schema, PayloadCodec codec) {
        this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
        this.schema = Objects.requireNonNull(schema, "schema");
        this.codec = Objects.requireNonNull(codec, "codec");
    }

    /** The jobs of {@code baton}'s schema, decoded with its payload codec. */
    public static EnqueuedJobs of(Baton baton) {
        TestSupport.Access access = TestSupport.access();
        return new EnqueuedJobs(access.dataSource(baton), baton.schema(), access.codec(baton));
    }

    /** The jobs of {@code schema} on {@code dataSource}, decoded with {@link PayloadCodec#jackson()}. */
    public static EnqueuedJobs of(DataSource dataSource, String schema) {
        return new EnqueuedJobs(dataSource, schema, PayloadCodec.jackson());
    }

    /** The same jobs, decoded with {@code codec} (use the one your node is built with). */
    public EnqueuedJobs codec(PayloadCodec codec) {
        return new EnqueuedJobs(dataSource, schema, codec);
    }

    /** The schema read. */
    public String schema() {
        return schema;
    }

    /** The codec payloads are decoded with. */
    public PayloadCodec codec() {
        return codec;
    }

    /** The enqueued jobs of {@code kind}, in due order (run time, then id). */
    public List<EnqueuedJob> list(String kind) {
        Objects.requireNonNull(kind, "kind");
        return query(
                "SELECT id, queue, kind, payload::text AS payload, run_at, attempt, max_attempts FROM "
                        + SqlNames.table(schema, "job") + " WHERE state = 'available' AND kind = ? ORDER BY run_at, id",
                kind,
                0L);
    }

    /**
     * The enqueued jobs with an id above {@code afterId}, of any kind, in id order (what a step of a test
     * added).
     */
    public List<EnqueuedJob> listAfter(long afterId) {
        return query(
                "SELECT id, queue, kind, payload::text AS payload, run_at, attempt, max_attempts FROM "
                        + SqlNames.table(schema, "job") + " WHERE state = 'available' AND id > ? ORDER BY id",
                null,
                afterId);
    }

    /** The highest job id in the schema, any state (0 for none): a mark for {@link #listAfter(long)}. */
    public long lastId() {
        return SqlNames.read(dataSource, "reading the last job id of schema '" + schema + "'", c -> {
            try (PreparedStatement ps =
                            c.prepareStatement("SELECT coalesce(max(id), 0) FROM " + SqlNames.table(schema, "job"));
                    ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        });
    }

    /**
     * {@code job}'s payload decoded as {@code type}.
     *
     * @throws AssertionError if the codec cannot decode it as that type (the message names the job)
     */
    public <T> T payload(EnqueuedJob job, Class<T> type) {
        try {
            return codec.decode(job.payloadJson(), type);
        } catch (Exception e) {
            throw new AssertionError(
                    "the payload of job " + job.describe() + " cannot be decoded as " + type.getName() + ": "
                            + e.getMessage(),
                    e);
        }
    }

    private List<EnqueuedJob> query(String sql, String kind, long afterId) {
        return SqlNames.read(dataSource, "reading the enqueued jobs of schema '" + schema + "'", c -> {
            try (PreparedStatement ps = c.prepareStatement(sql)) {
                if (kind != null) {
                    ps.setString(1, kind);
                } else {
                    ps.setLong(1, afterId);
                }
                List<EnqueuedJob> out = new ArrayList<>();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        out.add(new EnqueuedJob(
                                rs.getLong("id"),
                                rs.getString("queue"),
                                rs.getString("kind"),
                                rs.getString("payload"),
                                rs.getTimestamp("run_at").toInstant(),
                                rs.getInt("attempt"),
                                rs.getInt("max_attempts")));
                    }
                }
                return out;
            }
        });
    }

    @Override
    public String toString() {
        return "EnqueuedJobs[schema=" + schema + "]";
    }
}
