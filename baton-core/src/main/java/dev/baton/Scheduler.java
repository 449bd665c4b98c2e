package dev.baton;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Fires due schedules. Runs on one node at a time under the {@value #LEASE} lease to save load, but
 * its correctness does not depend on that: firing is a compare-and-set on {@code next_run_at} plus
 * an enqueue whose idempotency key names the due instant, in one transaction, so two schedulers that
 * overlap still produce one job per due instant.
 */
final class Scheduler implements LeaderTask {
    static final String LEASE = MaintenanceTask.LEASE;
    private static final Logger log = LoggerFactory.getLogger(Scheduler.class);
    /** Due instants computed per schedule and firing, at most. */
    static final int MAX_INSTANTS = 10_000;
    static final int BATCH = 100;
    static final Duration ORPHAN_CHECK = Duration.ofMinutes(1);
    /** Instants far past any real schedule: a cron that never fires again parks here. */
    static final Instant NEVER = Instant.parse("9999-01-01T00:00:00Z");

    private final DataSource dataSource;
    private final Schedules schedules;
    private final JobStore jobStore;
    private final Notifier notifier;
    private final Duration pollInterval;
    private final String app;
    private final String appVersion;
    private final BatonMetrics metrics;

    Scheduler(DataSource dataSource, Schedules schedules, JobStore jobStore, Notifier notifier, Duration pollInterval,
              String app, String appVersion, BatonMetrics metrics) {
        this.dataSource = dataSource;
        this.schedules = schedules;
        this.jobStore = jobStore;
        this.notifier = notifier;
        this.pollInterval = pollInterval;
        this.app = app;
        this.appVersion = appVersion;
        this.metrics = metrics;
    }

    @Override
    public void run(LeaderContext ctx) {
        // Not at once: a new term often follows an outage, after which every node's heartbeat looks stale
        // until its next beat. (The node's own version is protected anyway, and reconciling re-enables.)
        long lastOrphanCheck = System.nanoTime();
        try (Notifier.Subscription wake = notifier.subscribe(schedules.notifyChannel(), "changed")) {
            while (!ctx.isCancelled()) {
                long waitNanos = pollInterval.toNanos();
                try {
                    runOnce();
                    if (System.nanoTime() - lastOrphanCheck >= ORPHAN_CHECK.toNanos()) {
                        schedules.reconcile(app, appVersion);
                        lastOrphanCheck = System.nanoTime();
                    }
                    // Sleep until the next due instant (on the database clock); with notifications
                    // active, a declaration or pause wakes us, so polling is only a safety net.
                    long untilDue = untilNextDueNanos();
                    long cap = notifier.listening() ? Duration.ofSeconds(30).toNanos() : pollInterval.toNanos();
                    waitNanos = Math.max(0, Math.min(untilDue, cap));
                } catch (SQLException | RuntimeException e) {
                    log.warn("firing schedules failed, retrying in {}: {}", pollInterval, e.getMessage());
                }
                if (waitNanos > 0 && !wake.await(waitNanos)) {
                    return; // interrupted: the term is over
                }
            }
        }
    }

    /** Fires every due schedule once (catching up per its misfire policy); returns the jobs enqueued. */
    int runOnce() throws SQLException {
        int total = 0;
        while (true) {
            List<Due> due = due();
            for (Due d : due) {
                total += fire(d);
            }
            if (due.size() < BATCH) {
                return total;
            }
        }
    }

    private record Due(String name, String specKind, String spec, String zone, String jobKind, String queue,
                       String payload, int priority, int maxAttempts, String misfire, int catchUpLimit,
                       long thresholdMs, boolean allowOverlap, Instant nextRunAt, Instant dbNow) {}

    private List<Due> due() throws SQLException {
        List<Due> out = new ArrayList<>();
        try (Connection c = dataSource.getConnection();
             PreparedStatement ps = c.prepareStatement(schedules.sql().get("due"))) {
            ps.setInt(1, BATCH);
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    out.add(new Due(rs.getString("name"), rs.getString("spec_kind"), rs.getString("spec"),
                            rs.getString("time_zone"), rs.getString("job_kind"), rs.getString("job_queue"),
                            rs.getString("job_payload"), rs.getInt("job_priority"), rs.getInt("job_max_attempts"),
                            rs.getString("misfire_policy"), rs.getInt("catch_up_limit"),
                            rs.getLong("misfire_threshold_ms"), rs.getBoolean("allow_overlap"),
                            Leases.instant(rs, "next_run_at"), Leases.instant(rs, "db_now")));
                }
            }
        }
        return out;
    }

    private long untilNextDueNanos() throws SQLException {
        try (Connection c = dataSource.getConnection();
             PreparedStatement ps = c.prepareStatement(schedules.sql().get("next_due"));
             ResultSet rs = ps.executeQuery()) {
            rs.next();
            Object v = rs.getObject(1);
            if (v == null) {
                return Long.MAX_VALUE;
            }
            org.postgresql.util.PGInterval i = (org.postgresql.util.PGInterval) v;
            double seconds = i.getDays() * 86_400.0 + i.getHours() * 3600.0 + i.getMinutes() * 60.0 + i.getSeconds();
            return (long) (seconds * 1e9);
        }
    }

    /** Fires one schedule in one transaction; returns how many jobs it enqueued (0 if another scheduler won). */
    private int fire(Due d) throws SQLException {
        Schedule def = Schedule.stored(d.name(), d.specKind(), d.spec(), d.zone());
        try (Connection c = dataSource.getConnection()) {
            boolean autoCommit = c.getAutoCommit();
            c.setAutoCommit(false);
            try {
                Instant now = Schedules.dbNow(c);
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
                Instant missedBefore = now.minusMillis(d.thresholdMs());
                List<Instant> missed = new ArrayList<>();
                List<Instant> timely = new ArrayList<>();
                for (Instant i : instants) {
                    (i.isBefore(missedBefore) ? missed : timely).add(i);
                }
                List<Instant> fire = new ArrayList<>();
                switch (d.misfire()) {
                    case "skip" -> fire.addAll(timely);
                    case "catch_up" -> {
                        fire.addAll(missed.subList(Math.max(0, missed.size() - d.catchUpLimit()), missed.size()));
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
                for (Instant due : fire) {
                    JobRequest r = JobRequest.of(d.jobKind(), null).queue(d.queue()).priority(d.priority())
                            .maxAttempts(d.maxAttempts()).idempotencyKey(Schedule.idempotencyKey(d.name(), due));
                    if (!d.allowOverlap()) {
                        r = r.concurrencyKey("schedule:" + d.name());
                    }
                    lastJob = jobStore.enqueueOne(c, new JobStore.Encoded(r, d.payload())).id();
                }
                int advanced;
                try (PreparedStatement ps = c.prepareStatement(schedules.sql().get("advance"))) {
                    ps.setTimestamp(1, Timestamp.from(next));
                    ps.setTimestamp(2, fire.isEmpty() ? null : Timestamp.from(fire.get(fire.size() - 1)));
                    if (lastJob == null) {
                        ps.setNull(3, java.sql.Types.BIGINT);
                    } else {
                        ps.setLong(3, lastJob);
                    }
                    ps.setLong(4, dropped);
                    ps.setLong(5, dropped);
                    ps.setString(6, d.name());
                    ps.setTimestamp(7, Timestamp.from(d.nextRunAt()));
                    advanced = ps.executeUpdate();
                }
                if (advanced == 0) {
                    c.rollback(); // another scheduler fired this instant first
                    return 0;
                }
                c.commit();
                for (Instant due : fire) {
                    metrics.scheduleFired(d.name(), Duration.between(due, now));
                }
                if (dropped > 0) {
                    log.warn("schedule '{}': {} due instant(s) missed and dropped by misfire policy {}", d.name(),
                            dropped, d.misfire());
                }
                return fire.size();
            } catch (Throwable e) {
                Jdbc.rollbackQuietly(c, e);
                throw e;
            } finally {
                if (!c.isClosed()) {
                    c.setAutoCommit(autoCommit);
                }
            }
        }
    }
}
