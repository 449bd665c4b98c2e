package dev.baton.examples.audit.metrics;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import java.util.function.Supplier;
import org.springframework.stereotype.Component;

/** Decoy: Micrometer meters are per-instance by design and summed by the metrics backend. */
@Component
public class AppMetrics {
    private final MeterRegistry registry;
    private final Counter loginFailures;
    private final Timer reportTimer;

    public AppMetrics(MeterRegistry registry) {
        this.registry = registry;
        this.loginFailures = Counter.builder("login.failures").register(registry);
        this.reportTimer = Timer.builder("report.duration").register(registry);
    }

    public void loginFailed() {
        loginFailures.increment();
    }

    public <T> T timeReport(Supplier<T> work) {
        return reportTimer.record(work);
    }

    public MeterRegistry registry() {
        return registry;
    }
}
