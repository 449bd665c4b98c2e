package dev.baton.spring;

import dev.baton.BatonMetrics;
import dev.baton.RevocationReason;
import java.time.Duration;
import java.util.List;

/** Forwards Baton's events to several {@link BatonMetrics}. */
final class CompositeMetrics implements BatonMetrics {
    private final List<BatonMetrics> targets;

    CompositeMetrics(List<BatonMetrics> targets) {
        this.targets = List.copyOf(targets);
    }

    @Override
    public void leadershipAcquired(String lease, long generation) {
        targets.forEach(t -> t.leadershipAcquired(lease, generation));
    }

    @Override
    public void leadershipRevoked(String lease, RevocationReason reason) {
        targets.forEach(t -> t.leadershipRevoked(lease, reason));
    }

    @Override
    public void leaseRenewed(String lease, Duration latency, boolean confirmed) {
        targets.forEach(t -> t.leaseRenewed(lease, latency, confirmed));
    }

    @Override
    public void jobsEnqueued(String queue, String kind, int count) {
        targets.forEach(t -> t.jobsEnqueued(queue, kind, count));
    }

    @Override
    public void jobClaimed(String queue, String kind, Duration waited) {
        targets.forEach(t -> t.jobClaimed(queue, kind, waited));
    }

    @Override
    public void jobFinished(String queue, String kind, JobOutcome outcome, Duration ran) {
        targets.forEach(t -> t.jobFinished(queue, kind, outcome, ran));
    }

    @Override
    public void jobRescued(String queue, String kind, boolean requeued) {
        targets.forEach(t -> t.jobRescued(queue, kind, requeued));
    }

    @Override
    public void scheduleFired(String schedule, Duration delay) {
        targets.forEach(t -> t.scheduleFired(schedule, delay));
    }

    @Override
    public void scheduleFailed(String schedule) {
        targets.forEach(t -> t.scheduleFailed(schedule));
    }

    @Override
    public void jobKindUnhandled(String queue, String kind) {
        targets.forEach(t -> t.jobKindUnhandled(queue, kind));
    }

    @Override
    public void fallbackUsed(String primitive) {
        targets.forEach(t -> t.fallbackUsed(primitive));
    }
}
