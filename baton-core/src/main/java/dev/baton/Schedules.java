package dev.baton;

import dev.baton.internal.db.Db;
import dev.baton.internal.db.Identifiers;
import dev.baton.internal.job.JobStore;
import dev.baton.internal.schedule.ScheduleKeys;
import dev.baton.internal.schedule.ScheduleReconciler;
import dev.baton.internal.schedule.ScheduleStore;
import dev.baton.internal.schedule.Versions;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
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
    private final ScheduleStore store;
    private final ScheduleReconciler reconciler;
    private final JobStore jobStore;
    private final Jobs jobs;

    Schedules(DataSource dataSource, String schema, JobStore jobStore, Jobs jobs) {
        this.db = Db.of(dataSource);
        this.store = new ScheduleStore(schema);
        this.reconciler = new ScheduleReconciler(db, store);
        this.jobStore = jobStore;
        this.jobs = jobs;
    }

    static String channel(String schema) {
        return ScheduleStore.channel(schema);
    }

    /** The statements behind this facade, for the scheduler and maintenance. */
    ScheduleStore store() {
        return store;
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
        List<ScheduleInfo> rows =
                db.callUnchecked("listing schedules", c -> store.list(c, after == null ? "" : after, limit + 1));
        return Page.of(rows, limit, ScheduleInfo::name);
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
        return db.callUnchecked("triggering schedule '" + name + "'", c -> triggerOn(c, name));
    }

    private EnqueueResult triggerOn(Connection c, String name) throws SQLException {
        ScheduleStore.JobTemplate job = store.jobOf(c, name)
                .orElseThrow(() -> new IllegalArgumentException("no schedule named '" + name + "'"));
        JobRequest r = JobRequest.of(job.jobKind(), null)
                .queue(job.queue())
                .priority(job.priority())
                .maxAttempts(job.maxAttempts())
                .idempotencyKey("schedule:" + name + ":manual:" + job.dbNow());
        if (!job.allowOverlap()) {
            r = r.concurrencyKey(ScheduleKeys.concurrencyKey(name));
        }
        return jobStore.enqueueOne(c, r.encoded(job.payload(), null));
    }

    private boolean setPaused(String name, boolean paused) {
        Identifiers.name("schedule name", name);
        return db.transactionUnchecked((paused ? "pausing" : "resuming") + " schedule '" + name + "'", c -> {
            boolean changed = store.setPaused(c, name, paused);
            store.notifyChanged(c);
            return changed;
        });
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
                store.lockApp(c, app);
                Instant now = store.dbNow(c);
                List<String> names = new ArrayList<>();
                for (Schedule s : schedules) {
                    names.add(s.name);
                    declareOne(c, app, version, s, now);
                }
                for (String name : store.undeclared(c, app, version, names)) {
                    store.removeDeclarer(c, version, name);
                }
                store.notifyChanged(c);
                return null;
            });
        } catch (SQLException e) {
            throw Db.failed("declaring the schedules of '" + app + "' " + version, e);
        }
    }

    private void declareOne(Connection c, String app, String version, Schedule s, Instant now) throws SQLException {
        String payload = jobs.encode(JobRequest.of(s.jobKind, s.payload)).payloadJson();
        Instant first = s.nextAfter(now)
                .orElseThrow(() -> new IllegalArgumentException("schedule '" + s.name + "' never fires after " + now));
        ScheduleStore.Definition def = definition(s, payload);
        Optional<ScheduleStore.Stored> row = store.getForUpdate(c, s.name);
        if (row.isEmpty()) {
            store.insert(c, app, version, def, first);
            log.info("schedule '{}' declared by {} {}; first run {}", s.name, app, version, first);
            return;
        }
        String owner = row.get().ownerApp();
        if (!owner.equals(app)) {
            throw new IllegalStateException("schedule '" + s.name + "' belongs to application '" + owner
                    + "'; application '" + app + "' cannot declare it (pick another name)");
        }
        String stored = row.get().definitionVersion();
        ScheduleStore.Definition was = row.get().definition();
        boolean sameTiming = was.specKind().equals(def.specKind())
                && was.spec().equals(def.spec())
                && was.zone().equals(def.zone());
        boolean same = sameTiming
                && was.jobKind().equals(def.jobKind())
                && was.queue().equals(def.queue())
                && was.payload().equals(store.payloadNormal(c, payload))
                && was.priority() == def.priority()
                && was.maxAttempts() == def.maxAttempts()
                && was.misfire().equals(def.misfire())
                && was.catchUpLimit() == def.catchUpLimit()
                && was.thresholdMs() == def.thresholdMs()
                && was.allowOverlap() == def.allowOverlap();
        if (!same && Versions.compare(version, stored) >= 0) {
            store.redefine(c, version, def, sameTiming ? null : first);
            log.info("schedule '{}' redefined by {} {} (was {})", s.name, app, version, stored);
        } else {
            if (!same) {
                log.info(
                        "schedule '{}': keeping the definition of newer version {} (this node runs {})",
                        s.name,
                        stored,
                        version);
            }
            store.addDeclarer(c, version, s.name);
        }
    }

    /** The definition as the table stores it, with the payload already encoded. */
    private static ScheduleStore.Definition definition(Schedule s, String payload) {
        return new ScheduleStore.Definition(
                s.name,
                s.specKindDb(),
                s.spec,
                s.zone.getId(),
                s.jobKind,
                s.queue,
                payload,
                s.priority,
                s.maxAttempts,
                s.misfireDb(),
                s.catchUpLimit,
                s.misfireThreshold.toMillis(),
                s.allowOverlap);
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
        return reconciler.disableOrphans(app, liveVersion);
    }

    /** Enables again this application's disabled schedules that a live version (or {@code liveVersion}) declares. */
    List<String> enableDeclared(String app, String liveVersion) {
        return reconciler.enableDeclared(app, liveVersion);
    }

    /** Both: what the scheduler runs now and then, and a node on start. */
    void reconcile(String app, String liveVersion) {
        reconciler.reconcile(app, liveVersion);
    }

    Db db() {
        return db;
    }
}
