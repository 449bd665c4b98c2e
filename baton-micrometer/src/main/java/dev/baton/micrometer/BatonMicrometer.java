package dev.baton.micrometer;

import dev.baton.BatonMetrics;
import dev.baton.Jobs;
import dev.baton.QueueStats;
import dev.baton.RevocationReason;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.MultiGauge;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Baton's events as Micrometer meters. Usable without Spring:
 *
 * <pre>{@code
 * BatonMicrometer metrics = new BatonMicrometer(registry);
 * Baton baton = Baton.builder(ds).metrics(metrics)....build().start();
 * AutoCloseable depth = metrics.bindQueueDepth(baton.jobs(), Duration.ofSeconds(15));   // optional gauges
 * }</pre>
 *
 * <p>Meters (names in Micrometer's dot notation; a Prometheus registry renders
 * {@code baton.jobs.completed} as {@code baton_jobs_completed_total}):
 * <ul>
 *   <li>{@value #LEADERSHIP_ACQUIRED} (counter; lease) — this node became leader: a change of owner</li>
 *   <li>{@value #LEADERSHIP_REVOKED} (counter; lease, reason = stopped | lost | deadline | task_completed |
 *       task_failed) — {@code reason=deadline} is a self-stop</li>
 *   <li>{@value #LEASE_RENEW} (timer; lease, outcome = confirmed | unconfirmed) — renewal latency</li>
 *   <li>{@value #JOBS_ENQUEUED} (counter; queue, kind)</li>
 *   <li>{@value #JOBS_CLAIMED} (counter; queue, kind) and {@value #JOBS_CLAIM_LATENCY} (timer; queue, kind)
 *       — from the job's due time to its claim</li>
 *   <li>{@value #JOBS_COMPLETED} (counter; queue, kind, outcome = succeeded | retried | failed | cancelled |
 *       self_stopped | released | snoozed) and {@value #JOBS_EXECUTION} (timer; same tags) — handler run time</li>
 *   <li>{@value #JOBS_RESCUED} (counter; queue, kind, result = requeued | ended)</li>
 *   <li>{@value #QUEUE_DEPTH} (gauge; queue, state = available | running) and {@value #QUEUE_LAG}
 *       (gauge, seconds; queue) — from {@link #bindQueueDepth}</li>
 *   <li>{@value #SCHEDULE_FIRE_DELAY} (timer; schedule) — due instant to firing</li>
 *   <li>{@value #SCHEDULE_FAILURES} (counter; schedule) — attempts to fire that failed (an unknown zone, a
 *       corrupt stored spec); the schedule is retried with a backoff, and shown as failing by {@code status}</li>
 *   <li>{@value #COORDINATION_FALLBACKS} (counter; primitive = dedupe | concurrency_cap | rate_limiter)</li>
 *   <li>{@value #UNHANDLED_KINDS} (counter; queue, kind) — kinds of available jobs no live node handles,
 *       counted once per kind and queue when this node's worker first sees them</li>
 * </ul>
 * Job kinds and schedule names become tag values: keep them a bounded set (they usually are).
 */
public final class BatonMicrometer implements BatonMetrics {
    public static final String LEADERSHIP_ACQUIRED = "baton.leadership.acquired";
    public static final String LEADERSHIP_REVOKED = "baton.leadership.revoked";
    public static final String LEASE_RENEW = "baton.lease.renew";
    public static final String JOBS_ENQUEUED = "baton.jobs.enqueued";
    public static final String JOBS_CLAIMED = "baton.jobs.claimed";
    public static final String JOBS_CLAIM_LATENCY = "baton.jobs.claim.latency";
    public static final String JOBS_COMPLETED = "baton.jobs.completed";
    public static final String JOBS_EXECUTION = "baton.jobs.execution";
    public static final String JOBS_RESCUED = "baton.jobs.rescued";
    public static final String QUEUE_DEPTH = "baton.jobs.queue.depth";
    public static final String QUEUE_LAG = "baton.jobs.queue.lag";
    public static final String SCHEDULE_FIRE_DELAY = "baton.schedules.fire.delay";
    public static final String SCHEDULE_FAILURES = "baton.schedules.failures";
    public static final String COORDINATION_FALLBACKS = "baton.coordination.fallbacks";
    public static final String UNHANDLED_KINDS = "baton.jobs.unhandled.kinds";
    /** Every meter name above, for documentation and tests. */
    public static final List<String> METER_NAMES = List.of(
            LEADERSHIP_ACQUIRED,
            LEADERSHIP_REVOKED,
            LEASE_RENEW,
            JOBS_ENQUEUED,
            JOBS_CLAIMED,
            JOBS_CLAIM_LATENCY,
            JOBS_COMPLETED,
            JOBS_EXECUTION,
            JOBS_RESCUED,
            QUEUE_DEPTH,
            QUEUE_LAG,
            SCHEDULE_FIRE_DELAY,
            SCHEDULE_FAILURES,
            COORDINATION_FALLBACKS,
            UNHANDLED_KINDS);
    /** The shortest refresh interval of the queue gauges: each refresh is one grouped query. */
    public static final Duration MIN_QUEUE_REFRESH = Duration.ofSeconds(1);

    private static final Logger log = LoggerFactory.getLogger(BatonMicrometer.class);

    private final MeterRegistry registry;
    private final Tags common;

    public BatonMicrometer(MeterRegistry registry) {
        this(registry, Tags.empty());
    }

    /** With {@code commonTags} added to every meter (e.g. the application name). */
    public BatonMicrometer(MeterRegistry registry, Iterable<io.micrometer.core.instrument.Tag> commonTags) {
        this.registry = Objects.requireNonNull(registry, "registry");
        this.common = Tags.of(Objects.requireNonNull(commonTags, "commonTags"));
    }

    @Override
    public void leadershipAcquired(String lease, long generation) {
        counter(LEADERSHIP_ACQUIRED, "changes of a lease's owner to this node", Tags.of("lease", lease))
                .increment();
    }

    @Override
    public void leadershipRevoked(String lease, RevocationReason reason) {
        counter(
                        LEADERSHIP_REVOKED,
                        "ends of this node's terms as leader (reason=deadline: self-stop)",
                        Tags.of("lease", lease, "reason", lower(reason)))
                .increment();
    }

    @Override
    public void leaseRenewed(String lease, Duration latency, boolean confirmed) {
        timer(
                        LEASE_RENEW,
                        "lease renewal calls by leaders on this node",
                        Tags.of("lease", lease, "outcome", confirmed ? "confirmed" : "unconfirmed"))
                .record(latency);
    }

    @Override
    public void jobsEnqueued(String queue, String kind, int count) {
        counter(
                        JOBS_ENQUEUED,
                        "jobs inserted by this node (duplicates by idempotency key not counted)",
                        Tags.of("queue", queue, "kind", kind))
                .increment(count);
    }

    @Override
    public void jobClaimed(String queue, String kind, Duration waited) {
        Tags tags = Tags.of("queue", queue, "kind", kind);
        counter(JOBS_CLAIMED, "job attempts claimed by this node", tags).increment();
        timer(JOBS_CLAIM_LATENCY, "from a job's due time to its claim", tags).record(waited);
    }

    @Override
    public void jobFinished(String queue, String kind, JobOutcome outcome, Duration ran) {
        Tags tags = Tags.of("queue", queue, "kind", kind, "outcome", lower(outcome));
        counter(JOBS_COMPLETED, "job attempts ended on this node, by outcome", tags)
                .increment();
        timer(JOBS_EXECUTION, "handler run time of job attempts on this node", tags)
                .record(ran);
    }

    @Override
    public void jobRescued(String queue, String kind, boolean requeued) {
        counter(
                        JOBS_RESCUED,
                        "expired job attempts rescued by this node's maintenance",
                        Tags.of("queue", queue, "kind", kind, "result", requeued ? "requeued" : "ended"))
                .increment();
    }

    @Override
    public void scheduleFired(String schedule, Duration delay) {
        timer(SCHEDULE_FIRE_DELAY, "from a schedule's due instant to its firing", Tags.of("schedule", schedule))
                .record(delay);
    }

    @Override
    public void jobKindUnhandled(String queue, String kind) {
        counter(
                        UNHANDLED_KINDS,
                        "kinds of available jobs that no live node handles, counted once per kind and queue when "
                                + "this node first sees them (they wait without using an attempt)",
                        Tags.of("queue", queue, "kind", kind))
                .increment();
    }

    @Override
    public void scheduleFailed(String schedule) {
        counter(
                        SCHEDULE_FAILURES,
                        "attempts to fire a schedule that failed (it is retried with a backoff)",
                        Tags.of("schedule", schedule))
                .increment();
    }

    @Override
    public void fallbackUsed(String primitive) {
        counter(
                        COORDINATION_FALLBACKS,
                        "coordination decisions taken locally because the database was unreachable",
                        Tags.of("primitive", primitive))
                .increment();
    }

    /**
     * Registers {@value #QUEUE_DEPTH} and {@value #QUEUE_LAG} per queue, refreshed every {@code refresh}
     * (at least {@link #MIN_QUEUE_REFRESH}) by one grouped query on a daemon thread, so a scrape never
     * waits on the database. Close the result to stop refreshing.
     */
    public AutoCloseable bindQueueDepth(Jobs jobs, Duration refresh) {
        Objects.requireNonNull(jobs, "jobs");
        Objects.requireNonNull(refresh, "refresh");
        if (refresh.compareTo(MIN_QUEUE_REFRESH) < 0) {
            throw new IllegalArgumentException("queue depth refresh must be at least " + MIN_QUEUE_REFRESH
                    + " (each refresh is one query over the job table), but was " + refresh);
        }
        QueueGauges gauges = new QueueGauges(jobs);
        gauges.refresh();
        ScheduledExecutorService exec = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "baton-metrics-queues");
            t.setDaemon(true);
            return t;
        });
        exec.scheduleWithFixedDelay(gauges::refresh, refresh.toMillis(), refresh.toMillis(), TimeUnit.MILLISECONDS);
        return exec::shutdownNow;
    }

    /** Reads {@link Jobs#stats()} into multi-gauges; queues that disappear drop their rows. */
    private final class QueueGauges {
        private final Jobs jobs;
        private final MultiGauge depth;
        private final MultiGauge lag;

        QueueGauges(Jobs jobs) {
            this.jobs = jobs;
            this.depth = MultiGauge.builder(QUEUE_DEPTH)
                    .tags(common)
                    .description("jobs per queue and state")
                    .baseUnit("jobs")
                    .register(registry);
            this.lag = MultiGauge.builder(QUEUE_LAG)
                    .tags(common)
                    .description("age of the oldest available job past its due time (0 when none)")
                    .baseUnit("seconds")
                    .register(registry);
        }

        void refresh() {
            try {
                List<QueueStats> stats = jobs.stats();
                Instant now = Instant.now();
                List<MultiGauge.Row<?>> depthRows = new ArrayList<>();
                List<MultiGauge.Row<?>> lagRows = new ArrayList<>();
                for (QueueStats s : stats) {
                    depthRows.add(MultiGauge.Row.of(Tags.of("queue", s.queue(), "state", "available"), s.available()));
                    depthRows.add(MultiGauge.Row.of(Tags.of("queue", s.queue(), "state", "running"), s.running()));
                    double seconds = s.oldestAvailableRunAt()
                            .map(t -> Math.max(0, Duration.between(t, now).toMillis() / 1000.0))
                            .orElse(0.0);
                    lagRows.add(MultiGauge.Row.of(Tags.of("queue", s.queue()), seconds));
                }
                depth.register(depthRows, true);
                lag.register(lagRows, true);
            } catch (RuntimeException e) {
                log.warn("refreshing Baton queue gauges failed (kept the last values): {}", e.getMessage());
            }
        }
    }

    private Counter counter(String name, String description, Tags tags) {
        return Counter.builder(name)
                .description(description)
                .tags(common)
                .tags(tags)
                .register(registry);
    }

    private Timer timer(String name, String description, Tags tags) {
        return Timer.builder(name)
                .description(description)
                .tags(common)
                .tags(tags)
                .register(registry);
    }

    private static String lower(Enum<?> e) {
        return e.name().toLowerCase(Locale.ROOT);
    }
}
