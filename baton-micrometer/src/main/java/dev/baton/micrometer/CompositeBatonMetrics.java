package dev.baton.micrometer;

import dev.baton.BatonMetrics;
import dev.baton.RevocationReason;
import java.time.Duration;
import java.util.List;

/**
 * Several {@link BatonMetrics} as one, for {@link dev.baton.Baton.Builder#metrics}: each event goes to
 * each, in order; what one throws does not keep the event from the others.
 *
 * <pre>{@code
 * builder.metrics(CompositeBatonMetrics.of(new BatonMicrometer(meters), tracing.leadershipEvents()));
 * }</pre>
 */
public final class CompositeBatonMetrics implements BatonMetrics {
    private final BatonMetrics[] targets;

    private CompositeBatonMetrics(List<BatonMetrics> targets) {
        this.targets = targets.stream().map(BatonMetrics::safe).toArray(BatonMetrics[]::new);
    }

    /** {@code metrics} as one; a single one as itself. */
    public static BatonMetrics of(BatonMetrics... metrics) {
        return of(List.of(metrics));
    }

    /** {@code metrics} as one; a single one as itself, none as {@link BatonMetrics#NONE}. */
    public static BatonMetrics of(List<BatonMetrics> metrics) {
        if (metrics.isEmpty()) {
            return BatonMetrics.NONE;
        }
        return metrics.size() == 1 ? metrics.get(0) : new CompositeBatonMetrics(metrics);
    }

    @Override
    public void leadershipAcquired(String lease, long generation) {
        for (BatonMetrics t : targets) {
            t.leadershipAcquired(lease, generation);
        }
    }

    @Override
    public void leadershipRevoked(String lease, RevocationReason reason) {
        for (BatonMetrics t : targets) {
            t.leadershipRevoked(lease, reason);
        }
    }

    @Override
    public void leaseRenewed(String lease, Duration latency, boolean confirmed) {
        for (BatonMetrics t : targets) {
            t.leaseRenewed(lease, latency, confirmed);
        }
    }

    @Override
    public void jobsEnqueued(String queue, String kind, int count) {
        for (BatonMetrics t : targets) {
            t.jobsEnqueued(queue, kind, count);
        }
    }

    @Override
    public void jobClaimed(String queue, String kind, Duration waited) {
        for (BatonMetrics t : targets) {
            t.jobClaimed(queue, kind, waited);
        }
    }

    @Override
    public void jobFinished(String queue, String kind, JobOutcome outcome, Duration ran) {
        for (BatonMetrics t : targets) {
            t.jobFinished(queue, kind, outcome, ran);
        }
    }

    @Override
    public void jobRescued(String queue, String kind, boolean requeued) {
        for (BatonMetrics t : targets) {
            t.jobRescued(queue, kind, requeued);
        }
    }

    @Override
    public void jobKindUnhandled(String queue, String kind) {
        for (BatonMetrics t : targets) {
            t.jobKindUnhandled(queue, kind);
        }
    }

    @Override
    public void scheduleFired(String schedule, Duration delay) {
        for (BatonMetrics t : targets) {
            t.scheduleFired(schedule, delay);
        }
    }

    @Override
    public void scheduleFailed(String schedule) {
        for (BatonMetrics t : targets) {
            t.scheduleFailed(schedule);
        }
    }

    @Override
    public void fallbackUsed(String primitive) {
        for (BatonMetrics t : targets) {
            t.fallbackUsed(primitive);
        }
    }
}
