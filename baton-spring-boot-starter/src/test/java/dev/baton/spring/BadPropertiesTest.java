package dev.baton.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.baton.Baton;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.ImportAutoConfiguration;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** Bad values fail the start with a message naming the property and the rule; nothing is created in the database. */
@ExtendWith(OutputCaptureExtension.class)
class BadPropertiesTest extends StarterTestSupport {

    private void assertRefused(String message, String... properties) {
        runner().withPropertyValues(properties).run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).hasRootCauseInstanceOf(IllegalArgumentException.class);
            Throwable t = context.getStartupFailure();
            while (t != null && !(t instanceof InvalidBatonPropertyException)) {
                t = t.getCause();
            }
            assertThat(t)
                    .as("an InvalidBatonPropertyException in the cause chain")
                    .isNotNull();
            assertThat(t.getMessage()).isEqualTo(message);
        });
        // Nothing was migrated: the failure came before the node started.
        assertThatThrownBy(() -> dev.baton.Baton.builder(pool)
                        .schema(schema)
                        .migrateOnStart(false)
                        .build()
                        .start())
                .isInstanceOf(dev.baton.SchemaVersionException.class);
    }

    @Test
    void workerTimingsThatBreakTheSelfStopRuleNameBothProperties() {
        assertRefused(
                "Invalid value '1s and 500ms' for baton.worker.job-lease and baton.worker.heartbeat-interval: "
                        + "baton.worker.job-lease/2 (500ms) must exceed 2 × baton.worker.heartbeat-interval (1s); with "
                        + "baton.worker.job-lease 1s use a baton.worker.heartbeat-interval below 250ms, or a longer "
                        + "baton.worker.job-lease",
                "baton.worker.queues.default=2",
                "baton.worker.job-lease=1s",
                "baton.worker.heartbeat-interval=500ms");
    }

    @Test
    void queueConcurrencyOutOfRange() {
        assertRefused(
                "Invalid value '0' for baton.worker.queues.mail: the concurrency of a queue must be 1 to 1000",
                "baton.worker.queues.mail=0");
    }

    @Test
    void badSchemaName() {
        runner().withPropertyValues("baton.schema=Orders-DB").run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).rootCause().isInstanceOf(IllegalArgumentException.class);
            assertThat(context.getStartupFailure())
                    .hasStackTraceContaining("Invalid value 'Orders-DB' for baton.schema: ");
        });
    }

    @Test
    void maintenanceLeaseTooShortForItsRenewals() {
        assertRefused(
                "Invalid value '1s and 500ms' for baton.maintenance.lease-ttl and baton.maintenance.renew-interval: "
                        + "baton.maintenance.lease-ttl/2 (500ms) must exceed 2 × baton.maintenance.renew-interval (1s); "
                        + "with baton.maintenance.lease-ttl 1s use a baton.maintenance.renew-interval below 250ms, "
                        + "or a longer baton.maintenance.lease-ttl",
                "baton.maintenance.lease-ttl=1s",
                "baton.maintenance.renew-interval=500ms");
    }

    @Test
    void queueDepthRefreshTooShort() {
        assertRefused(
                "Invalid value '100ms' for baton.metrics.queue-depth-refresh: must be at least 1s (each refresh "
                        + "is one query over the job table)",
                "baton.metrics.queue-depth-refresh=100ms");
    }

    @Configuration(proxyBeanMethods = false)
    @ImportAutoConfiguration(BatonAutoConfiguration.class)
    static class App {
        @Bean
        javax.sql.DataSource dataSource() {
            return PG.newPool("bad-props-app", 2);
        }
    }

    /** The start-up report an operator sees: Spring Boot's failure analysis, naming the property and the values allowed. */
    @Test
    void startupReportNamesThePropertyAndTheAllowedValues(CapturedOutput output) {
        SpringApplication app = new SpringApplication(App.class);
        app.setWebApplicationType(WebApplicationType.NONE);
        assertThatThrownBy(() -> app.run("--baton.schema=" + schema, "--baton.notifications=SOMETIMES"))
                .isNotNull();
        assertThat(output.getOut() + output.getErr())
                .contains("baton.notifications")
                .contains("SOMETIMES")
                .contains("AUTO")
                .contains("LISTEN")
                .contains("POLL");

        SpringApplication app2 = new SpringApplication(App.class);
        app2.setWebApplicationType(WebApplicationType.NONE);
        assertThatThrownBy(() -> app2.run("--baton.schema=" + schema, "--baton.worker.queues.mail=5000"))
                .isNotNull();
        assertThat(output.getOut() + output.getErr())
                .contains(
                        "Baton refused the value '5000' of baton.worker.queues.mail: the concurrency of a queue must be 1 to 1000")
                .contains("Change baton.worker.queues.mail");

        // The README's example: the description and action of the report for two related properties.
        SpringApplication app3 = new SpringApplication(App.class);
        app3.setWebApplicationType(WebApplicationType.NONE);
        assertThatThrownBy(() -> app3.run(
                        "--baton.schema=" + schema,
                        "--baton.worker.queues.default=2",
                        "--baton.worker.job-lease=1s",
                        "--baton.worker.heartbeat-interval=500ms"))
                .isNotNull();
        assertThat(output.getOut() + output.getErr())
                .contains("Baton refused the value '1s and 500ms' of baton.worker.job-lease and "
                        + "baton.worker.heartbeat-interval: baton.worker.job-lease/2 (500ms) must exceed 2 × "
                        + "baton.worker.heartbeat-interval (1s); ")
                .contains("Change baton.worker.job-lease and baton.worker.heartbeat-interval (see ");
        assertThat(Baton.schemaVersion()).isPositive();
    }
}
