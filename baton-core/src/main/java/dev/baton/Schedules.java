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
 * Recurring schedules as stored: list them with next and last run, pause, resume, trigger now; create,
 * update and delete schedules at run time.
 *
 * <p><b>Declared</b> schedules are declared in code ({@code Baton.Builder#schedule}) and upserted at
 * start-up by their own application; a schedule no version of its application declares any more (among
 * live nodes) is disabled, never deleted, and only by that application. A version never rewrites the
 * definition stored by a newer version of its application.
 *
 * <p><b>Runtime</b> schedules ({@link #create}) are shared by the cluster and stored like declared ones,
 * fired by the same schedulers with the same guarantee (each due instant yields one job, however many
 * nodes run); no application's start-up or reconciliation disables or deletes them, whatever its version.
 * Each change renews their revision, so that two operators cannot silently overwrite each other
 * ({@link #update(Schedule, long)}). A runtime call never changes a declared schedule, and a declaration
 * of a name a runtime schedule holds is refused at start-up. Thread-safe.
 *
 * <pre>{@code
 * // one schedule per tenant, in the tenant's zone
 * ScheduleInfo s = baton.schedules().changedBy("admin@acme")
 *         .create(Schedule.cron("report:acme", "0 7 * * MON").zone("Europe/Berlin").job("report", "acme"));
 * baton.schedules().update(Schedule.cron("report:acme", "0 8 * * MON").zone("Europe/Berlin")
 *         .job("report", "acme"), s.revision());
 * }</pre>
 */
public final class Schedules {
    private static final Logger log = LoggerFactory.getLogger(Schedules.class);

    private final Db db;
    private final ScheduleStore store;
    private final ScheduleReconciler reconciler;
    private final JobStore jobStore;
    private final Jobs jobs;
    /** Recorded as the author of runtime-schedule changes: an actor, or this node's application and version. */
    private final String author;

    Schedules(DataSource dataSource, String schema, JobStore jobStore, Jobs jobs, String app, String appVersion) {
        this.db = Db.of(dataSource);
        this.store = new ScheduleStore(schema);
        this.reconciler = new ScheduleReconciler(db, store);
        this.jobStore = jobStore;
        this.jobs = jobs;
        this.author = app + " " + appVersion;
    }

    private Schedules(Schedules of, String author) {
        this.db = of.db;
        this.store = of.store;
        this.reconciler = of.reconciler;
        this.jobStore = of.jobStore;
        this.jobs = of.jobs;
        this.author = author;
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
     *
     * @throws UnknownOutcomeException the connection failed while the job may have been enqueued: look for it
     *     before triggering again, which would enqueue a second one
     */
    public EnqueueResult trigger(String name) {
        Identifiers.name("schedule name", name);
        return db.writeUnchecked(
                "triggering schedule '" + name + "'",
                ". Look for the schedule's job before triggering it again: a second trigger enqueues a second job",
                c -> triggerOn(c, name));
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

    // ---------------------------------------------------------------- runtime schedules

    /**
     * This facade, recording {@code actor} (an operator, a tenant's administrator, a service) as the author of
     * the runtime-schedule changes made through it. By default the author is this node's application and
     * version.
     */
    public Schedules changedBy(String actor) {
        Identifiers.name("actor", actor);
        return new Schedules(this, actor);
    }

    /** Schedule {@code name} as stored (declared or runtime), or empty if there is none. */
    public Optional<ScheduleInfo> get(String name) {
        Identifiers.name("schedule name", name);
        return db.callUnchecked("reading schedule '" + name + "'", c -> store.get(c, name));
    }

    /**
     * Creates a runtime schedule, shared by the cluster, at a new revision; its first run is the first due
     * instant after now (database clock), and the schedulers are woken so that it fires on time. The
     * schedule is validated as a declared one is ({@link Schedule}); its payload is encoded by this Baton's
     * codec.
     *
     * @return the stored schedule, with its revision
     * @throws IllegalArgumentException   if the schedule has no job, never fires, its payload cannot be
     *                                    encoded, or its name starts with {@code sweep:} (reserved for sweeps)
     * @throws ScheduleConflictException  if a schedule of that name exists (declared or runtime; of two
     *                                    concurrent creates of one name, one succeeds and the other gets this)
     */
    public ScheduleInfo create(Schedule schedule) {
        String name = runtimeName(schedule);
        ScheduleStore.Definition def = definition(schedule, encodedPayload(schedule));
        return db.transactionUnchecked("creating schedule '" + name + "'", c -> {
            Instant first = firstRun(schedule, store.dbNow(c));
            if (store.runtimeInsert(c, def, first, author).isEmpty()) {
                throw taken(c, name);
            }
            store.notifyChanged(c);
            log.info("schedule '{}' created at run time by {}; first run {}", name, author, first);
            return store.get(c, name).orElseThrow();
        });
    }

    /**
     * Replaces a runtime schedule's definition if it is still at {@code expectedRevision} (read from
     * {@link ScheduleInfo#revision()}), at a new revision. If the timing (cron or interval, zone) changed,
     * the next run becomes the first due instant after now; otherwise it stays. Jobs already enqueued are
     * not changed. Paused stays paused.
     *
     * @return the stored schedule, with its new revision
     * @throws IllegalArgumentException   as {@link #create}, if {@code expectedRevision} is below 1, or if
     *                                    there is no schedule of that name
     * @throws ScheduleConflictException  if the schedule is declared in code, or is at another revision
     *                                    (another change came first: nothing was changed)
     */
    public ScheduleInfo update(Schedule schedule, long expectedRevision) {
        return update(schedule, requireRevision(expectedRevision));
    }

    /** {@link #update(Schedule, long)} whatever the stored revision: the last change wins. */
    public ScheduleInfo update(Schedule schedule) {
        return update(schedule, (Long) null);
    }

    private ScheduleInfo update(Schedule schedule, Long expectedRevision) {
        String name = runtimeName(schedule);
        ScheduleStore.Definition def = definition(schedule, encodedPayload(schedule));
        return db.transactionUnchecked("updating schedule '" + name + "'", c -> {
            Instant next = firstRun(schedule, store.dbNow(c));
            if (store.runtimeUpdate(c, def, next, expectedRevision, author).isEmpty()) {
                throw refused(c, name, expectedRevision, "update");
            }
            store.notifyChanged(c);
            ScheduleInfo now = store.get(c, name).orElseThrow();
            log.info("schedule '{}' updated at run time by {} (revision {})", name, author, now.revision());
            return now;
        });
    }

    /**
     * Deletes a runtime schedule if it is still at {@code expectedRevision}: no job is enqueued for it once
     * this returns (a firing in progress commits before or not at all). Jobs it enqueued before stay; cancel
     * them through {@link Jobs} if they must not run.
     *
     * @return false if there is no schedule of that name
     * @throws IllegalArgumentException   if {@code expectedRevision} is below 1
     * @throws ScheduleConflictException  if the schedule is declared in code, or is at another revision
     */
    public boolean delete(String name, long expectedRevision) {
        return delete(name, requireRevision(expectedRevision));
    }

    /** {@link #delete(String, long)} whatever the stored revision. */
    public boolean delete(String name) {
        return delete(name, (Long) null);
    }

    private boolean delete(String name, Long expectedRevision) {
        Schedule.validName(name);
        return db.transactionUnchecked("deleting schedule '" + name + "'", c -> {
            if (!store.runtimeDelete(c, name, expectedRevision)) {
                if (store.get(c, name).isEmpty()) {
                    return false;
                }
                throw refused(c, name, expectedRevision, "delete");
            }
            store.notifyChanged(c);
            log.info("schedule '{}' deleted at run time by {}", name, author);
            return true;
        });
    }

    private static String runtimeName(Schedule schedule) {
        if (schedule == null) {
            throw new IllegalArgumentException(
                    "schedule must not be null: build one with Schedule.cron(...) or Schedule.every(...)");
        }
        schedule.requireJob();
        if (schedule.name.startsWith(SWEEP_PREFIX)) {
            throw new IllegalArgumentException("schedule name '" + schedule.name + "' starts with '" + SWEEP_PREFIX
                    + "', which is reserved for the sweeps applications declare: pick another name");
        }
        return schedule.name;
    }

    private static final String SWEEP_PREFIX = "sweep:";

    private static Long requireRevision(long expectedRevision) {
        if (expectedRevision < 1) {
            throw new IllegalArgumentException("expectedRevision must be a revision read from ScheduleInfo.revision()"
                    + " of a runtime schedule (1 or more), but was " + expectedRevision);
        }
        return expectedRevision;
    }

    private String encodedPayload(Schedule s) {
        return jobs.encode(JobRequest.of(s.jobKind, s.payload)).payloadJson();
    }

    private static Instant firstRun(Schedule s, Instant now) {
        return s.nextAfter(now)
                .orElseThrow(() -> new IllegalArgumentException("schedule '" + s.name + "' never fires after " + now
                        + ": its cron expression matches no instant to come"));
    }

    /** Why a create inserted nothing: the schedule that holds the name. */
    private static ScheduleConflictException taken(ScheduleInfo held) {
        if (held.origin() == ScheduleOrigin.DECLARED) {
            return declared(held, "create");
        }
        return new ScheduleConflictException(
                "schedule '" + held.name() + "' already exists (a runtime schedule at revision " + held.revision()
                        + ", changed by " + held.changedBy().orElse("?") + " at "
                        + held.changedAt().map(Instant::toString).orElse("?") + "): update it with "
                        + "update(schedule, " + held.revision() + "), or pick another name",
                held.name(),
                held.revision());
    }

    private ScheduleConflictException taken(Connection c, String name) throws SQLException {
        return store.get(c, name)
                .map(Schedules::taken)
                .orElseGet(() -> new ScheduleConflictException(
                        "schedule '" + name + "' was created and deleted by another call meanwhile; nothing was "
                                + "created: try again",
                        name,
                        0));
    }

    private static ScheduleConflictException declared(ScheduleInfo held, String verb) {
        return new ScheduleConflictException(
                "schedule '" + held.name() + "' is declared in code by application '" + held.ownerApp()
                        + "' (versions " + held.declaredBy() + ", definition of " + held.definitionVersion()
                        + "); a runtime call cannot " + verb + " it: change the declaration and deploy, or "
                        + "pick another name",
                held.name(),
                0);
    }

    /** Why an update or delete changed nothing. */
    private RuntimeException refused(Connection c, String name, Long expectedRevision, String verb)
            throws SQLException {
        Optional<ScheduleInfo> held = store.get(c, name);
        if (held.isEmpty()) {
            return new IllegalArgumentException("no schedule named '" + name + "': create it with create(schedule)");
        }
        ScheduleInfo h = held.get();
        if (h.origin() == ScheduleOrigin.DECLARED) {
            return declared(h, verb);
        }
        return new ScheduleConflictException(
                "schedule '" + name + "' is at revision " + h.revision() + " (changed by "
                        + h.changedBy().orElse("?") + " at "
                        + h.changedAt().map(Instant::toString).orElse("?")
                        + "), not " + expectedRevision + ": another change came first and nothing was changed; "
                        + "read it again (get) and retry",
                name,
                h.revision());
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
        if (owner.equals(ScheduleStore.RUNTIME_OWNER)) {
            // Decision 0021: the declaration is refused rather than taking over an operator's schedule.
            throw new IllegalStateException("schedule '" + s.name + "' was created at run time (Schedules.create) "
                    + "and application '" + app + "' " + version + " declares a schedule of that name: delete the "
                    + "runtime schedule (Schedules.delete) or rename the declaration");
        }
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
