package dev.baton.examples.audit;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.scheduling.annotation.EnableScheduling;

/**
 * A service written the single-instance way, modelled on the field reports: it is correct with one
 * instance and wrong with two. {@code AuditExampleTest} audits its compiled classes; docs/audit.md
 * shows the report and the fix for each finding.
 */
@SpringBootApplication
@EnableScheduling
public class AuditExampleApplication {
    public static void main(String[] args) {
        SpringApplication.run(AuditExampleApplication.class, args);
    }
}
