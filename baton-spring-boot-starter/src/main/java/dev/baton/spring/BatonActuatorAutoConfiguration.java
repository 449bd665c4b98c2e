package dev.baton.spring;

import dev.baton.Baton;
import org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Baton's health indicator ({@code baton}) and the {@code baton} actuator endpoint, when Actuator is
 * present, on Spring Boot 3 and 4. The endpoint annotations are the same in both; the health types moved
 * in Boot 4 (to {@code org.springframework.boot.health}), so each version has its own indicator, chosen
 * by the classes on the class path, both reporting {@link BatonHealthCheck}.
 */
@AutoConfiguration(after = BatonAutoConfiguration.class)
@ConditionalOnClass(
        name = {
            "org.springframework.boot.actuate.endpoint.annotation.Endpoint",
            "org.springframework.boot.actuate.autoconfigure.endpoint.condition.ConditionalOnAvailableEndpoint"
        })
@ConditionalOnBean(Baton.class)
public class BatonActuatorAutoConfiguration {
    @Bean
    @ConditionalOnMissingBean
    @ConditionalOnAvailableEndpoint(endpoint = BatonEndpoint.class)
    BatonEndpoint batonEndpoint(Baton baton) {
        return new BatonEndpoint(baton);
    }

    /** Spring Boot 3: {@code org.springframework.boot.actuate.health}. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(
            name = {
                "org.springframework.boot.actuate.health.AbstractHealthIndicator",
                "org.springframework.boot.actuate.autoconfigure.health.ConditionalOnEnabledHealthIndicator"
            })
    static class Boot3Health {
        @Bean
        @ConditionalOnMissingBean(name = "batonHealthIndicator")
        @org.springframework.boot.actuate.autoconfigure.health.ConditionalOnEnabledHealthIndicator("baton")
        BatonHealthIndicator batonHealthIndicator(Baton baton, RenewalTracker renewals) {
            return new BatonHealthIndicator(baton, renewals);
        }
    }

    /** Spring Boot 4: {@code org.springframework.boot.health} (module {@code spring-boot-health}). */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(
            name = {
                "org.springframework.boot.health.contributor.AbstractHealthIndicator",
                "org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator"
            })
    static class Boot4Health {
        @Bean
        @ConditionalOnMissingBean(name = "batonHealthIndicator")
        @org.springframework.boot.health.autoconfigure.contributor.ConditionalOnEnabledHealthIndicator("baton")
        BatonBoot4HealthIndicator batonHealthIndicator(Baton baton, RenewalTracker renewals) {
            return new BatonBoot4HealthIndicator(baton, renewals);
        }
    }
}
