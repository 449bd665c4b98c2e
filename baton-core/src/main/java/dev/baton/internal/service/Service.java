package dev.baton.internal.service;

import dev.baton.internal.db.Db;
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

    /**
     * How long {@link #stop()} waits for the pass under way before it aborts the pass's database call: every
     * statement of a service is a bounded batch that takes milliseconds, so one still unanswered after this
     * waits for a connection that no longer answers (a black hole).
     */
    public static final long STOP_GRACE_MILLIS = 5_000;

    /** How long {@link #stop()} waits for the thread once its call was aborted, before abandoning it. */
    private static final long ABANDON_AFTER_MILLIS = 30_000;

    private final String name;
    protected final LongSupplier ticker;
    private final Object signal = new Object();
    /** Guarded by {@code signal}: a wake() arrived since the last wait began. */
    private boolean woken;

    private volatile boolean running;
    /** Set by {@link #requestStop()}: also seen by a pass called directly, on a service never started (tests). */
    private volatile boolean stopRequested;
    /** When the stop was requested (System.nanoTime): the stop's grace counts from then. */
    private volatile long stopRequestedAt;

    private Thread thread;
    private boolean started;
    /** The database calls of the service's thread and of {@link #afterLastPass()}. */
    private final Db.InFlight calls = new Db.InFlight();

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
     * Ends the loop: the pass under way finishes, the next does not start. Waits for the thread, then runs
     * {@link #afterLastPass()}. A pass still in a database call {@value #STOP_GRACE_MILLIS} ms after the stop
     * was requested ({@link #requestStop()}, or this call) has that call aborted (its connection closed), and
     * every later call of the service, {@code afterLastPass}'s included, fails at once; a thread that still
     * does not end (stuck outside the database) is abandoned to its daemon thread after 30 s more. A second
     * call does nothing.
     */
    public final void stop() {
        requestStop();
        Thread t;
        synchronized (this) {
            t = thread;
            thread = null;
        }
        if (t == null) {
            return; // never started, or another stop() has it
        }
        if (t != Thread.currentThread()) {
            join(t, stopRequestedAt + TimeUnit.MILLISECONDS.toNanos(STOP_GRACE_MILLIS));
            if (t.isAlive()) {
                String call = calls.abort();
                log.warn(
                        "{}: its pass still ran {} ms after the stop was requested{}",
                        name,
                        STOP_GRACE_MILLIS,
                        call != null ? "; aborted its database call (" + call + ")" : "");
                join(t, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ABANDON_AFTER_MILLIS));
            }
        }
        Db.InFlight caller = Db.InFlight.track(calls);
        try {
            afterLastPass();
        } finally {
            Db.InFlight.track(caller);
        }
    }

    /**
     * The database calls of this service's thread ({@link Db#call}, {@link Db#transaction}) are tracked, so
     * that a stop can abort one that never answers; a pass that holds a connection of its own across
     * statements (a listening session) tracks it here, and a stop then aborts it the same way. A wait on the
     * pass that must stay bounded aborts the call in flight with {@link Db.InFlight#abortCurrent()}.
     */
    protected final Db.InFlight calls() {
        return calls;
    }

    /**
     * Tells the loop to end without waiting for it: the pass under way finishes, the next does not start.
     * {@link #stop()} then waits; its grace counts from here, so requesting the stop of several services
     * first lets them end together.
     */
    public final void requestStop() {
        synchronized (this) {
            if (!running) {
                return;
            }
            running = false;
            stopRequested = true;
            stopRequestedAt = System.nanoTime();
        }
        onStopRequested();
        wake();
    }

    /** True once a stop was requested: a wait inside a pass ends early then. */
    protected final boolean stopRequested() {
        return stopRequested;
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
        Db.InFlight.track(calls);
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

    /**
     * Waits for {@code t} to end until {@code deadline} (System.nanoTime). An interrupt does not cut the wait
     * short (the stop of a leader term's services comes with one) but is kept for the caller.
     */
    private static void join(Thread t, long deadline) {
        boolean interrupted = false;
        try {
            for (long left = deadline - System.nanoTime();
                    t.isAlive() && left > 0;
                    left = deadline - System.nanoTime()) {
                try {
                    TimeUnit.NANOSECONDS.timedJoin(t, left);
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
