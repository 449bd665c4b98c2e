package dev.baton;

import dev.baton.internal.db.Db;
import dev.baton.internal.db.Identifiers;
import dev.baton.internal.db.Jdbc;
import dev.baton.internal.db.Sql;
import dev.baton.internal.job.JobStore;
import java.sql.Array;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Recurring schedules as stored: list them with next and last run, pause, resume, trigger now.
 * Schedules are declared in code ({@code Baton.Builder#schedule}) and upserted at start-up by their
 * own application; a schedule no version of its application declares any more (among live nodes) is
 * disabled, never deleted, and only by that application. A version never rewrites the definition
 * stored by a newer version of its application. Thread-safe.
 */
public final class Schedules {
    private static final Logger log = LoggerFactory.getLogger(Schedules.class);

    private final Db db;
    private final Sql sql;
    private final JobStore jobStore;
    private final Jobs jobs;
    private final String channel;

    Schedules(DataSource dataSource, String schema, JobStore jobStore, Jobs jobs) {
        this.db = Db.of(dataSource);
        this.sql = Sql.load("schedule.sql", Identifiers.schema(schema));
        this.jobStore = jobStore;
        this.jobs = jobs;
        this.channel = channel(schema);
    }

    static String channel(String schema) {
        return Identifiers.channel(schema, "schedule");
    }

    String notifyChannel() {
        return channel;
    }

    Sql sql() {
        return sql;
    }

    // ---------------------------------------------------------------- operations

    /**
     * One page of stored schedules in name order, starting after {@code after} ({@code null} or empty for
     * the first page), each with its next run, last run, the last run's job state, and whether it is
     * failing to fire.
     *
     * @param limit 1 to {@link Page#MAX_LIMIT}
     */
    public Page<ScheduleInfo> list(String after, int limit) {
        Page.requireLimit(limit);
        try {
            List<ScheduleInfo> rows = db.call("listing schedules", c -> {
                try (PreparedStatement ps = c.prepareStatement(sql.get("list"))) {
                    ps.setString(1, after == null ? "" : after);
                    ps.setInt(2, limit + 1);
                    List<ScheduleInfo> out = new ArrayList<>();
                    try (ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            long jobId = rs.getLong("last_job_id");
                            Optional<Long> lastJob = rs.wasNull() ? Optional.empty() : Optional.of(jobId);
                            String state = rs.getString("last_job_state");
                            out.add(new ScheduleInfo(
                                    rs.getString("name"),
                                    rs.getString("owner_app"),
                                    rs.getString("spec_kind"),
                                    rs.getString("spec"),
                                    rs.getString("time_zone"),
                                    rs.getString("job_kind"),
                                    rs.getString("job_queue"),
                                    rs.getString("misfire_policy"),
                                    rs.getBoolean("allow_overlap"),
                                    rs.getBoolean("enabled"),
                                    rs.getBoolean("paused"),
                                    Arrays.asList((String[])
                                            rs.getArray("declared_by").getArray()),
                                    rs.getString("definition_version"),
                                    Jdbc.instant(rs, "next_run_at"),
                                    Optional.ofNullable(Jdbc.instantOrNull(rs, "last_due_at")),
                                    Optional.ofNullable(Jdbc.instantOrNull(rs, "last_fired_at")),
                                    lastJob,
                                    Optional.ofNullable(state).map(JobState::fromDb),
                                    rs.getLong("misfired_total"),
                                    Optional.ofNullable(Jdbc.instantOrNull(rs, "failing_since")),
                                    rs.getInt("error_count"),
                                    Optional.ofNullable(rs.getString("last_error"))));
                        }
                    }
                    return out;
                }
            });
            return Page.of(rows, limit, ScheduleInfo::name);
        } catch (SQLException e) {
            throw new BatonException("listing schedules failed: " + e.getMessage(), e);
        }
    }

    /** Stops firing {@code name} (on every node) until resumed; returns false if there is no such schedule. */
    public boolean pause(String name) {
        return setPaused(name, true);
    }

    /** Resumes firing; instants missed while paused are handled by the misfire policy. */
    public boolean resume(String name) {
        return setPaused(name, false);
    }

    /**
     * Enqueues the schedule's job now, outside its timetable (the next regular run is unaffected).
     * Runs of a schedule without overlap still wait for each other.
     */
    public EnqueueResult trigger(String name) {
        Identifiers.name("schedule name", name);
        try {
            return db.call("triggering schedule '" + name + "'", c -> triggerOn(c, name));
        } catch (SQLException e) {
            throw new BatonException("triggering schedule '" + name + "' failed: " + e.getMessage(), e);
        }
    }

    private EnqueueResult triggerOn(Connection c, String name) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.get("job_of"))) {
            ps.setString(1, name);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    throw new IllegalArgumentException("no schedule named '" + name + "'");
                }
                JobRequest r = JobRequest.of(rs.getString(1), null)
                        .queue(rs.getString(2))
                        .priority(rs.getInt(4))
                        .maxAttempts(rs.getInt(5))
                        .idempotencyKey("schedule:" + name + ":manual:"
                                + rs.getTimestamp(7).toInstant());
                if (!rs.getBoolean(6)) {
                    r = r.concurrencyKey("schedule:" + name);
                }
                return jobStore.enqueueOne(c, r.encoded(rs.getString(3)));
            }
        }
    }

    private boolean setPaused(String name, boolean paused) {
        Identifiers.name("schedule name", name);
        try {
            return db.transaction((paused ? "pausing" : "resuming") + " schedule '" + name + "'", c -> {
                try (PreparedStatement ps = c.prepareStatement(sql.get("set_paused"))) {
                    ps.setBoolean(1, paused);
                    ps.setString(2, name);
                    boolean changed = ps.executeUpdate() == 1;
                    notifyChanged(c);
                    return changed;
                }
            });
        } catch (SQLException e) {
            throw new BatonException(
                    (paused ? "pausing" : "resuming") + " schedule '" + name + "' failed: " + e.getMessage(), e);
        }
    }

    void notifyChanged(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_notify(?, 'changed')")) {
            ps.setString(1, channel);
            ps.execute();
        }
    }

    // ---------------------------------------------------------------- declaration

    /**
     * Upserts this application version's schedules in one transaction (serialised per application):
     * new schedules are inserted with their first run; existing ones record this version as a
     * declarer and take this definition only if this version is not older than the stored one.
     *
     * @throws IllegalStateException if a schedule of that name belongs to another application
     */
    void declare(String app, String version, List<Schedule> schedules) {
        try {
            db.transaction("declaring the schedules of '" + app + "' " + version, c -> {
                try (PreparedStatement ps = c.prepareStatement(sql.get("lock_app"))) {
                    ps.setString(1, "baton.schedules:" + app);
                    ps.execute();
                }
                Instant now = dbNow(c);
                List<String> names = new ArrayList<>();
                for (Schedule s : schedules) {
                    names.add(s.name);
                    declareOne(c, app, version, s, now);
                }
                try (PreparedStatement ps = c.prepareStatement(sql.get("undeclared"))) {
                    ps.setString(1, app);
                    ps.setString(2, version);
                    ps.setArray(3, c.createArrayOf("text", names.toArray(new String[0])));
                    List<String> gone = new ArrayList<>();
                    try (ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            gone.add(rs.getString(1));
                        }
                    }
                    for (String name : gone) {
                        try (PreparedStatement rm = c.prepareStatement(sql.get("remove_declarer"))) {
                            rm.setString(1, version);
                            rm.setString(2, name);
                            rm.executeUpdate();
                        }
                    }
                }
                notifyChanged(c);
                return null;
            });
        } catch (SQLException e) {
            throw new BatonException(
                    "declaring the schedules of '" + app + "' " + version + " failed: " + e.getMessage(), e);
        }
    }

    private void declareOne(Connection c, String app, String version, Schedule s, Instant now) throws SQLException {
        String payload = jobs.encode(JobRequest.of(s.jobKind, s.payload)).payloadJson();
        Instant first = s.nextAfter(now)
                .orElseThrow(() -> new IllegalArgumentException("schedule '" + s.name + "' never fires after " + now));
        try (PreparedStatement ps = c.prepareStatement(sql.get("get_for_update"))) {
            ps.setString(1, s.name);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    try (PreparedStatement ins = c.prepareStatement(sql.get("insert"))) {
                        int i = bindDefinition(ins, 1, app, s, payload);
                        ins.setString(i++, version);
                        ins.setString(i++, version);
                        ins.setTimestamp(i, Timestamp.from(first));
                        ins.executeUpdate();
                    }
                    log.info("schedule '{}' declared by {} {}; first run {}", s.name, app, version, first);
                    return;
                }
                String owner = rs.getString("owner_app");
                if (!owner.equals(app)) {
                    throw new IllegalStateException("schedule '" + s.name + "' belongs to application '" + owner
                            + "'; application '" + app + "' cannot declare it (pick another name)");
                }
                String stored = rs.getString("definition_version");
                boolean sameTiming = rs.getString("spec_kind").equals(s.specKindDb())
                        && rs.getString("spec").equals(s.spec)
                        && rs.getString("time_zone").equals(s.zone.getId());
                boolean same = sameTiming
                        && rs.getString("job_kind").equals(s.jobKind)
                        && rs.getString("job_queue").equals(s.queue)
                        && rs.getString("job_payload").equals(payloadNormal(c, payload))
                        && rs.getInt("job_priority") == s.priority
                        && rs.getInt("job_max_attempts") == s.maxAttempts
                        && rs.getString("misfire_policy").equals(s.misfireDb())
                        && rs.getInt("catch_up_limit") == s.catchUpLimit
                        && rs.getLong("misfire_threshold_ms") == s.misfireThreshold.toMillis()
                        && rs.getBoolean("allow_overlap") == s.allowOverlap;
                if (!same && Versions.compare(version, stored) >= 0) {
                    try (PreparedStatement up = c.prepareStatement(sql.get("redefine"))) {
                        int i = bindDefinition(up, 1, null, s, payload);
                        up.setString(i++, version);
                        up.setTimestamp(i++, sameTiming ? null : Timestamp.from(first));
                        up.setString(i++, version);
                        up.setString(i++, version);
                        up.setString(i, s.name);
                        up.executeUpdate();
                    }
                    log.info("schedule '{}' redefined by {} {} (was {})", s.name, app, version, stored);
                } else {
                    if (!same) {
                        log.info(
                                "schedule '{}': keeping the definition of newer version {} (this node runs {})",
                                s.name,
                                stored,
                                version);
                    }
                    try (PreparedStatement up = c.prepareStatement(sql.get("add_declarer"))) {
                        up.setString(1, version);
                        up.setString(2, version);
                        up.setString(3, s.name);
                        up.executeUpdate();
                    }
                }
            }
        }
    }

    /** The payload as jsonb prints it, so that a re-declared identical payload compares equal. */
    private static String payloadNormal(Connection c, String json) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT ?::jsonb::text")) {
            ps.setString(1, json);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getString(1);
            }
        }
    }

    /** Binds the definition columns (and owner_app when given); returns the next parameter index. */
    private static int bindDefinition(PreparedStatement ps, int i, String app, Schedule s, String payload)
            throws SQLException {
        if (app != null) {
            ps.setString(i++, s.name);
            ps.setString(i++, app);
        }
        ps.setString(i++, s.specKindDb());
        ps.setString(i++, s.spec);
        ps.setString(i++, s.zone.getId());
        ps.setString(i++, s.jobKind);
        ps.setString(i++, s.queue);
        ps.setString(i++, payload);
        ps.setInt(i++, s.priority);
        ps.setInt(i++, s.maxAttempts);
        ps.setString(i++, s.misfireDb());
        ps.setInt(i++, s.catchUpLimit);
        ps.setLong(i++, s.misfireThreshold.toMillis());
        ps.setBoolean(i++, s.allowOverlap);
        return i;
    }

    /** Disables this application's schedules that no live node of a declaring version declares. */
    List<String> disableOrphans(String app) {
        return disableOrphans(app, null);
    }

    /**
     * Disables this application's schedules that no live node of a declaring version declares, never one
     * declared by {@code liveVersion} (the calling node's own version, alive by definition; null for none).
     */
    List<String> disableOrphans(String app, String liveVersion) {
        List<String> out = update("disable_orphans", app, liveVersion, liveVersion, app);
        if (!out.isEmpty()) {
            log.info("disabled schedules of '{}' that no live version declares any more: {}", app, out);
        }
        return out;
    }

    /** Enables again this application's disabled schedules that a live version (or {@code liveVersion}) declares. */
    List<String> enableDeclared(String app, String liveVersion) {
        List<String> out = update("enable_declared", app, liveVersion, app);
        if (!out.isEmpty()) {
            log.info("enabled again schedules of '{}' that a live version declares: {}", app, out);
        }
        return out;
    }

    /** Both: what the scheduler runs now and then, and a node on start. */
    void reconcile(String app, String liveVersion) {
        enableDeclared(app, liveVersion);
        disableOrphans(app, liveVersion);
    }

    private List<String> update(String statement, String... params) {
        try {
            return db.call("reconciling schedules", c -> {
                try (PreparedStatement ps = c.prepareStatement(sql.get(statement))) {
                    for (int i = 0; i < params.length; i++) {
                        ps.setString(i + 1, params[i]);
                    }
                    List<String> out = new ArrayList<>();
                    try (ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            out.add(rs.getString(1));
                        }
                    }
                    return out;
                }
            });
        } catch (SQLException e) {
            throw new BatonException(
                    "reconciling the schedules of '" + params[0] + "' with the live nodes failed (" + statement + "): "
                            + e.getMessage(),
                    e);
        }
    }

    Db db() {
        return db;
    }

    /** Deletes up to {@code limit} schedules disabled for longer than {@code retention}; returns how many. */
    int prune(Connection c, java.time.Duration retention, int limit) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql.get("prune"))) {
            ps.setLong(1, retention.toMillis());
            ps.setInt(2, limit);
            return ps.executeUpdate();
        }
    }

    static Instant dbNow(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT clock_timestamp()");
                ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getTimestamp(1).toInstant();
        }
    }

    static Array texts(Connection c, List<String> values) throws SQLException {
        return c.createArrayOf("text", Objects.requireNonNull(values).toArray(new String[0]));
    }
}
