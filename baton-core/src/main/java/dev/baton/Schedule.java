package dev.baton;

import com.cronutils.model.Cron;
import com.cronutils.model.CronType;
import com.cronutils.model.definition.CronDefinitionBuilder;
import com.cronutils.model.time.ExecutionTime;
import com.cronutils.parser.CronParser;
import dev.baton.internal.db.Identifiers;
import dev.baton.internal.schedule.ScheduleKeys;
import java.time.DateTimeException;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZonedDateTime;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * A recurring schedule declared in code: a name, when (cron or fixed interval), and the job it
 * enqueues at each due instant. Immutable; every setter validates at once and names what is wrong.
 * Declared with {@code Baton.Builder#schedule}; stored durably with its next run, so each due instant
 * produces one job however many instances run.
 *
 * <pre>{@code
 * Schedule.cron("billing.close-day", "0 3 * * *").zone("Europe/Berlin").job("invoice.close-day", null)
 * Schedule.every("cache.sweep", Duration.ofMinutes(5)).job("cache.sweep", null).misfire(MisfirePolicy.SKIP)
 * }</pre>
 *
 * <p><b>Cron</b>: 5 fields (Unix: minute hour day-of-month month day-of-week) or 6 fields with seconds
 * first (Spring). Evaluated in the schedule's time zone (default UTC). Across daylight-saving changes
 * (as cron-utils computes them): a local time that does not exist (spring forward) does not fire that
 * day: a daily {@code 30 2 * * *} in America/New_York has no run on the spring-forward day, the next
 * is 02:30 the day after (pick a time outside the zone's changeover hour if every day must run). A local time that
 * occurs twice (fall back) fires once, at its first occurrence, since each next run is computed from
 * the previous one; only a schedule declared (or re-timed) between the two occurrences fires at the
 * second. An expression matching every hour fires in both repeated hours.
 * <b>Intervals</b> are aligned to the epoch (every 5 minutes fires at :00, :05, …), in UTC.
 */
public final class Schedule {
    /** Missed instants older than this are handled by the misfire policy; default 1 minute. */
    public static final Duration DEFAULT_MISFIRE_THRESHOLD = Duration.ofMinutes(1);

    /** The shortest interval a schedule may have. */
    public static final Duration MIN_INTERVAL = Duration.ofMillis(100);
    /**
     * Schedule names: 1 to 150 characters. Each job a schedule enqueues carries keys derived from its
     * name ({@code schedule:<name>:manual:<instant>} at most, within the 200 characters of a job key), so
     * a longer name is refused here rather than failing later, at every firing.
     */
    public static final int MAX_NAME_LENGTH = 150;

    private static final CronParser UNIX = new CronParser(CronDefinitionBuilder.instanceDefinitionFor(CronType.UNIX));
    private static final CronParser SECONDS =
            new CronParser(CronDefinitionBuilder.instanceDefinitionFor(CronType.SPRING53));

    enum Kind {
        CRON,
        INTERVAL
    }

    final String name;
    final Kind kind;
    final String spec;
    final ZoneId zone;
    final String jobKind;
    final Object payload;
    final String queue;
    final int priority;
    final int maxAttempts;
    final MisfirePolicy misfire;
    final int catchUpLimit;
    final Duration misfireThreshold;
    final boolean allowOverlap;
    private final ExecutionTime cron;
    private final long intervalMs;

    private Schedule(Draft d) {
        this.name = d.name;
        this.kind = d.kind;
        this.spec = d.spec;
        this.zone = d.zone;
        this.jobKind = d.jobKind;
        this.payload = d.payload;
        this.queue = d.queue;
        this.priority = d.priority;
        this.maxAttempts = d.maxAttempts;
        this.misfire = d.misfire;
        this.catchUpLimit = d.catchUpLimit;
        this.misfireThreshold = d.misfireThreshold;
        this.allowOverlap = d.allowOverlap;
        this.cron = d.cron;
        this.intervalMs = d.intervalMs;
    }

    /** The fields of a schedule being built or derived from another, with a new schedule's defaults. */
    private static final class Draft {
        String name;
        Kind kind;
        String spec;
        ZoneId zone = ZoneId.of("UTC");
        String jobKind;
        Object payload;
        String queue = JobRequest.DEFAULT_QUEUE;
        int priority = JobRequest.DEFAULT_PRIORITY;
        int maxAttempts = JobRequest.DEFAULT_MAX_ATTEMPTS;
        MisfirePolicy misfire = MisfirePolicy.RUN_ONCE;
        int catchUpLimit;
        Duration misfireThreshold = DEFAULT_MISFIRE_THRESHOLD;
        boolean allowOverlap;
        ExecutionTime cron;
        long intervalMs;

        Draft(String name, Kind kind, String spec) {
            this.name = name;
            this.kind = kind;
            this.spec = spec;
        }
    }

    /**
     * A cron schedule: 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds first.
     *
     * @throws IllegalArgumentException if the expression is not valid cron, with the parser's reason
     */
    public static Schedule cron(String name, String expression) {
        validName(name);
        Draft d = new Draft(name, Kind.CRON, expression);
        d.cron = parse(name, expression);
        return new Schedule(d);
    }

    /** A fixed-interval schedule, aligned to the epoch; at least 100 ms. */
    public static Schedule every(String name, Duration interval) {
        validName(name);
        if (interval == null || interval.compareTo(MIN_INTERVAL) < 0) {
            throw new IllegalArgumentException(
                    "interval of schedule '" + name + "' must be at least " + MIN_INTERVAL + ", but was " + interval);
        }
        Draft d = new Draft(name, Kind.INTERVAL, Long.toString(interval.toMillis()));
        d.intervalMs = interval.toMillis();
        return new Schedule(d);
    }

    static String validName(String name) {
        Identifiers.name("schedule name", name);
        if (name.length() > MAX_NAME_LENGTH) {
            throw new IllegalArgumentException(
                    "schedule name must be 1 to " + MAX_NAME_LENGTH + " characters (the keys "
                            + "of its jobs are derived from it), but was " + name.length() + " characters");
        }
        return name;
    }

    private static ExecutionTime parse(String name, String expression) {
        if (expression == null || expression.isBlank()) {
            throw new IllegalArgumentException("cron expression of schedule '" + name + "' must not be empty");
        }
        String[] fields = expression.trim().split("\\s+");
        if (fields.length != 5 && fields.length != 6) {
            throw new IllegalArgumentException("cron expression of schedule '" + name + "' must have 5 fields (minute "
                    + "hour day-of-month month day-of-week) or 6 (seconds first), but '" + expression + "' has "
                    + fields.length);
        }
        try {
            Cron c = (fields.length == 5 ? UNIX : SECONDS).parse(expression.trim());
            c.validate();
            return ExecutionTime.forCron(c);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(
                    "cron expression '" + expression + "' of schedule '" + name + "' is invalid: " + e.getMessage(), e);
        }
    }

    /** This schedule with {@code change} applied to a copy of its fields. */
    private Schedule with(Consumer<Draft> change) {
        Draft d = new Draft(name, kind, spec);
        d.zone = zone;
        d.jobKind = jobKind;
        d.payload = payload;
        d.queue = queue;
        d.priority = priority;
        d.maxAttempts = maxAttempts;
        d.misfire = misfire;
        d.catchUpLimit = catchUpLimit;
        d.misfireThreshold = misfireThreshold;
        d.allowOverlap = allowOverlap;
        d.cron = cron;
        d.intervalMs = intervalMs;
        change.accept(d);
        return new Schedule(d);
    }

    /** The time zone cron fields are read in (an IANA id such as "Europe/Berlin"); default UTC. */
    public Schedule zone(String zoneId) {
        ZoneId z;
        try {
            z = ZoneId.of(Objects.requireNonNull(zoneId, "zoneId"));
        } catch (DateTimeException e) {
            throw new IllegalArgumentException(
                    "time zone '" + zoneId + "' of schedule '" + name + "' is unknown: " + e.getMessage()
                            + " (use an IANA id such as Europe/Berlin)",
                    e);
        }
        if (kind == Kind.INTERVAL && !z.equals(ZoneId.of("UTC"))) {
            throw new IllegalArgumentException(
                    "schedule '" + name + "' is a fixed interval; a time zone applies only " + "to cron schedules");
        }
        return with(d -> d.zone = z);
    }

    /** The job each due instant enqueues: its kind and payload (encoded by the Baton's codec). */
    public Schedule job(String kind, Object payload) {
        Identifiers.name("job kind", kind);
        return with(d -> {
            d.jobKind = kind;
            d.payload = payload;
        });
    }

    /** This schedule with its jobs on {@code queue}. */
    public Schedule queue(String queue) {
        return with(d -> d.queue = JobRequest.validQueue(queue));
    }

    /** This schedule with its jobs at {@code priority} (0 first, 100 last). */
    public Schedule priority(int priority) {
        JobRequest.of("x", null).priority(priority); // same rule and message as jobs
        return with(d -> d.priority = priority);
    }

    /** This schedule with its jobs given {@code maxAttempts} attempts. */
    public Schedule maxAttempts(int maxAttempts) {
        JobRequest.of("x", null).maxAttempts(maxAttempts);
        return with(d -> d.maxAttempts = maxAttempts);
    }

    /** {@link MisfirePolicy#SKIP} or {@link MisfirePolicy#RUN_ONCE}; for catch-up use {@link #catchUp(int)}. */
    public Schedule misfire(MisfirePolicy policy) {
        Objects.requireNonNull(policy, "policy");
        if (policy == MisfirePolicy.CATCH_UP) {
            throw new IllegalArgumentException("CATCH_UP needs a bound: use catchUp(maxMissedRuns)");
        }
        return with(d -> {
            d.misfire = policy;
            d.catchUpLimit = 0;
        });
    }

    /** Catch up on at most {@code maxMissedRuns} (1 to 1000) missed instants after an outage. */
    public Schedule catchUp(int maxMissedRuns) {
        if (maxMissedRuns < 1 || maxMissedRuns > 1000) {
            throw new IllegalArgumentException(
                    "catchUp of schedule '" + name + "' must be 1 to 1000 missed runs, " + "but was " + maxMissedRuns);
        }
        return with(d -> {
            d.misfire = MisfirePolicy.CATCH_UP;
            d.catchUpLimit = maxMissedRuns;
        });
    }

    /** How late an instant may fire before it counts as missed; default 1 minute. */
    public Schedule misfireThreshold(Duration threshold) {
        Checks.requirePositive("misfireThreshold", threshold, false);
        return with(d -> d.misfireThreshold = threshold);
    }

    /**
     * Whether a run may start while the previous one is still running (default false: runs of this
     * schedule share a concurrency key, so the next waits for the previous to finish).
     */
    public Schedule allowOverlap(boolean allow) {
        return with(d -> d.allowOverlap = allow);
    }

    /** The schedule's name, unique in the cluster. */
    public String name() {
        return name;
    }

    /** The first due instant strictly after {@code t}, or empty if the expression never fires again. */
    public Optional<Instant> nextAfter(Instant t) {
        if (kind == Kind.INTERVAL) {
            long ms = t.toEpochMilli();
            long next = Math.floorDiv(ms, intervalMs) * intervalMs + intervalMs;
            return Optional.of(Instant.ofEpochMilli(next));
        }
        // Cron has whole-second resolution; cron-utils keeps the fraction of t for a "*" seconds field
        // (a "* * * * * *" after 07.76 s gave 08.76 s), so start from the whole second.
        return cron.nextExecution(ZonedDateTime.ofInstant(t, zone).truncatedTo(java.time.temporal.ChronoUnit.SECONDS))
                .map(ZonedDateTime::toInstant);
    }

    void requireJob() {
        if (jobKind == null) {
            throw new IllegalArgumentException("schedule '" + name + "' has no job: call .job(kind, payload)");
        }
    }

    /** The concurrency key shared by this schedule's runs unless overlap is allowed. */
    String concurrencyKey() {
        return allowOverlap ? null : ScheduleKeys.concurrencyKey(name);
    }

    /** The idempotency key of the job for one due instant: each instant yields one job. */
    static String idempotencyKey(String name, Instant due) {
        return ScheduleKeys.idempotencyKey(name, due);
    }

    String specKindDb() {
        return kind == Kind.CRON ? "cron" : "interval";
    }

    String misfireDb() {
        return misfire.name().toLowerCase(java.util.Locale.ROOT);
    }

    @Override
    public String toString() {
        return "Schedule[" + name + " " + (kind == Kind.CRON ? "cron '" + spec + "' " + zone : "every " + spec + " ms")
                + " -> " + jobKind + "]";
    }
}
