package dev.baton.examples.audit.reports;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** Registers the report limiter as a bean (a singleton, though its class carries no annotation). */
@Configuration
public class ReportsConfiguration {
    @Bean
    public ReportConcurrencyLimiter reportConcurrencyLimiter(
            @Value("${example.reports.per-account:2}") int perAccount) {
        return new ReportConcurrencyLimiter(perAccount);
    }
}
