package dev.baton.internal.service;

import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The shape of a background service: one named daemon thread that runs {@link #runOnce()} in a loop,
 * waits between passes for as long as the pass asked (or until {@link #wake()} or {@link #stop()}),
 * and logs and continues when a pass fails, so a service never dies of one bad pass. {@code start} and
 * {@code stop} are idempotent; a stopped service is not started again. Time comes from the injected
 * ticker (nanoseconds, monotonic), so tests can drive it.
 *
 * <p>Tests call {@code runOnce()} directly, against a real database, without starting the thread.
 */
public abstract class Service {
    private static final Logger log = LoggerFactory.getLogger(Service.class);
    /** How long a service waits after a failed pass before it tries again. */
    public static final long RETRY_AFTER_FAILURE_NANOS = TimeUnit.SECONDS.toNanos(1);

    private final String name;
    protected final LongSupplier ticker;
    private final Object signal = new Object();
    /** Guarded by {@code signal}: a wake() arrived since the last wait began. */
    private boolean woken;

    private volatile boolean running;
    private Thread thread;
    private boolean started;

    public Service(String name, LongSupplier ticker) {
        this.name = name;
        this.ticker = ticker;
    }

    /** The thread's name, also used in log lines. */
    public final String name() {
        return name;
    }

    /**
     * One pass of the service's work. Returns how long to wait before the next pass, in nanoseconds
     * (zero or less: at once); the wait ends early on {@link #wake()} or {@link #stop()}. Failures are
     * logged by the loop, which then waits {@link #RETRY_AFTER_FAILURE_NANOS}.
     */
    protected abstract long runOnce() throws Exception;

    /** Runs on the service's thread before the first pass. */
    protected void beforeFirstPass() {}

    /** Runs on the caller of {@link #stop()} once the loop is told to end, before waiting for it (unblocks a pass). */
    protected void onStopRequested() {}

    /** Runs on the caller of {@link #stop()} after the loop has ended (a final flush, closing resources). */
    protected void afterLastPass() {}

    /** Starts the loop thread. A second call, or a call after {@link #stop()}, does nothing. */
    public final synchronized void start() {
        if (started) {
            return;
        }
        started = true;
        running = true;
        Thread t = new Thread(this::loop, name);
        t.setDaemon(true);
        thread = t;
        t.start();
    }

    /**
     * Ends the loop: the pass under way finishes, the next does not start. Waits for the thread (at
     * most 30 s: a pass stuck in a call it cannot leave is abandoned to its daemon thread), then runs
     * {@link #afterLastPass()}. A second call does nothing.
     */
    public final void stop() {
        Thread t;
        synchronized (this) {
            if (!running) {
                return;
            }
            running = false;
            t = thread;
            thread = null;
        }
        onStopRequested();
        wake();
        if (t != Thread.currentThread()) {
            join(t);
        }
        afterLastPass();
    }

    /** True from {@link #start()} until {@link #stop()}. */
    public final boolean isRunning() {
        return running;
    }

    /** Ends the current wait early (or the next one, if none is under way): the next pass starts at once. */
    public final void wake() {
        synchronized (signal) {
            woken = true;
            signal.notifyAll();
        }
    }

    /** {@code nanos} varied by ±20%, so services of many nodes do not run in step. */
    public static long jitter(long nanos) {
        return (long) (nanos * (0.8 + 0.4 * ThreadLocalRandom.current().nextDouble()));
    }

    private void loop() {
        try {
            beforeFirstPass();
            while (running) {
                long wait;
                try {
                    wait = runOnce();
                } catch (InterruptedException e) {
                    if (!running) {
                        return;
                    }
                    wait = RETRY_AFTER_FAILURE_NANOS;
                } catch (Exception e) {
                    log.warn("{}: a pass failed; retrying", name, e);
                    wait = RETRY_AFTER_FAILURE_NANOS;
                }
                awaitNextPass(wait);
            }
        } catch (RuntimeException | Error e) {
            log.error("{} died", name, e);
        }
    }

    /**
     * Waits up to {@code nanos} before the next pass, ending early on {@link #wake()} or {@link #stop()}.
     * A service woken by something else (a notification subscription) overrides this and ends its wait from
     * {@link #onStopRequested()} too.
     */
    protected void awaitNextPass(long nanos) {
        synchronized (signal) {
            long deadline = ticker.getAsLong() + nanos;
            long left = nanos;
            while (running && !woken && left > 0) {
                try {
                    TimeUnit.NANOSECONDS.timedWait(signal, left);
                } catch (InterruptedException e) {
                    return;
                }
                left = deadline - ticker.getAsLong();
            }
            woken = false;
        }
    }

    private static void join(Thread t) {
        if (t == null) {
            return;
        }
        try {
            t.join(30_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
