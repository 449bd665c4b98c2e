package dev.baton.internal.schedule;

import dev.baton.JobState;
import dev.baton.ScheduleInfo;
import dev.baton.ScheduleOrigin;
import dev.baton.internal.db.Identifiers;
import dev.baton.internal.db.Jdbc;
import dev.baton.internal.db.Sql;
import dev.baton.internal.db.SqlCall;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalLong;
import org.postgresql.util.PGInterval;

/**
 * The statements on {@code schedule} ({@code sql/schedule.sql}). Every method runs on the caller's
 * connection, in the caller's transaction if one is open. Validation of names and definitions, version
 * ordering and the firing arithmetic are the callers'; this class only talks to the database.
 */
public final class ScheduleStore {
    /**
     * The {@code owner_app} of a schedule created at run time: no application can have an empty name, so
     * no application's reconciler (which matches its own name) disables one (decision 0021).
     */
    public static final String RUNTIME_OWNER = "";

    /**
     * A schedule's definition as the table stores it: the spec kind and misfire policy as the table spells
     * them ({@code cron}, {@code catch_up}, …) and the job's payload as JSON text.
     */
    public record Definition(
            String name,
            String specKind,
            String spec,
            String zone,
            String jobKind,
            String queue,
            String payload,
            int priority,
            int maxAttempts,
            String misfire,
            int catchUpLimit,
            long thresholdMs,
            boolean allowOverlap) {}

    /**
     * A stored schedule, locked for its declaration: its application, the version whose definition it holds,
     * and that definition (the payload as jsonb prints it).
     */
    public record Stored(String ownerApp, String definitionVersion, Definition definition) {}

    /** A schedule due to fire: its definition, the instant it waits at, and the database clock when read. */
    public record Due(Definition definition, Instant nextRunAt, Instant dbNow) {
        public String name() {
            return definition.name();
        }
    }

    /** The job a schedule enqueues (the payload as JSON text), and the database clock when read. */
    public record JobTemplate(
            String jobKind,
            String queue,
            String payload,
            int priority,
            int maxAttempts,
            boolean allowOverlap,
            Instant dbNow) {}

    private final Sql sql;
    private final String channel;

    public ScheduleStore(String schema) {
        this.sql = Sql.load("schedule.sql", Identifiers.schema(schema));
        this.channel = channel(schema);
    }

    /** The notification channel on which changes to the schema's schedules are announced. */
    public static String channel(String schema) {
        return Identifiers.channel(schema, "schedule");
    }

    public String channel() {
        return channel;
    }

    /** Wakes the schedulers listening on {@link #channel()}, when the caller's transaction commits. */
    public void notifyChanged(Connection c) throws SQLException {
        try (SqlCall q = sql.prepare(c, "notify_changed").setString("channel", channel)) {
            q.query();
        }
    }

    public Instant dbNow(Connection c) throws SQLException {
        try (SqlCall q = sql.prepare(c, "db_now")) {
            ResultSet rs = q.query();
            rs.next();
            return Jdbc.instant(rs, "db_now");
        }
    }

    // ---------------------------------------------------------------- operations

    /** Up to {@code limit} schedules in name order after {@code after} ({@code ""} for the first). */
    public List<ScheduleInfo> list(Connection c, String after, int limit) throws SQLException {
        try (SqlCall q = sql.prepare(c, "list").setString("after", after).setInt("limit", limit)) {
            ResultSet rs = q.query();
            List<ScheduleInfo> out = new ArrayList<>();
            while (rs.next()) {
                out.add(info(rs));
            }
            return out;
        }
    }

    /** The job schedule {@code name} enqueues, with the database clock; empty if there is no such schedule. */
    public Optional<JobTemplate> jobOf(Connection c, String name) throws SQLException {
        try (SqlCall q = sql.prepare(c, "job_of").setString("name", name)) {
            ResultSet rs = q.query();
            if (!rs.next()) {
                return Optional.empty();
            }
            return Optional.of(new JobTemplate(
                    rs.getString("job_kind"),
                    rs.getString("job_queue"),
                    rs.getString("job_payload"),
                    rs.getInt("job_priority"),
                    rs.getInt("job_max_attempts"),
                    rs.getBoolean("allow_overlap"),
                    Jdbc.instant(rs, "db_now")));
        }
    }

    /** Pauses or resumes schedule {@code name}; false if there is no such schedule. */
    public boolean setPaused(Connection c, String name, boolean paused) throws SQLException {
        try (SqlCall q =
                sql.prepare(c, "set_paused").setBoolean("paused", paused).setString("name", name)) {
            return q.update() == 1;
        }
    }

    // ---------------------------------------------------------------- declaration

    /** Serialises the declarations of application {@code app} until the caller's transaction ends. */
    public void lockApp(Connection c, String app) throws SQLException {
        try (SqlCall q = sql.prepare(c, "lock_app").setString("key", "baton.schedules:" + app)) {
            q.query();
        }
    }

    /** The stored schedule {@code name}, its row locked until the caller's transaction ends; empty if none. */
    public Optional<Stored> getForUpdate(Connection c, String name) throws SQLException {
        try (SqlCall q = sql.prepare(c, "get_for_update").setString("name", name)) {
            ResultSet rs = q.query();
            if (!rs.next()) {
                return Optional.empty();
            }
            return Optional.of(
                    new Stored(rs.getString("owner_app"), rs.getString("definition_version"), definition(rs)));
        }
    }

    /** Inserts a new schedule of {@code app}, declared by {@code version}, first due at {@code nextRunAt}. */
    public void insert(Connection c, String app, String version, Definition d, Instant nextRunAt) throws SQLException {
        try (SqlCall q = bind(sql.prepare(c, "insert"), d)
                .setString("name", d.name())
                .setString("owner_app", app)
                .setString("version", version)
                .setInstant("next_run_at", nextRunAt)) {
            q.update();
        }
    }

    /**
     * Replaces the stored definition of {@code d.name()} by {@code d}, of {@code version}, which it records as
     * a declarer (enabling the schedule); a null {@code nextRunAt} keeps the stored next run.
     */
    public void redefine(Connection c, String version, Definition d, Instant nextRunAt) throws SQLException {
        try (SqlCall q = bind(sql.prepare(c, "redefine"), d)
                .setString("version", version)
                .setInstant("next_run_at", nextRunAt)
                .setString("name", d.name())) {
            q.update();
        }
    }

    private static SqlCall bind(SqlCall q, Definition d) throws SQLException {
        return q.setString("spec_kind", d.specKind())
                .setString("spec", d.spec())
                .setString("time_zone", d.zone())
                .setString("job_kind", d.jobKind())
                .setString("job_queue", d.queue())
                .setString("job_payload", d.payload())
                .setInt("job_priority", d.priority())
                .setInt("job_max_attempts", d.maxAttempts())
                .setString("misfire_policy", d.misfire())
                .setInt("catch_up_limit", d.catchUpLimit())
                .setLong("misfire_threshold_ms", d.thresholdMs())
                .setBoolean("allow_overlap", d.allowOverlap());
    }

    /** Records {@code version} as a declarer of schedule {@code name} (enabling it), keeping its definition. */
    public void addDeclarer(Connection c, String version, String name) throws SQLException {
        try (SqlCall q =
                sql.prepare(c, "add_declarer").setString("version", version).setString("name", name)) {
            q.update();
        }
    }

    /** The JSON text as jsonb prints it, so that a re-declared identical payload compares equal to the stored. */
    public String payloadNormal(Connection c, String json) throws SQLException {
        try (SqlCall q = sql.prepare(c, "payload_normal").setString("payload", json)) {
            ResultSet rs = q.query();
            rs.next();
            return rs.getString("payload");
        }
    }

    /** The schedules of {@code app} that list {@code version} as a declarer but are not among {@code names}. */
    public List<String> undeclared(Connection c, String app, String version, List<String> names) throws SQLException {
        try (SqlCall q = sql.prepare(c, "undeclared")
                .setString("owner_app", app)
                .setString("version", version)
                .setArray("names", "text", names.toArray(new String[0]))) {
            return names(q.query());
        }
    }

    public void removeDeclarer(Connection c, String version, String name) throws SQLException {
        try (SqlCall q =
                sql.prepare(c, "remove_declarer").setString("version", version).setString("name", name)) {
            q.update();
        }
    }

    /**
     * Disables the schedules of {@code app} that no live node of a declaring version declares, never one
     * declared by {@code liveVersion} (null for none); returns their names.
     */
    public List<String> disableOrphans(Connection c, String app, String liveVersion) throws SQLException {
        try (SqlCall q =
                sql.prepare(c, "disable_orphans").setString("owner_app", app).setString("live_version", liveVersion)) {
            return names(q.query());
        }
    }

    /** Enables again the disabled schedules of {@code app} that a live version (or {@code liveVersion}) declares. */
    public List<String> enableDeclared(Connection c, String app, String liveVersion) throws SQLException {
        try (SqlCall q =
                sql.prepare(c, "enable_declared").setString("owner_app", app).setString("live_version", liveVersion)) {
            return names(q.query());
        }
    }

    /** Deletes up to {@code limit} schedules disabled for longer than {@code retention}; returns how many. */
    public int prune(Connection c, Duration retention, int limit) throws SQLException {
        try (SqlCall q = sql.prepare(c, "prune")
                .setLong("retention_ms", retention.toMillis())
                .setInt("limit", limit)) {
            return q.update();
        }
    }

    // ---------------------------------------------------------------- firing

    /** Up to {@code limit} schedules due now and not waiting out a failure's backoff, oldest first. */
    public List<Due> due(Connection c, int limit) throws SQLException {
        try (SqlCall q = sql.prepare(c, "due").setInt("limit", limit)) {
            ResultSet rs = q.query();
            List<Due> out = new ArrayList<>();
            while (rs.next()) {
                out.add(new Due(definition(rs), Jdbc.instant(rs, "next_run_at"), Jdbc.instant(rs, "db_now")));
            }
            return out;
        }
    }

    /**
     * Nanoseconds on the database clock until the next enabled, unpaused schedule is due (or its failure's
     * backoff ends), negative if one is overdue; {@link Long#MAX_VALUE} if there is none.
     */
    public long untilNextDueNanos(Connection c) throws SQLException {
        try (SqlCall q = sql.prepare(c, "next_due")) {
            ResultSet rs = q.query();
            rs.next();
            Object v = rs.getObject("until_due");
            if (v == null) {
                return Long.MAX_VALUE;
            }
            PGInterval i = (PGInterval) v;
            double seconds = i.getDays() * 86_400.0 + i.getHours() * 3600.0 + i.getMinutes() * 60.0 + i.getSeconds();
            return (long) (seconds * 1e9);
        }
    }

    /**
     * Records that schedule {@code name} could not fire its instant {@code seen}, setting a backoff that
     * doubles per failure from {@code pollInterval}; returns its failures in a row, or 0 if it no longer waits
     * at {@code seen}. The caller has cleaned {@code error} (the table keeps 2000 characters).
     */
    public int recordFailure(Connection c, String name, Instant seen, String error, Duration pollInterval)
            throws SQLException {
        try (SqlCall q = sql.prepare(c, "record_failure")
                .setString("error", error)
                .setLong("poll_ms", pollInterval.toMillis())
                .setString("name", name)
                .setInstant("seen", seen)) {
            ResultSet rs = q.query();
            return rs.next() ? rs.getInt("error_count") : 0;
        }
    }

    /**
     * The compare-and-set of firing: moves schedule {@code name} from {@code seen} to {@code next}, recording
     * the last instant fired and its job (null: keep the stored ones) and {@code misfired} dropped instants;
     * clears any recorded failure. False if the schedule no longer waits at {@code seen} (another scheduler
     * advanced it first).
     */
    public boolean advance(
            Connection c, String name, Instant seen, Instant next, Instant lastDueAt, Long lastJobId, long misfired)
            throws SQLException {
        try (SqlCall q = sql.prepare(c, "advance")
                .setInstant("next_run_at", next)
                .setInstant("last_due_at", lastDueAt)
                .setLongOrNull("last_job_id", lastJobId)
                .setLong("misfired", misfired)
                .setString("name", name)
                .setInstant("seen", seen)) {
            return q.update() > 0;
        }
    }

    private static List<String> names(ResultSet rs) throws SQLException {
        List<String> out = new ArrayList<>();
        while (rs.next()) {
            out.add(rs.getString(1));
        }
        return out;
    }

    /** The definition columns of a {@code get_for_update} or {@code due} row. */
    private static Definition definition(ResultSet rs) throws SQLException {
        return new Definition(
                rs.getString("name"),
                rs.getString("spec_kind"),
                rs.getString("spec"),
                rs.getString("time_zone"),
                rs.getString("job_kind"),
                rs.getString("job_queue"),
                rs.getString("job_payload"),
                rs.getInt("job_priority"),
                rs.getInt("job_max_attempts"),
                rs.getString("misfire_policy"),
                rs.getInt("catch_up_limit"),
                rs.getLong("misfire_threshold_ms"),
                rs.getBoolean("allow_overlap"));
    }

    /** Test support: {@link #due} as of {@code asOf} instead of the database clock. */
    public List<Due> dueAsOf(Connection c, int limit, Instant asOf) throws SQLException {
        try (SqlCall q = sql.prepare(c, "due_as_of").setInt("limit", limit).setInstant("as_of", asOf)) {
            ResultSet rs = q.query();
            List<Due> out = new ArrayList<>();
            while (rs.next()) {
                out.add(new Due(definition(rs), Jdbc.instant(rs, "next_run_at"), Jdbc.instant(rs, "db_now")));
            }
            return out;
        }
    }

    /** One row of {@code list} or {@code get}. */
    private static ScheduleInfo info(ResultSet rs) throws SQLException {
        long jobId = rs.getLong("last_job_id");
        Optional<Long> lastJob = rs.wasNull() ? Optional.empty() : Optional.of(jobId);
        String state = rs.getString("last_job_state");
        String owner = rs.getString("owner_app");
        long revision = rs.getLong("revision"); // null (declared) reads as 0
        return new ScheduleInfo(
                rs.getString("name"),
                owner,
                rs.getString("spec_kind"),
                rs.getString("spec"),
                rs.getString("time_zone"),
                rs.getString("job_kind"),
                rs.getString("job_queue"),
                rs.getString("misfire_policy"),
                rs.getBoolean("allow_overlap"),
                rs.getBoolean("enabled"),
                rs.getBoolean("paused"),
                Arrays.asList((String[]) rs.getArray("declared_by").getArray()),
                rs.getString("definition_version"),
                Jdbc.instant(rs, "next_run_at"),
                Optional.ofNullable(Jdbc.instantOrNull(rs, "last_due_at")),
                Optional.ofNullable(Jdbc.instantOrNull(rs, "last_fired_at")),
                lastJob,
                Optional.ofNullable(state).map(s -> JobState.valueOf(s.toUpperCase(Locale.ROOT))),
                rs.getLong("misfired_total"),
                Optional.ofNullable(Jdbc.instantOrNull(rs, "failing_since")),
                rs.getInt("error_count"),
                Optional.ofNullable(rs.getString("last_error")),
                RUNTIME_OWNER.equals(owner) ? ScheduleOrigin.RUNTIME : ScheduleOrigin.DECLARED,
                revision,
                Optional.ofNullable(rs.getString("changed_by")),
                Optional.ofNullable(Jdbc.instantOrNull(rs, "changed_at")));
    }

    /** Schedule {@code name} as {@link #list} shows it; empty if there is no such schedule. */
    public Optional<ScheduleInfo> get(Connection c, String name) throws SQLException {
        try (SqlCall q = sql.prepare(c, "get").setString("name", name)) {
            ResultSet rs = q.query();
            return rs.next() ? Optional.of(info(rs)) : Optional.empty();
        }
    }

    // ---------------------------------------------------------------- runtime schedules

    /**
     * Creates runtime schedule {@code d}, first due at {@code nextRunAt}; returns its revision, or empty if
     * the name is taken (by a declared or a runtime schedule).
     */
    public OptionalLong runtimeInsert(Connection c, Definition d, Instant nextRunAt, String changedBy)
            throws SQLException {
        try (SqlCall q = bind(sql.prepare(c, "runtime_insert"), d)
                .setString("name", d.name())
                .setInstant("next_run_at", nextRunAt)
                .setString("changed_by", changedBy)) {
            return revision(q.query());
        }
    }

    /**
     * Replaces the definition of runtime schedule {@code d.name()} if it is at {@code expectedRevision}
     * (null: any); its next run becomes {@code nextRunAt} only if the timing changed. Returns the new
     * revision, or empty if nothing was changed (no such runtime schedule, or another revision).
     */
    public OptionalLong runtimeUpdate(
            Connection c, Definition d, Instant nextRunAt, Long expectedRevision, String changedBy)
            throws SQLException {
        try (SqlCall q = bind(sql.prepare(c, "runtime_update"), d)
                .setString("name", d.name())
                .setInstant("next_run_at", nextRunAt)
                .setLongOrNull("expected_revision", expectedRevision)
                .setString("changed_by", changedBy)) {
            return revision(q.query());
        }
    }

    /** Deletes runtime schedule {@code name} if it is at {@code expectedRevision} (null: any); false if not. */
    public boolean runtimeDelete(Connection c, String name, Long expectedRevision) throws SQLException {
        try (SqlCall q = sql.prepare(c, "runtime_delete")
                .setString("name", name)
                .setLongOrNull("expected_revision", expectedRevision)) {
            return q.query().next();
        }
    }

    private static OptionalLong revision(ResultSet rs) throws SQLException {
        return rs.next() ? OptionalLong.of(rs.getLong("revision")) : OptionalLong.empty();
    }
}
