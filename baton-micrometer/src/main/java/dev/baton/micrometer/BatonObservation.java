package dev.baton.micrometer;

import dev.baton.BatonMetrics;
import dev.baton.BatonMetrics.JobOutcome;
import dev.baton.EnqueueResult;
import dev.baton.JobContext;
import dev.baton.JobInterceptor;
import dev.baton.JobRequest;
import dev.baton.Mdc;
import dev.baton.RevocationReason;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.observation.transport.ReceiverContext;
import io.micrometer.observation.transport.SenderContext;
import java.util.Collections;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.MDC;

/**
 * Baton's jobs as Micrometer {@link Observation}s, so that with Micrometer Tracing (bridged to OpenTelemetry
 * or Brave) a job's execution continues the trace of the code that enqueued it, on whichever node runs it.
 * Register it as an interceptor, and its {@link #leadershipEvents()} as (part of) the node's metrics:
 *
 * <pre>{@code
 * BatonObservation tracing = new BatonObservation(observationRegistry);
 * Baton.builder(ds)
 *         .interceptor(tracing)
 *         .metrics(CompositeBatonMetrics.of(new BatonMicrometer(meterRegistry), tracing.leadershipEvents()))
 *         ...
 * }</pre>
 *
 * <p>Observations:
 * <ul>
 *   <li>{@value #ENQUEUE} ("enqueue &lt;kind&gt;"), a sender: from before the job is written to after; the
 *       propagation headers the tracing handler injects (W3C {@code traceparent}, {@code tracestate}, or B3)
 *       are copied into the job's {@link JobRequest#metadata(String, String) metadata}. A schedule firing is
 *       one too, with {@value #SCHEDULE}.</li>
 *   <li>{@value #EXECUTE} ("execute &lt;kind&gt;"), a receiver reading the job's metadata: one per attempt,
 *       around the handler (its scope is open while the handler runs, so the handler's own spans and log
 *       lines belong to it). With a propagating tracing handler its span is a child of the enqueue span.</li>
 *   <li>{@value #COMPLETE} ("complete &lt;kind&gt;"): from the handler's return until the attempt's outcome is
 *       recorded in the database (or known not to be: then it ends with an error), a child of the execution.</li>
 *   <li>{@value #LEADERSHIP_TERM} ("leadership &lt;lease&gt;"): one leadership term of this node, from
 *       acquisition to revocation, through {@link #leadershipEvents()}.</li>
 * </ul>
 * Low-cardinality keys: {@value #QUEUE}, {@value #KIND}, {@value #OUTCOME}, {@value #SCHEDULE},
 * {@value #LEASE}, {@value #REASON}; high-cardinality: {@value #JOB_ID}, {@value #ATTEMPT}, {@value #NODE},
 * {@value #CLAIM_WAIT_MS}, {@value #DUE}, {@value #GENERATION}.
 *
 * <p>With {@link ObservationRegistry#NOOP}, or a registry without handlers, every method returns what it was
 * given at once: no carrier, no metadata, no observation.
 */
public final class BatonObservation implements JobInterceptor {
    public static final String ENQUEUE = "baton.job.enqueue";
    public static final String EXECUTE = "baton.job.execute";
    public static final String COMPLETE = "baton.job.complete";
    public static final String LEADERSHIP_TERM = "baton.leadership.term";

    public static final String QUEUE = "baton.queue";
    public static final String KIND = "baton.kind";
    public static final String OUTCOME = "baton.outcome";
    public static final String SCHEDULE = "baton.schedule";
    public static final String LEASE = "baton.lease";
    public static final String REASON = "baton.reason";
    public static final String JOB_ID = "baton.job.id";
    public static final String ATTEMPT = "baton.attempt";
    public static final String NODE = "baton.node";
    public static final String CLAIM_WAIT_MS = "baton.claim.wait.ms";
    public static final String DUE = "baton.due";
    public static final String GENERATION = "baton.generation";

    /** The metadata keys a schedule firing's request carries (set by Baton's scheduler). */
    private static final String SCHEDULE_METADATA = "baton.schedule";

    private static final String DUE_METADATA = "baton.due";

    private final ObservationRegistry registry;
    private final String nodeId;

    /**
     * Enqueue observations between {@link #beforeEnqueue} and {@link #afterEnqueue}, by request instance.
     * Baton pairs every {@code beforeEnqueue} with an {@code afterEnqueue}, also when the enqueue fails; the
     * weak keys are a safety net against an interceptor chain that breaks that pairing.
     */
    private final Map<JobRequest, Observation> enqueues = Collections.synchronizedMap(new WeakHashMap<>());

    private final Leadership leadership = new Leadership();

    /** Observations in {@code registry}; the node is taken from Baton's MDC key where the logger keeps an MDC. */
    public BatonObservation(ObservationRegistry registry) {
        this(registry, null);
    }

    /**
     * Observations in {@code registry}, naming {@code nodeId} as the node running attempts ({@code null}:
     * from Baton's {@link Mdc#NODE MDC key}, which needs a logging backend with an MDC, such as Logback).
     */
    public BatonObservation(ObservationRegistry registry, String nodeId) {
        this.registry = Objects.requireNonNull(registry, "registry");
        this.nodeId = nodeId;
    }

    /**
     * The {@link BatonMetrics} that turns this node's leadership terms into {@value #LEADERSHIP_TERM}
     * observations; it records nothing else. Combine it with other metrics through {@link CompositeBatonMetrics}.
     */
    public BatonMetrics leadershipEvents() {
        return leadership;
    }

    // ---------------------------------------------------------------- enqueue

    @Override
    public JobRequest beforeEnqueue(JobRequest job) {
        if (registry.isNoop()) {
            return job;
        }
        SenderContext<Map<String, String>> context = new SenderContext<>(Map::put);
        Map<String, String> carrier = new HashMap<>(4);
        context.setCarrier(carrier);
        String schedule = job.metadata().get(SCHEDULE_METADATA);
        Observation observation = Observation.createNotStarted(ENQUEUE, () -> context, registry)
                .contextualName("enqueue " + job.kind())
                .lowCardinalityKeyValue(QUEUE, job.queueName())
                .lowCardinalityKeyValue(KIND, job.kind());
        if (schedule != null) {
            observation.lowCardinalityKeyValue(SCHEDULE, schedule);
            String due = job.metadata().get(DUE_METADATA);
            if (due != null) {
                observation.highCardinalityKeyValue(DUE, due);
            }
        }
        observation.start();
        JobRequest carried = job;
        try {
            for (Map.Entry<String, String> header : carrier.entrySet()) {
                carried = withHeader(carried, header.getKey(), header.getValue());
            }
        } catch (RuntimeException e) {
            observation.error(e);
            observation.stop();
            throw e;
        }
        enqueues.put(carried, observation);
        return carried;
    }

    /** The request with one propagation header, unless it would break the metadata's limits (then as is). */
    private static JobRequest withHeader(JobRequest job, String key, String value) {
        if (key == null
                || value == null
                || key.isEmpty()
                || key.length() > JobRequest.MAX_METADATA_KEY_LENGTH
                || value.length() > JobRequest.MAX_METADATA_VALUE_LENGTH
                || (!job.metadata().containsKey(key) && job.metadata().size() >= JobRequest.MAX_METADATA_ENTRIES)) {
            return job;
        }
        return job.metadata(key, value);
    }

    @Override
    public void afterEnqueue(JobRequest job, EnqueueResult result, Throwable failure) {
        if (registry.isNoop()) {
            return;
        }
        Observation observation = enqueues.remove(job);
        if (observation == null) {
            return;
        }
        if (result != null) {
            observation
                    .highCardinalityKeyValue(JOB_ID, Long.toString(result.id()))
                    .lowCardinalityKeyValue(OUTCOME, result.created() ? "created" : "existing");
        } else {
            observation.lowCardinalityKeyValue(OUTCOME, "refused");
        }
        if (failure != null) {
            observation.error(failure);
        }
        observation.stop();
    }

    // ---------------------------------------------------------------- execution

    @Override
    public JobOutcome aroundExecution(JobContext job, Execution execution) {
        if (registry.isNoop()) {
            return execution.proceed();
        }
        Map<String, String> metadata = job.metadata();
        ReceiverContext<Map<String, String>> context = new ReceiverContext<>(Map::get);
        context.setCarrier(metadata);
        Observation observation =
                Observation.createNotStarted(EXECUTE, () -> context, registry).contextualName("execute " + job.kind());
        tagAttempt(observation, job, metadata);
        observation.highCardinalityKeyValue(
                CLAIM_WAIT_MS, Long.toString(job.waited().toMillis()));
        observation.start();
        JobOutcome outcome;
        try (Observation.Scope scope = observation.openScope()) {
            outcome = execution.proceed();
        } catch (RuntimeException | Error e) {
            observation.error(e);
            observation.stop();
            throw e;
        }
        String outcomeName = outcome.name().toLowerCase(Locale.ROOT);
        observation.lowCardinalityKeyValue(OUTCOME, outcomeName);
        execution.failure().ifPresent(observation::error);

        Observation complete = Observation.createNotStarted(COMPLETE, registry)
                .contextualName("complete " + job.kind())
                .parentObservation(observation)
                .lowCardinalityKeyValue(OUTCOME, outcomeName);
        tagAttempt(complete, job, metadata);
        complete.start();
        observation.stop();
        execution.whenRecorded(recorded -> {
            if (!recorded) {
                complete.error(new IllegalStateException("the outcome (" + outcomeName + ") of attempt " + job.attempt()
                        + " of job " + job.jobId() + " was not recorded"));
            }
            complete.highCardinalityKeyValue("baton.recorded", Boolean.toString(recorded));
            complete.stop();
        });
        return outcome;
    }

    private void tagAttempt(Observation observation, JobContext job, Map<String, String> metadata) {
        observation
                .lowCardinalityKeyValue(QUEUE, job.queue())
                .lowCardinalityKeyValue(KIND, job.kind())
                .highCardinalityKeyValue(JOB_ID, Long.toString(job.jobId()))
                .highCardinalityKeyValue(ATTEMPT, Integer.toString(job.attempt()));
        String schedule = metadata.get(SCHEDULE_METADATA);
        if (schedule != null) {
            observation.lowCardinalityKeyValue(SCHEDULE, schedule);
        }
        String node = nodeId != null ? nodeId : MDC.get(Mdc.NODE);
        if (node != null) {
            observation.highCardinalityKeyValue(NODE, node);
        }
    }

    // ---------------------------------------------------------------- leadership

    /** Leadership terms as observations; the other events are left to other metrics. */
    private final class Leadership implements BatonMetrics {
        private final Map<String, Observation> terms = new ConcurrentHashMap<>();

        @Override
        public void leadershipAcquired(String lease, long generation) {
            if (registry.isNoop()) {
                return;
            }
            Observation term = Observation.createNotStarted(LEADERSHIP_TERM, registry)
                    .contextualName("leadership " + lease)
                    .lowCardinalityKeyValue(LEASE, lease)
                    .highCardinalityKeyValue(GENERATION, Long.toString(generation));
            if (nodeId != null) {
                term.highCardinalityKeyValue(NODE, nodeId);
            }
            term.start();
            Observation previous = terms.put(lease, term);
            if (previous != null) {
                previous.lowCardinalityKeyValue(REASON, "superseded").stop();
            }
        }

        @Override
        public void leadershipRevoked(String lease, RevocationReason reason) {
            Observation term = terms.remove(lease);
            if (term == null) {
                return;
            }
            term.lowCardinalityKeyValue(REASON, reason.name().toLowerCase(Locale.ROOT));
            if (reason == RevocationReason.LOST
                    || reason == RevocationReason.DEADLINE
                    || reason == RevocationReason.TASK_FAILED) {
                term.event(Observation.Event.of(
                        LEADERSHIP_TERM + "." + reason.name().toLowerCase(Locale.ROOT)));
            }
            term.stop();
        }
    }
}
