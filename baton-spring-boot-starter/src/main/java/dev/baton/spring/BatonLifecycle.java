package dev.baton.spring;

import dev.baton.Baton;
import dev.baton.micrometer.BatonMicrometer;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.context.SmartLifecycle;

/**
 * Starts Baton (migrating the schema unless turned off) once the context is refreshed, before the web
 * server; on shutdown, after the web server and the task scheduler stopped, drains it: no new claims,
 * running jobs get the drain timeout, leases are released for a fast hand-off.
 */
public class BatonLifecycle implements SmartLifecycle, DisposableBean {
    /** Before the web server starts, after it stops (Boot's web server lifecycle runs at DEFAULT_PHASE - 2048). */
    public static final int PHASE = SmartLifecycle.DEFAULT_PHASE - 4096;

    private static final Logger log = LoggerFactory.getLogger(BatonLifecycle.class);

    private final Baton baton;
    private final BatonMicrometer micrometer;
    private final Duration queueDepthRefresh;
    private volatile boolean running;
    private AutoCloseable queueGauges;

    BatonLifecycle(Baton baton, BatonMicrometer micrometer, Duration queueDepthRefresh) {
        this.baton = baton;
        this.micrometer = micrometer;
        this.queueDepthRefresh = queueDepthRefresh;
    }

    @Override
    public synchronized void start() {
        if (running) {
            return;
        }
        baton.start();
        if (micrometer != null) {
            queueGauges = micrometer.bindQueueDepth(baton.jobs(), queueDepthRefresh);
        }
        running = true;
    }

    @Override
    public synchronized void stop() {
        if (!running) {
            return;
        }
        running = false;
        log.info("draining Baton node '{}'", baton.nodeId());
        baton.drain();
        baton.close();
        if (queueGauges != null) {
            try {
                queueGauges.close();
            } catch (Exception e) {
                log.debug("closing queue gauges: {}", e.getMessage());
            }
        }
    }

    /** Also when the context fails to refresh after Baton started (lifecycle stop is not called then). */
    @Override
    public void destroy() {
        stop();
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    @Override
    public int getPhase() {
        return PHASE;
    }
}
