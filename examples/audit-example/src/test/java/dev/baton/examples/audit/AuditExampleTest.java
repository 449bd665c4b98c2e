package dev.baton.examples.audit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.assertj.core.api.Assertions.tuple;

import dev.baton.audit.AuditReport;
import dev.baton.audit.BatonAudit;
import dev.baton.audit.Category;
import dev.baton.audit.Finding;
import dev.baton.audit.ReportFormat;
import dev.baton.audit.Severity;
import java.nio.file.Path;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Audits this example's compiled classes: every blocker the field reports named (a job poller and three
 * sweeps on @Scheduled, the step-up grant registry's replay set and logout epochs, the per-IP login
 * limiter, the per-account report limiter) is found, and none of the decoys is.
 */
class AuditExampleTest {
    static final String PKG = "dev.baton.examples.audit.";
    static AuditReport report;

    @BeforeAll
    static void audit() {
        report = BatonAudit.forClasses(Path.of("target/classes"))
                .sourceRoot("src/main/java")
                .run();
        System.out.print(ReportFormat.TABLE.render(report));
    }

    @Test
    void findsExactlyTheSingleInstanceAssumptions() {
        assertThat(report.findings())
                .extracting(
                        Finding::category,
                        f -> f.className().substring(PKG.length()),
                        Finding::member,
                        Finding::severity)
                .containsExactlyInAnyOrder(
                        tuple(Category.IN_PROCESS_SCHEDULING, "jobs.JobWorker", "processPendingJobs", Severity.HIGH),
                        tuple(Category.IN_PROCESS_SCHEDULING, "jobs.Sweeps", "lockDailyEntries", Severity.HIGH),
                        tuple(Category.IN_PROCESS_SCHEDULING, "jobs.Sweeps", "purgeRefreshTokens", Severity.HIGH),
                        tuple(Category.IN_PROCESS_SCHEDULING, "jobs.Sweeps", "purgeIdempotencyRecords", Severity.HIGH),
                        tuple(Category.SINGLE_USE_STATE, "auth.StepUpGrantRegistry", "redeemedGrants", Severity.HIGH),
                        tuple(Category.SINGLE_USE_STATE, "auth.StepUpGrantRegistry", "logoutEpochs", Severity.HIGH),
                        tuple(Category.LOCAL_LIMITER, "auth.LoginRateLimiter", "limitersByIp", Severity.HIGH),
                        tuple(
                                Category.LOCAL_LIMITER,
                                "reports.ReportConcurrencyLimiter",
                                "permitsByAccount",
                                Severity.HIGH));
    }

    @Test
    void eachFindingNamesTheRemedyThatFitsIt() {
        assertThat(finding("processPendingJobs").remedy())
                .contains("baton.jobs().enqueue")
                .contains("@BatonJob");
        assertThat(finding("purgeRefreshTokens").remedy())
                .contains("@BatonSingleRunner")
                .contains("@BatonSchedule");
        assertThat(finding("redeemedGrants").example())
                .contains("coordination().grants(\"step-up\"")
                .contains("redeem(");
        assertThat(finding("logoutEpochs").example())
                .contains("revocations(\"session\", Duration.ofSeconds(5))")
                .contains("revokeAll(")
                .contains("isCurrent(");
        assertThat(finding("limitersByIp").remedy()).contains("coordination().rateLimiter(");
        assertThat(finding("permitsByAccount").remedy()).contains("coordination().concurrencyCap(");
        assertThat(finding("permitsByAccount").evidence())
                .contains("@Bean ReportsConfiguration.reportConcurrencyLimiter()");
    }

    @Test
    void sourceLinesPointAtTheCode() {
        Finding epochs = finding("logoutEpochs");
        assertThat(epochs.sourceFile())
                .isEqualTo("src/main/java/dev/baton/examples/audit/auth/StepUpGrantRegistry.java");
        assertThat(epochs.lineSource()).isEqualTo("first write in <init>");
        assertThat(epochs.line()).isPositive();
        assertThat(finding("processPendingJobs").lineSource()).isEqualTo("method");
    }

    @Test
    void theJUnitHelperFailsWithAReadableList() {
        Throwable t = catchThrowable(
                () -> BatonAudit.forClasses(Path.of("target/classes")).assertNoFindings(Severity.HIGH));
        assertThat(t).isInstanceOf(AssertionError.class);
        assertThat(t.getMessage())
                .startsWith("8 scale-out finding(s) at high or above would break with several instances:")
                .contains(
                        "dev.baton.examples.audit.auth.LoginRateLimiter.limitersByIp (dev/baton/examples/audit/auth/LoginRateLimiter.java:");
    }

    private static Finding finding(String member) {
        return report.findings().stream()
                .filter(f -> f.member().equals(member))
                .findFirst()
                .orElseThrow();
    }
}
