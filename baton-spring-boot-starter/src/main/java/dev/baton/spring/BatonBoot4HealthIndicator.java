package dev.baton.spring;

import dev.baton.Baton;
import org.springframework.boot.health.contributor.AbstractHealthIndicator;
import org.springframework.boot.health.contributor.Health;

/**
 * Baton's health on Spring Boot 4, where the health types live in {@code org.springframework.boot.health}
 * (module {@code spring-boot-health}); the same check and details as {@link BatonHealthIndicator} on
 * Boot 3. Registered as {@code batonHealthIndicator}, so it reports as the {@code baton} component.
 */
public class BatonBoot4HealthIndicator extends AbstractHealthIndicator {
    private final Baton baton;
    private final RenewalTracker renewals;

    public BatonBoot4HealthIndicator(Baton baton, RenewalTracker renewals) {
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
