package dev.baton.spring;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.springframework.boot.diagnostics.FailureAnalysis;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.scheduling.annotation.Scheduled;

/**
 * Every annotation attribute and {@code baton.*} value is checked at start-up: a bad one fails the start
 * through Spring Boot's failure analysis, whose description names the attribute (with bean and method) or
 * the property, and the value as written.
 */
class StartupValidationTest extends StarterTestSupport {
    /** The failure analysis an operator sees for the context's start-up failure. */
    private static FailureAnalysis analysis(ApplicationContextRunner runner) {
        FailureAnalysis[] out = new FailureAnalysis[1];
        runner.run(context -> {
            assertThat(context).hasFailed();
            out[0] = new InvalidBatonPropertyFailureAnalyzer().analyze(context.getStartupFailure());
        });
        assertThat(out[0])
                .as("an InvalidBatonPropertyException in the cause chain")
                .isNotNull();
        return out[0];
    }

    static class Runner {
        @Scheduled(fixedRate = 60_000)
        @BatonSingleRunner("report")
        void report() {}
    }

    @Configuration(proxyBeanMethods = false)
    static class RunnerConfig {
        @Bean
        Runner runnerBean() {
            return new Runner();
        }
    }

    /**
     * {@code baton.single-runner.lease-ttl=5ms} fails the start naming the property and "5ms" (the field
     * report: before, the context started and every call failed blaming the annotation's leaseTtl).
     *
     * <p>Protection removed and seen failing: the range check of {@code SingleRunnerInterceptor.checkTtl}
     * (made to return at once): the context started.
     */
    @Test
    void singleRunnerLeaseTtlTooShortFailsAtStartUp() {
        FailureAnalysis a = analysis(runner().withUserConfiguration(RunnerConfig.class)
                .withPropertyValues("baton.single-runner.lease-ttl=5ms"));
        assertThat(a.getDescription())
                .contains("'5ms'")
                .contains("baton.single-runner.lease-ttl")
                .contains("must be between");
    }

    static class BadRunnerTtl {
        @BatonSingleRunner(value = "r", leaseTtl = "2ms")
        void run() {}
    }

    /**
     * {@code @BatonSingleRunner(leaseTtl = "2ms")} fails the start naming the annotation, the attribute,
     * the method and "2ms".
     *
     * <p>Protection removed and seen failing: the range check of {@code SingleRunnerInterceptor.checkTtl}
     * (made to return at once): the context started.
     */
    @Test
    void singleRunnerAnnotationTtlNamesTheAttribute() {
        FailureAnalysis a = analysis(runner().withBean("badRunner", BadRunnerTtl.class, BadRunnerTtl::new));
        assertThat(a.getDescription())
                .contains("'2ms'")
                .contains("@BatonSingleRunner(\"r\")")
                .contains("leaseTtl")
                .contains("run()");
    }

    /**
     * The job-lease / heartbeat rule shows the values as written ("1s"), not "PT2S".
     *
     * <p>Protection removed and seen failing: {@code humanDurations} in {@code BatonAutoConfiguration.Props.build}
     * (the core's message used as it is): the rule read "job-lease/2 (PT0.5S) must exceed 2 × ... (PT1S)".
     */
    @Test
    void workerTimingValuesShownAsWritten() {
        FailureAnalysis a = analysis(runner().withPropertyValues(
                        "baton.worker.queues.default=2",
                        "baton.worker.job-lease=1s",
                        "baton.worker.heartbeat-interval=500ms"));
        assertThat(a.getDescription())
                .contains("'1s and 500ms'")
                .contains("baton.worker.job-lease/2 (500ms) must exceed 2 × baton.worker.heartbeat-interval (1s)")
                .doesNotContain("PT");
    }

    static class NegativeAttempts {
        @BatonJob(value = "k", maxAttempts = -1)
        void k(String s) {}
    }

    static class BadTimeout {
        @BatonJob(value = "k", timeout = "ten seconds")
        void k(String s) {}
    }

    static class BadJitter {
        @BatonJob(value = "k", jitter = "150%")
        void k(String s) {}
    }

    static class BadQueue {
        @BatonJob(value = "k", queue = "Mail Queue")
        void k(String s) {}
    }

    static class BadCron {
        @BatonSchedule(name = "s", cron = "0 25 * * *")
        void s() {}
    }

    static class UnknownZone {
        @BatonSchedule(name = "s", cron = "0 3 * * *", zone = "Mars/Olympus")
        void s() {}
    }

    static class UnknownMisfire {
        @BatonSchedule(name = "s", every = "1m", misfire = "sometimes")
        void s() {}
    }

    static class CatchUpWithoutLimit {
        @BatonSchedule(name = "s", every = "1m", misfire = "catch-up")
        void s() {}
    }

    static class LimitWithSkip {
        @BatonSchedule(name = "s", every = "1m", misfire = "skip", catchUp = 3)
        void s() {}
    }

    static class LimitWithRunOnce {
        @BatonSchedule(name = "s", cron = "0 3 * * *", misfire = "run-once", catchUp = 3)
        void s() {}
    }

    static class NegativeLimit {
        @BatonSchedule(name = "s", every = "1m", catchUp = -2)
        void s() {}
    }

    static class LimitTooLarge {
        @BatonSchedule(name = "s", every = "1m", misfire = "catch-up", catchUp = 5000)
        void s() {}
    }

    static class BadScheduleAttempts {
        @BatonSchedule(name = "s", every = "1m", maxAttempts = 2000)
        void s() {}
    }

    private <T> String refused(Class<T> type) {
        return analysis(runner().withBean("annotated", type)).getDescription();
    }

    /**
     * Bad {@code @BatonJob} values fail the start naming the attribute, bean, method and the value as written.
     *
     * <p>Protection removed and seen failing: the {@code check(where + " maxAttempts", ...)} wrapper in
     * {@code AnnotatedHandlers.defaults} (the core's IllegalArgumentException let through): no
     * InvalidBatonPropertyException, so no failure analysis naming the attribute.
     */
    @Test
    void badJobAttributesNameAttributeBeanMethodAndValue() {
        assertThat(refused(NegativeAttempts.class))
                .contains("'-1'")
                .contains("@BatonJob(\"k\") on bean 'annotated'")
                .contains("maxAttempts")
                .contains("between 1 and 1000");
        assertThat(refused(BadTimeout.class))
                .contains("'ten seconds'")
                .contains("timeout")
                .contains("not a duration");
        assertThat(refused(BadJitter.class))
                .contains("'150%'")
                .contains("jitter")
                .contains("below 1");
        assertThat(refused(BadQueue.class)).contains("'Mail Queue'").contains("queue");
    }

    /**
     * Bad {@code @BatonSchedule} values and combinations fail the start naming the attribute and the value.
     *
     * <p>Protection removed and seen failing: the catchUp-without-catch-up check in
     * {@code AnnotatedHandlers.misfire}: {@code misfire = "skip", catchUp = 3} started.
     */
    @Test
    void badScheduleAttributesAndCombinationsNameAttributeAndValue() {
        assertThat(refused(BadCron.class))
                .contains("'0 25 * * *'")
                .contains("cron")
                .contains("bean 'annotated'");
        assertThat(refused(UnknownZone.class)).contains("'Mars/Olympus'").contains("zone");
        assertThat(refused(UnknownMisfire.class))
                .contains("'sometimes'")
                .contains("misfire")
                .contains("skip, run-once or catch-up");
        assertThat(refused(CatchUpWithoutLimit.class)).contains("misfire").contains("catch-up needs catchUp");
        assertThat(refused(LimitWithSkip.class))
                .contains("'3'")
                .contains("catchUp")
                .contains("only with misfire");
        assertThat(refused(LimitWithRunOnce.class))
                .contains("'3'")
                .contains("catchUp")
                .contains("only with misfire");
        assertThat(refused(NegativeLimit.class))
                .contains("'-2'")
                .contains("catchUp")
                .contains("1 to 1000");
        assertThat(refused(LimitTooLarge.class)).contains("'5000'").contains("catchUp");
        assertThat(refused(BadScheduleAttempts.class)).contains("'2000'").contains("maxAttempts");
    }

    /**
     * {@code baton.worker.unhandled-kind-timeout=0s} fails the start naming the property and "0s".
     *
     * <p>Protection removed and seen failing: {@code "unhandledKindTimeout"} left out of the fields that
     * {@code BatonAutoConfiguration.worker} maps to properties: the report said "Baton refused
     * baton.worker.*: unhandledKindTimeout must be positive, but was PT0S".
     */
    @Test
    void badUnhandledKindTimeoutNamesTheProperty() {
        FailureAnalysis a = analysis(
                runner().withPropertyValues("baton.worker.queues.default=1", "baton.worker.unhandled-kind-timeout=0s"));
        assertThat(a.getDescription())
                .contains("baton.worker.unhandled-kind-timeout")
                .contains("'0s'");
    }
}
