package dev.baton.spring;

import dev.baton.Baton;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.actuate.autoconfigure.health.ConditionalOnEnabledHealthIndicator;
import org.springframework.boot.actuate.health.HealthIndicator;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;

/** Baton's health indicator ({@code baton}) and the {@code baton} actuator endpoint, when Actuator is present. */
@AutoConfiguration(after = BatonAutoConfiguration.class)
@ConditionalOnClass(
        value = HealthIndicator.class,
        name = "org.springframework.boot.actuate.autoconfigure.health.ConditionalOnEnabledHealthIndicator")
@ConditionalOnBean(Baton.class)
public class BatonActuatorAutoConfiguration {
    @Bean
    @ConditionalOnMissingBean(name = "batonHealthIndicator")
    @ConditionalOnEnabledHealthIndicator("baton")
    BatonHealthIndicator batonHealthIndicator(Baton baton, RenewalTracker renewals) {
        return new BatonHealthIndicator(baton, renewals);
    }

    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnAvailableEndpoint(endpoint = BatonEndpoint.class)
    BatonEndpoint batonEndpoint(Baton baton) {
        return new BatonEndpoint(baton);
    }
}
