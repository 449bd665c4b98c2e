package dev.baton.internal.schedule;

import dev.baton.BatonMetrics;
import dev.baton.EnqueueResult;
import dev.baton.JobRequest;
import dev.baton.Schedule;
import dev.baton.UnknownOutcomeException;
import dev.baton.internal.db.Db;
import dev.baton.internal.db.Jdbc;
import dev.baton.internal.job.Interceptors;
import dev.baton.internal.job.JobErrors;
import dev.baton.internal.job.JobMetadata;
import dev.baton.internal.job.JobStore;
import dev.baton.internal.notify.NotifiedService;
import dev.baton.internal.notify.Notifier;
import dev.baton.internal.schedule.ScheduleStore.Definition;
import dev.baton.internal.schedule.ScheduleStore.Due;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fires due schedules. Runs on one node at a time, for one term of the maintenance lease, to save load,
 * but its correctness does not depend on that: firing is a compare-and-set on {@code next_run_at} plus an
 * enqueue whose idempotency key names the due instant, in one transaction, so two schedulers that overlap
 * still produce one job per due instant.
 *
 * <p>Its pass fires what is due, looks for orphaned schedules once per {@link #ORPHAN_CHECK}, and waits
 * until the next due instant (on the database clock), at most 30 s while notifications arrive (a
 * declaration or pause wakes it) and at most the poll interval otherwise. Tests call {@link #fireDue()}.
 */
public final class Scheduler extends NotifiedService {
    private static final Logger log = LoggerFactory.getLogger(Scheduler.class);
    /** Due instants computed per schedule and firing, at most. */
    static final int MAX_INSTANTS = 10_000;

    static final int BATCH = 100;
    /** How often the scheduler reconciles its application's schedules with the live nodes. */
    public static final Duration ORPHAN_CHECK = Duration.ofMinutes(1);
    /** Instants far past any real schedule: a cron that never fires again parks here. */
    static final Instant NEVER = Instant.parse("9999-01-01T00:00:00Z");

    /** The metadata entry naming the schedule that enqueued a job. */
    public static final String SCHEDULE_METADATA = "baton.schedule";
    /** The metadata entry holding the due instant a schedule's job was enqueued for (ISO-8601). */
    public static final String DUE_METADATA = "baton.due";

    private final Interceptors interceptors;
    /** The longest wait between passes while notifications arrive: polling is only a safety net then. */
    private static final Duration LISTENING_WAIT = Duration.ofSeconds(30);

    private final Db db;
    private final ScheduleStore store;
    private final ScheduleReconciler reconciler;
    private final JobStore jobStore;
    private final Notifier notifier;
    private final Duration pollInterval;
    private final String app;
    private final String appVersion;
    private final BatonMetrics metrics;
    /** Monotonic nanoseconds: when orphaned schedules were last looked for. Service thread only. */
    private long lastOrphanCheck;

    public Scheduler(
            Db db,
            ScheduleStore store,
            JobStore jobStore,
            Notifier notifier,
            Duration pollInterval,
            String app,
            String appVersion,
            BatonMetrics metrics,
            LongSupplier ticker,
            Interceptors interceptors) {
        super("baton-scheduler", ticker, notifier.subscribe(store.channel(), "changed"));
        this.interceptors = interceptors;
        this.db = db;
        this.store = store;
        this.reconciler = new ScheduleReconciler(db, store);
        this.jobStore = jobStore;
        this.notifier = notifier;
        this.pollInterval = pollInterval;
        this.app = app;
        this.appVersion = appVersion;
        this.metrics = metrics;
        // Not at once: a new term often follows an outage, after which every node's heartbeat looks stale
        // until its next beat. (The node's own version is protected anyway, and reconciling re-enables.)
        this.lastOrphanCheck = ticker.getAsLong();
    }

    /**
     * One pass: fires the due schedules, reconciles once per {@link #ORPHAN_CHECK}, and returns how long to
     * wait for the next due instant (the poll interval after a failed pass).
     */
    @Override
    protected long runOnce() {
        try {
            fireDue();
            if (ticker.getAsLong() - lastOrphanCheck >= ORPHAN_CHECK.toNanos()) {
                reconciler.reconcile(app, appVersion);
                lastOrphanCheck = ticker.getAsLong();
            }
            // Sleep until the next due instant (on the database clock); with notifications
            // active, a declaration or pause wakes us, so polling is only a safety net.
            long untilDue = untilNextDueNanos();
            long cap = notifier.listening() ? LISTENING_WAIT.toNanos() : pollInterval.toNanos();
            return Math.max(0, Math.min(untilDue, cap));
        } catch (SQLException | RuntimeException e) {
            log.warn("firing schedules failed, retrying in {}: {}", pollInterval, e.getMessage());
            return pollInterval.toNanos();
        }
    }

    /**
     * Fires every due schedule once (catching up per its misfire policy); returns the jobs enqueued. Each
     * schedule fires in its own error boundary: one that cannot fire (an unknown zone, a corrupt stored
     * spec, a job that cannot be built) is recorded as failing, logged, counted and retried after a
     * backoff, and the others fire on time.
     */
    public int fireDue() throws SQLException {
        return fireDue(null);
    }

    /** {@link #fireDue()} as of {@code asOf}, or of the database clock when null. */
    private int fireDue(Instant asOf) throws SQLException {
        int total = 0;
        while (true) {
            List<Due> due = due(asOf);
            boolean skipped = false;
            for (Due d : due) {
                try {
                    total += fire(d, asOf);
                } catch (UnknownOutcomeException e) {
                    throw e; // the connection failed during COMMIT: a database problem, not this schedule's
                } catch (SQLException e) {
                    if (Jdbc.isConnectionFailure(e)) {
                        throw e;
                    }
                    if (transientFailure(e)) {
                        // A deadlock, serialization failure, lock or statement timeout: the database's moment,
                        // not this schedule's fault. Not recorded as failing; the next pass fires it.
                        log.warn(
                                "schedule '{}' did not fire this pass ({}); retrying at the next",
                                d.name(),
                                e.getMessage());
                        skipped = true;
                        continue;
                    }
                    failed(d, e);
                } catch (RuntimeException e) {
                    failed(d, e);
                }
            }
            if (due.size() < BATCH || skipped) { // a skipped schedule is still due: leave it to the next pass
                return total;
            }
        }
    }

    /** SQLSTATE classes and codes a retry can clear: 40 (serialization, deadlock), lock and statement timeouts. */
    static boolean transientFailure(SQLException e) {
        String state = e.getSQLState();
        return state != null && (state.startsWith("40") || state.equals("55P03") || state.equals("57014"));
    }

    /** Records that {@code d} could not fire; it is retried after a backoff, never in the way of the others. */
    private void failed(Due d, Exception e) throws SQLException {
        String error = e.getClass().getSimpleName() + ": " + e.getMessage();
        int count = db.call(
                "recording that schedule '" + d.name() + "' failed",
                c -> store.recordFailure(c, d.name(), d.nextRunAt(), JobErrors.clean(error, 2000), pollInterval));
        metrics.scheduleFailed(d.name());
        if (count > 0 && (count <= 3 || Integer.bitCount(count) == 1)) { // 1, 2, 3, 4, 8, 16, ...: not every retry
            log.warn(
                    "schedule '{}' cannot fire its instant {} (failure {} in a row); retrying with a backoff, other "
                            + "schedules are unaffected: {}",
                    d.name(),
                    d.nextRunAt(),
                    count,
                    error);
        }
    }

    private List<Due> due(Instant asOf) throws SQLException {
        return db.call(
                "reading due schedules", c -> asOf == null ? store.due(c, BATCH) : store.dueAsOf(c, BATCH, asOf));
    }

    private long untilNextDueNanos() throws SQLException {
        return db.call("reading the next due schedule", store::untilNextDueNanos);
    }

    /**
     * Rebuilds a schedule's timing from its stored definition (validated again).
     *
     * @throws IllegalArgumentException if the stored definition cannot be used here (a corrupt spec, a time
     *                                  zone this JVM does not know, a name a newer rule refuses)
     */
    static Schedule timing(Definition d) {
        String name = d.name();
        String spec = d.spec();
        if ("cron".equals(d.specKind())) {
            return Schedule.cron(name, spec).zone(d.zone());
        } else if ("interval".equals(d.specKind())) {
            long ms;
            try {
                ms = Long.parseLong(spec);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(
                        "stored interval '" + spec + "' of schedule '" + name + "' is not a number of milliseconds", e);
            }
            return Schedule.every(name, Duration.ofMillis(ms));
        }
        throw new IllegalArgumentException(
                "stored spec kind '" + d.specKind() + "' of schedule '" + name + "' is unknown");
    }

    /** The job a schedule enqueues for one due instant, from its stored definition. */
    static JobStore.Encoded job(Definition d, Instant due) {
        return job(d, due, null);
    }

    /** The same, carrying {@code metadataJson} (null: none). */
    static JobStore.Encoded job(Definition d, Instant due, String metadataJson) {
        // Checked by the rules a declaration passes, with their messages: a row stored by another version
        // may break one of this version's.
        JobRequest.of(d.jobKind(), null).queue(d.queue()).priority(d.priority()).maxAttempts(d.maxAttempts());
        return new JobStore.Encoded(
                d.queue(),
                d.jobKind(),
                d.payload(),
                d.priority(),
                null,
                Duration.ZERO,
                d.maxAttempts(),
                null,
                d.allowOverlap() ? null : ScheduleKeys.concurrencyKey(d.name()),
                ScheduleKeys.idempotencyKey(d.name(), due),
                metadataJson);
    }

    /**
     * The firing as the interceptors see it: a request of the schedule's kind and queue with the schedule
     * and the due instant as metadata. Only the metadata they return is taken.
     */
    private JobRequest intercepted(Definition d, Instant due) {
        JobRequest r = JobRequest.of(d.jobKind(), null)
                .queue(d.queue())
                .metadata(SCHEDULE_METADATA, d.name())
                .metadata(DUE_METADATA, due.toString());
        return interceptors.beforeEnqueue(List.of(r)).get(0);
    }

    /** Fires one schedule in one transaction; returns how many jobs it enqueued (0 if another scheduler won). */
    private int fire(Due d, Instant asOf) throws SQLException {
        Schedule def = timing(d.definition());
        Fired fired;
        // The requests the interceptors saw, so that each beforeEnqueue gets its afterEnqueue however the
        // firing ends (rolled back when another scheduler won, or failed).
        List<JobRequest> requests = new ArrayList<>();
        try {
            fired = fireIn(d, def, asOf, requests);
        } catch (LostRace e) {
            interceptors.afterEnqueue(requests, null, e);
            return 0;
        } catch (SQLException | RuntimeException e) {
            interceptors.afterEnqueue(requests, null, e);
            throw e;
        }
        for (Instant due : fired.instants()) {
            metrics.scheduleFired(d.name(), Duration.between(due, fired.now()));
        }
        interceptors.afterEnqueue(requests, fired.results(), null);
        if (fired.dropped() > 0) {
            log.warn(
                    "schedule '{}': {} due instant(s) missed and dropped by misfire policy {}",
                    d.name(),
                    fired.dropped(),
                    d.definition().misfire());
        }
        return fired.instants().size();
    }

    /** The firing transaction: the jobs of the due instants, then the compare-and-set of next_run_at. */
    private Fired fireIn(Due d, Schedule def, Instant asOf, List<JobRequest> requests) throws SQLException {
        return db.transaction("firing schedule '" + d.name() + "'", c -> {
            requests.clear();
            Instant now = asOf != null ? asOf : store.dbNow(c);
            List<Instant> instants = new ArrayList<>();
            Instant t = d.nextRunAt();
            boolean truncated = false;
            while (!t.isAfter(now)) {
                if (instants.size() == MAX_INSTANTS) {
                    truncated = true;
                    break;
                }
                instants.add(t);
                Optional<Instant> n = def.nextAfter(t);
                if (n.isEmpty()) {
                    t = NEVER;
                    break;
                }
                t = n.get();
            }
            Instant next = truncated ? def.nextAfter(now).orElse(NEVER) : t;
            Instant missedBefore = now.minusMillis(d.definition().thresholdMs());
            List<Instant> missed = new ArrayList<>();
            List<Instant> timely = new ArrayList<>();
            for (Instant i : instants) {
                (i.isBefore(missedBefore) ? missed : timely).add(i);
            }
            List<Instant> fire = new ArrayList<>();
            switch (d.definition().misfire()) {
                case "skip" -> fire.addAll(timely);
                case "catch_up" -> {
                    fire.addAll(missed.subList(
                            Math.max(0, missed.size() - d.definition().catchUpLimit()), missed.size()));
                    fire.addAll(timely);
                }
                default -> { // run_once
                    if (timely.isEmpty() && !missed.isEmpty()) {
                        fire.add(missed.get(missed.size() - 1));
                    }
                    fire.addAll(timely);
                }
            }
            long dropped = instants.size() - fire.size() + (truncated ? 1 : 0);
            Long lastJob = null;
            List<EnqueueResult> results = new ArrayList<>(fire.size());
            for (Instant due : fire) {
                JobRequest r = intercepted(d.definition(), due);
                requests.add(r);
                EnqueueResult result = jobStore.enqueueOne(c, job(d.definition(), due, JobMetadata.json(r.metadata())));
                results.add(result);
                lastJob = result.id();
            }
            boolean advanced = store.advance(
                    c,
                    d.name(),
                    d.nextRunAt(),
                    next,
                    fire.isEmpty() ? null : fire.get(fire.size() - 1),
                    lastJob,
                    dropped);
            if (!advanced) {
                // Another scheduler fired this instant first: undo the enqueues (they would be
                // duplicates of its, by idempotency key, but there is no reason to keep them).
                throw new LostRace();
            }
            return new Fired(fire, now, dropped, results);
        });
    }

    private record Fired(List<Instant> instants, Instant now, long dropped, List<EnqueueResult> results) {}

    /** Another scheduler advanced the schedule first: roll this firing back. */
    private static final class LostRace extends SQLException {
        LostRace() {
            super("another scheduler fired this instant first");
        }
    }

    /**
     * Test support (the schedule clock of baton-test): fires what is due as of {@code asOf} instead of the
     * database clock, as a pass at that instant would (misfire policies judge lateness against it); returns
     * the jobs enqueued. Their run time is the database clock's now, so they are due at once. An instant
     * before the database clock fires nothing that the clock has not already made due.
     */
    public int fireDueAsOf(Instant asOf) throws SQLException {
        return fireDue(java.util.Objects.requireNonNull(asOf, "asOf"));
    }
}
