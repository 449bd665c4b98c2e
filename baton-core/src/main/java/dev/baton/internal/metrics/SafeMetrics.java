package dev.baton.internal.metrics;

import dev.baton.BatonMetrics;
import dev.baton.RevocationReason;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Forwards to a user's {@link BatonMetrics}, logging (at most once) and ignoring what it throws. */
public final class SafeMetrics implements BatonMetrics {
    private static final Logger log = LoggerFactory.getLogger(SafeMetrics.class);
    private final BatonMetrics delegate;
    private volatile boolean warned;

    public SafeMetrics(BatonMetrics delegate) {
        this.delegate = delegate;
    }

    private void failed(RuntimeException e) {
        if (!warned) {
            warned = true;
            log.warn(
                    "metrics implementation {} threw; ignored (logged once)",
                    delegate.getClass().getName(),
                    e);
        }
    }

    @Override
    public void leadershipAcquired(String lease, long generation) {
        try {
            delegate.leadershipAcquired(lease, generation);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    @Override
    public void leadershipRevoked(String lease, RevocationReason reason) {
        try {
            delegate.leadershipRevoked(lease, reason);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    @Override
    public void leaseRenewed(String lease, Duration latency, boolean confirmed) {
        try {
            delegate.leaseRenewed(lease, latency, confirmed);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    @Override
    public void jobsEnqueued(String queue, String kind, int count) {
        try {
            delegate.jobsEnqueued(queue, kind, count);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    @Override
    public void jobClaimed(String queue, String kind, Duration waited) {
        try {
            delegate.jobClaimed(queue, kind, waited);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    @Override
    public void jobFinished(String queue, String kind, JobOutcome outcome, Duration ran) {
        try {
            delegate.jobFinished(queue, kind, outcome, ran);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    @Override
    public void jobRescued(String queue, String kind, boolean requeued) {
        try {
            delegate.jobRescued(queue, kind, requeued);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    @Override
    public void scheduleFired(String schedule, Duration delay) {
        try {
            delegate.scheduleFired(schedule, delay);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    @Override
    public void jobKindUnhandled(String queue, String kind) {
        try {
            delegate.jobKindUnhandled(queue, kind);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    @Override
    public void scheduleFailed(String schedule) {
        try {
            delegate.scheduleFailed(schedule);
        } catch (RuntimeException e) {
            failed(e);
        }
    }

    @Override
    public void fallbackUsed(String primitive) {
        try {
            delegate.fallbackUsed(primitive);
        } catch (RuntimeException e) {
            failed(e);
        }
    }
}
