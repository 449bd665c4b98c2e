package dev.baton.testkit;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Named pause points that let a test stop code under test at an exact step, do something (kill a
 * connection, let a lease expire, start a rival), then let it continue.
 *
 * <p>The code under test calls {@link #reach(String)} at interesting places; production code
 * passes a no-op instead, and tests pass {@code pausePoints::reach} as a {@code
 * Consumer<String>}. When nothing is armed for a point, {@code reach} costs one map lookup.
 *
 * <pre>{@code
 * PausePoints points = new PausePoints();
 * PausePoints.Pause pause = points.arm("before-commit");
 * worker.start();                              // calls points.reach("before-commit")
 * pause.awaitReached(Duration.ofSeconds(5));   // worker is now parked there
 * proxy.resetAll();
 * pause.release();
 * }</pre>
 *
 * <p><b>Interrupts.</b> A parked thread that is interrupted stops waiting: it restores its
 * interrupt flag and returns from {@code reach} so that the code under test can observe the
 * interrupt as it normally would (for example, a worker being shut down).
 *
 * <p><b>Forgotten releases.</b> A parked thread gives up after {@link #maxPark()} (default 2
 * minutes, {@linkplain TestTimeouts scaled}) and throws an {@link AssertionError} naming the point,
 * so a test that forgot to release fails instead of hanging the build.
 *
 * <p>All methods are thread-safe. Call {@link #releaseAll()} in test teardown to free any thread
 * still parked.
 */
public final class PausePoints {

    private static final Logger log = LoggerFactory.getLogger(PausePoints.class);

    private static final Duration DEFAULT_MAX_PARK = Duration.ofMinutes(2);

    /** The current arming per point; absent means threads pass straight through. */
    private final ConcurrentHashMap<String, Pause> armed = new ConcurrentHashMap<>();

    /** Every pause not yet released, including one-shot pauses already claimed by a thread. */
    private final Set<Pause> live = ConcurrentHashMap.newKeySet();

    private final Duration maxPark;

    /** Creates pause points whose parked threads give up after 2 minutes (scaled). */
    public PausePoints() {
        this(DEFAULT_MAX_PARK);
    }

    /**
     * Creates pause points whose parked threads give up after {@code maxPark} (scaled).
     *
     * @param maxPark the longest a thread stays parked without being released; positive
     * @throws IllegalArgumentException if {@code maxPark} is zero or negative
     */
    public PausePoints(Duration maxPark) {
        Objects.requireNonNull(maxPark, "maxPark");
        if (maxPark.isZero() || maxPark.isNegative()) {
            throw new IllegalArgumentException("maxPark must be positive, was " + maxPark);
        }
        this.maxPark = maxPark;
    }

    /**
     * Returns the longest a thread stays parked before giving up, after scaling.
     *
     * @return the scaled maximum park time
     */
    public Duration maxPark() {
        return TestTimeouts.scaled(maxPark);
    }

    /**
     * Called by code under test. Returns at once unless {@code point} is armed; otherwise parks the
     * calling thread until the pause is released or the thread is interrupted.
     *
     * @param point the point's name
     * @throws AssertionError if the thread stayed parked longer than {@link #maxPark()}
     */
    public void reach(String point) {
        Pause pause = armed.get(point);
        if (pause == null) {
            return;
        }
        if (!pause.admit()) {
            return; // a one-shot pause already taken by another thread
        }
        pause.park();
    }

    /**
     * Arms {@code point} so that the <em>next</em> thread reaching it parks; later threads pass
     * (arm again for them, which is allowed as soon as a thread has taken this pause).
     *
     * @param point the point's name
     * @return a handle to wait for the thread and release it
     * @throws IllegalStateException if {@code point} is already armed and no thread took it yet
     */
    public Pause arm(String point) {
        return install(point, true);
    }

    /**
     * Arms {@code point} so that <em>every</em> thread reaching it parks until the returned pause is
     * released (or {@link #disarm(String)} is called).
     *
     * @param point the point's name
     * @return a handle; {@link Pause#thread()} is the first thread parked
     * @throws IllegalStateException if {@code point} is already armed and no thread took it yet
     */
    public Pause armAll(String point) {
        return install(point, false);
    }

    /**
     * Removes the current arming of {@code point}, releasing any thread parked on it. A one-shot
     * pause that a thread has already taken is no longer the point's arming: release it through its
     * {@link Pause} (or {@link #releaseAll()}). Disarming an unarmed point does nothing.
     *
     * @param point the point's name
     */
    public void disarm(String point) {
        Objects.requireNonNull(point, "point");
        Pause pause = armed.get(point);
        if (pause != null) {
            pause.release();
        }
    }

    /** Disarms every point and releases every parked thread; meant for test teardown. */
    public void releaseAll() {
        for (Pause pause : List.copyOf(live)) {
            pause.release();
        }
    }

    private Pause install(String point, boolean oneShot) {
        Objects.requireNonNull(point, "point");
        Pause pause = new Pause(point, oneShot);
        Pause previous = armed.putIfAbsent(point, pause);
        if (previous != null) {
            throw new IllegalStateException("pause point '" + point + "' is already armed and no thread"
                    + " has reached it yet; release or disarm it first");
        }
        live.add(pause);
        return pause;
    }

    /** One arming of a pause point. */
    public final class Pause {
        private final String point;
        private final boolean oneShot;
        private final AtomicBoolean taken = new AtomicBoolean();
        private final CountDownLatch reached = new CountDownLatch(1);
        private final CountDownLatch released = new CountDownLatch(1);
        private final AtomicReference<Thread> firstThread = new AtomicReference<>();
        private final Set<Thread> parked = ConcurrentHashMap.newKeySet();

        private Pause(String point, boolean oneShot) {
            this.point = point;
            this.oneShot = oneShot;
        }

        /**
         * Returns the pause point's name.
         *
         * @return the name given to {@code arm}/{@code armAll}
         */
        public String point() {
            return point;
        }

        /**
         * Waits until a thread is parked at the point (returns at once if one already has reached it,
         * even if it has since been released).
         *
         * @param timeout how long to wait, {@linkplain TestTimeouts#scaled scaled}
         * @throws AssertionError naming the point if no thread reached it in time, or if the waiting
         *     thread is interrupted (its interrupt flag is then restored)
         */
        public void awaitReached(Duration timeout) {
            Duration scaled = TestTimeouts.scaled(timeout);
            boolean ok;
            try {
                ok = reached.await(scaled.toNanos(), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted while waiting for pause point '" + point + "'", e);
            }
            if (!ok) {
                throw new AssertionError("no thread reached pause point '" + point + "' within " + scaled);
            }
        }

        /**
         * Releases the parked thread(s) and ends this arming: threads reaching the point afterwards
         * pass through. Releasing before any thread arrived simply disarms. Idempotent.
         */
        public void release() {
            armed.remove(point, this);
            released.countDown();
            live.remove(this);
        }

        /**
         * Returns the thread that reached the point (for {@code armAll}, the first one).
         *
         * @return the parked (or formerly parked) thread
         * @throws IllegalStateException if no thread has reached the point yet; call {@link
         *     #awaitReached(Duration)} first
         */
        public Thread thread() {
            Thread t = firstThread.get();
            if (t == null) {
                throw new IllegalStateException(
                        "no thread has reached pause point '" + point + "' yet; call awaitReached first");
            }
            return t;
        }

        /**
         * Returns how many threads are parked here right now (0 or 1 for a one-shot pause).
         *
         * @return current number of parked threads
         */
        public int parkedCount() {
            return parked.size();
        }

        /** Claims a one-shot pause for the calling thread; always true for {@code armAll}. */
        private boolean admit() {
            if (!oneShot) {
                return true;
            }
            if (!taken.compareAndSet(false, true)) {
                return false;
            }
            // Later reachers must pass, and the test may re-arm the point for them.
            armed.remove(point, this);
            return true;
        }

        private void park() {
            Thread me = Thread.currentThread();
            firstThread.compareAndSet(null, me);
            parked.add(me);
            reached.countDown();
            Duration limit = maxPark();
            try {
                if (!released.await(limit.toNanos(), TimeUnit.NANOSECONDS)) {
                    String message = "pause point '" + point + "' was never released; thread " + me.getName()
                            + " gave up after " + limit;
                    log.error(message);
                    throw new AssertionError(message);
                }
            } catch (InterruptedException e) {
                // Documented: an interrupt ends the pause, and the code under test sees the flag.
                me.interrupt();
            } finally {
                parked.remove(me);
            }
        }

        @Override
        public String toString() {
            return "Pause[" + point + (oneShot ? ", one-shot" : ", all") + ", parked=" + parked.size() + ", released="
                    + (released.getCount() == 0) + "]";
        }
    }
}
