package dev.baton.spring;

import dev.baton.Baton;
import org.springframework.boot.actuate.health.AbstractHealthIndicator;
import org.springframework.boot.actuate.health.Health;

/**
 * Baton's health on Spring Boot 3 ({@link BatonBoot4HealthIndicator} on Boot 4): DOWN when the database
 * cannot be reached, this node is not registered as active (or its heartbeat is overdue on the database
 * clock), or the last renewal of a lease this node leads was not confirmed. Detail {@code unhandledKinds}:
 * kinds of available jobs on this node's queues that no live node handles, with their queues (they wait
 * without using an attempt, and fail after {@code baton.worker.unhandled-kind-timeout}); a detail only,
 * the node stays UP.
 */
public class BatonHealthIndicator extends AbstractHealthIndicator {
    private final Baton baton;
    private final RenewalTracker renewals;

    public BatonHealthIndicator(Baton baton, RenewalTracker renewals) {
        super(BatonHealthCheck.FAILURE_MESSAGE);
        this.baton = baton;
        this.renewals = renewals;
    }

    @Override
    protected void doHealthCheck(Health.Builder builder) {
        BatonHealthCheck.Result r = BatonHealthCheck.check(baton, renewals);
        builder.withDetails(r.details());
        if (r.up()) {
            builder.up();
        } else {
            builder.down();
        }
    }
}
