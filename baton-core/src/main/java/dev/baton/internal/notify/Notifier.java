package dev.baton.internal.notify;

import dev.baton.Leases;
import dev.baton.NotificationMode;
import dev.baton.internal.db.Db;
import dev.baton.internal.db.Identifiers;
import dev.baton.internal.db.Jdbc;
import dev.baton.internal.db.PoolSize;
import dev.baton.internal.service.Service;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArraySet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import javax.sql.DataSource;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Delivers notifications (lease released, jobs enqueued) to waiting threads. One dedicated
 * connection per Baton instance runs LISTEN on the schema's channels; if it cannot (mode POLL, a
 * failed probe, a lost connection), subscribers are simply never woken early and fall back to their
 * jittered polling, which is always running. Notifications are an optimisation of hand-off and
 * pick-up latency, never part of safety.
 *
 * <p>A {@link Service}: one pass is one listening session (connect, LISTEN, probe, deliver until the
 * notifier stops or the connection fails); the wait after it is the reconnect backoff, or, once the probe
 * has fallen back to polling, lasts until the notifier stops. {@link #listen()} starts it.
 */
public final class Notifier extends Service implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Notifier.class);
    /** Lease names cannot hold control characters, so this payload never collides with one. */
    private static final String PROBE_PREFIX = "\u0001probe:";

    /** How long AUTO waits for its test notification before it concludes that notifications do not arrive. */
    public static final Duration PROBE_TIMEOUT = Duration.ofSeconds(2);
    /**
     * LISTEN holds a connection for as long as the node runs. From a shared pool smaller than this, that
     * is too large a share (with 2 connections, half the pool): AUTO then polls instead.
     */
    public static final int MIN_POOL_FOR_LISTEN = 4;

    /** The wait after a session that failed (the connection was lost, or could not be had) before the next. */
    static final Duration RECONNECT_BACKOFF = Duration.ofSeconds(2);
    /**
     * The wait after the probe fell back to polling: until the notifier stops. {@code Service.awaitNextPass}
     * computes its deadline as {@code now + nanos}, which overflows here, but the time left
     * ({@code deadline - now}) wraps back to {@code Long.MAX_VALUE} minus the time waited, so it stays
     * positive: the wait ends on stop only.
     */
    static final long UNTIL_STOPPED = Long.MAX_VALUE;
    /**
     * How long one read of the listening connection blocks waiting for notifications. A notification
     * ends it at once; the bound is how long the notifier may take to see that it was stopped.
     */
    static final int POLL_MILLIS = 500;
    /** How long one read blocks during the probe, which checks its own deadline between reads. */
    private static final int PROBE_POLL_MILLIS = 100;

    private final DataSource dataSource;
    /**
     * True when the data source is Baton's own (a listenDataSource or coordinationDataSource), not the
     * application's pool: then its size does not matter for LISTEN.
     */
    private final boolean dedicated;

    private final String probeChannel;
    private final List<String> channels;
    private final NotificationMode mode;
    private final Map<String, Set<Subscription>> subscribers = new ConcurrentHashMap<>();
    /** Counted down once the first session listens, fell back to polling, or failed: {@link #listen()} waits for it. */
    private final CountDownLatch ready = new CountDownLatch(1);

    private volatile boolean listening;
    /**
     * Set by {@link #close()} and {@link #stop()}: ends a session and keeps a closed notifier from listening
     * again. A session checks this rather than {@code isRunning()}, which is false on a notifier whose
     * {@code runOnce()} a test calls without starting it.
     */
    private volatile boolean closed;
    /** A session has listened before: the next one wakes every subscriber. Service thread only. */
    private boolean listenedBefore;

    private volatile String pendingProbe;
    private volatile CountDownLatch probeLatch;

    /**
     * A notifier for {@code schema}'s channels that listens on a connection of {@code dataSource} once
     * {@link #listen()} is called; {@code dedicated} when the data source is Baton's own, not the
     * application's pool.
     */
    public Notifier(DataSource dataSource, String schema, NotificationMode mode, boolean dedicated) {
        // The ticker times only the reconnect backoff: real time, like the probe's deadline.
        super("baton-lease-listener", System::nanoTime);
        this.dataSource = dataSource;
        this.dedicated = dedicated;
        this.probeChannel = Identifiers.channel(schema, "lease");
        this.channels = List.of(
                Identifiers.channel(schema, "lease"),
                Identifiers.channel(schema, "job"),
                Identifiers.channel(schema, "schedule"));
        this.mode = mode;
    }

    /** A notifier that never listens (for {@link Leases} used without a started Baton). */
    public static Notifier polling() {
        return new Notifier(null, "none", NotificationMode.POLL, false);
    }

    /**
     * Starts listening (unless mode is POLL, or AUTO on a shared pool smaller than
     * {@link #MIN_POOL_FOR_LISTEN}: then no thread is started). Returns once LISTEN is active and probed,
     * or fell back (at most twice {@link #PROBE_TIMEOUT}). Does nothing after {@link #close()}; a second
     * call only waits like the first. Use this, not {@link #start()}, which skips these checks.
     */
    public void listen() {
        if (mode == NotificationMode.POLL || closed) {
            return;
        }
        if (mode == NotificationMode.AUTO && !dedicated) {
            OptionalInt size = PoolSize.of(dataSource);
            if (size.isPresent() && size.getAsInt() < MIN_POOL_FOR_LISTEN) {
                log.info(
                        "not holding a connection for LISTEN: the pool has only {} connections (LISTEN keeps one for "
                                + "as long as the node runs; from {} on it does). Polling instead: hand-off after a release and "
                                + "pick-up of new jobs wait for the next poll. Give Baton a listenDataSource to get "
                                + "notifications anyway",
                        size.getAsInt(),
                        MIN_POOL_FOR_LISTEN);
                return;
            }
        }
        start();
        try {
            ready.await(PROBE_TIMEOUT.toMillis() * 2, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** True while notifications are known to arrive. */
    public boolean listening() {
        return listening;
    }

    /** Wakes the returned subscription whenever {@code key} is notified on {@code channel}. */
    public Subscription subscribe(String channel, String key) {
        Subscription s = new Subscription(channel + '\u0000' + key);
        subscribers.computeIfAbsent(s.key, k -> new CopyOnWriteArraySet<>()).add(s);
        return s;
    }

    /**
     * One listening session: takes a connection, LISTENs on the schema's channels, probes (mode AUTO) and
     * delivers notifications until the notifier is closed or the connection fails. Returns
     * {@link #RECONNECT_BACKOFF} after a failure, {@link #UNTIL_STOPPED} after the probe fell back to
     * polling.
     */
    @Override
    protected long runOnce() {
        if (mode == NotificationMode.POLL || closed) {
            ready.countDown();
            return UNTIL_STOPPED;
        }
        try (Connection c = dataSource.getConnection()) {
            // The session's connection is the service's call in flight: a stop that finds it not answering
            // (its UNLISTEN swallowed by a partition) aborts it instead of waiting for the socket.
            calls().begin(c, "listening for notifications");
            try {
                return listen(c);
            } finally {
                calls().end();
            }
        } catch (SQLException e) {
            listening = false;
            if (!closed) {
                log.warn(
                        "lease notification listener lost its connection ({}); polling covers the gap, "
                                + "reconnecting in {}",
                        e.getMessage(),
                        RECONNECT_BACKOFF);
            }
            ready.countDown();
            return RECONNECT_BACKOFF.toNanos();
        } catch (RuntimeException e) {
            listening = false;
            log.error("lease notification listener failed; polling covers the gap", e);
            ready.countDown();
            return RECONNECT_BACKOFF.toNanos();
        }
    }

    /** The listening session on {@code c}. */
    private long listen(Connection c) throws SQLException {
        // LISTEN takes effect at commit: run it in auto-commit mode. The connection goes back to the
        // pool as it came and without registrations (a pooler would keep them on a shared session).
        boolean autoCommit = c.getAutoCommit();
        c.setAutoCommit(true);
        NotificationReads.Undo reads = NotificationReads.tighten(c);
        try {
            for (String channel : channels) {
                Jdbc.execute(c, "LISTEN \"" + channel + "\"");
            }
            PGConnection pg = c.unwrap(PGConnection.class);
            if (mode == NotificationMode.AUTO && !probe(pg)) {
                ready.countDown();
                if (closed) {
                    return UNTIL_STOPPED; // closed during the probe: nothing to report
                }
                log.warn(
                        "LISTEN on channel '{}' was accepted but a test notification did not arrive within {}: "
                                + "this looks like a transaction-pooling connection pooler (PgBouncer). Falling back "
                                + "to polling; hand-off after a release waits for the next poll. Configure a direct "
                                + "listenDataSource to get notifications.{}",
                        probeChannel,
                        PROBE_TIMEOUT,
                        prepareHint(pg));
                return UNTIL_STOPPED;
            }
            listening = true;
            if (listenedBefore) {
                wakeAll(); // a release may have been missed while reconnecting
            }
            listenedBefore = true;
            ready.countDown();
            while (!closed) {
                PGNotification[] batch = pg.getNotifications(POLL_MILLIS);
                if (batch != null) {
                    for (PGNotification n : batch) {
                        deliver(n.getName(), n.getParameter());
                    }
                }
            }
            return 0; // closed: the service loop ends
        } finally {
            listening = false;
            reads.close();
            unlisten(c, autoCommit);
        }
    }

    @Override
    protected void onStopRequested() {
        closed = true; // ends the session within POLL_MILLIS
    }

    /**
     * Drops every registration and restores auto-commit before the connection goes back (best effort).
     * Skipped when the driver's connection under the pool's wrapper is already closed: a pool that shuts
     * down closes the connections in use (HikariCP aborts them), and a statement would only fail, the pool
     * logging the connection as broken, stack trace and all. On a connection that is broken but not yet
     * closed, the statement's failure is how the pool learns to discard it.
     */
    private static void unlisten(Connection c, boolean autoCommit) {
        try {
            if (!c.isClosed() && !physicallyClosed(c)) {
                Jdbc.execute(c, "UNLISTEN *");
                c.setAutoCommit(autoCommit);
            }
        } catch (SQLException e) {
            // A broken connection: the pool discards it, registrations and all.
            log.debug("UNLISTEN failed; the connection is discarded with its registrations: {}", e.getMessage());
        }
    }

    /** The driver's own connection under a pool's wrapper is closed (false when that cannot be told). */
    private static boolean physicallyClosed(Connection c) {
        try {
            return c.unwrap(PGConnection.class) instanceof Connection raw && raw.isClosed();
        } catch (SQLException | RuntimeException e) {
            return false;
        }
    }

    /**
     * Sends a notification on the lease channel from another connection and reads the listening one for
     * it, for at most {@link #PROBE_TIMEOUT} (or until the notifier is closed). True if it arrived.
     */
    private boolean probe(PGConnection listener) throws SQLException {
        String payload = PROBE_PREFIX + UUID.randomUUID();
        CountDownLatch latch = new CountDownLatch(1);
        pendingProbe = payload;
        probeLatch = latch;
        // Committed whatever the pool's auto-commit (a notification is delivered at commit).
        Db.of(dataSource).call("a notification probe", sender -> {
            Jdbc.notify(sender, probeChannel, payload);
            return null;
        });
        // Real time (System.nanoTime), not the (test-controllable) ticker: it bounds blocking socket reads,
        // not a lease. Each read blocks at most PROBE_POLL_MILLIS, so the deadline is overrun by at most that.
        long deadline = System.nanoTime() + PROBE_TIMEOUT.toNanos();
        while (latch.getCount() > 0 && !closed && System.nanoTime() - deadline < 0) {
            PGNotification[] batch = listener.getNotifications(PROBE_POLL_MILLIS);
            if (batch != null) {
                for (PGNotification n : batch) {
                    deliver(n.getName(), n.getParameter());
                }
            }
        }
        pendingProbe = null;
        return latch.getCount() == 0;
    }

    private static String prepareHint(PGConnection pg) {
        try {
            return pg.getPrepareThreshold() > 0
                    ? " Also: through a transaction-pooling PgBouncer, server-side prepared statements fail under "
                            + "concurrency; add prepareThreshold=0 to the JDBC URL."
                    : "";
        } catch (RuntimeException e) {
            return "";
        }
    }

    private void deliver(String channel, String payload) {
        if (payload == null) {
            return;
        }
        String probe = pendingProbe;
        if (payload.startsWith(PROBE_PREFIX)) {
            if (payload.equals(probe)) {
                probeLatch.countDown();
            }
            return;
        }
        Set<Subscription> subs = subscribers.get(channel + '\u0000' + payload);
        if (subs != null) {
            subs.forEach(Subscription::signal);
        }
    }

    private void wakeAll() {
        subscribers.values().forEach(set -> set.forEach(Subscription::signal));
    }

    /** Stops listening (waiting for the session to give its connection back) and wakes every subscriber. */
    @Override
    public void close() {
        closed = true;
        stop();
        wakeAll();
    }

    /** A waiter for releases of one lease name. */
    public final class Subscription implements AutoCloseable {
        private final String key;
        private final ReentrantLock lock = new ReentrantLock();
        private final Condition signalled = lock.newCondition();
        private boolean pending;

        private Subscription(String key) {
            this.key = key;
        }

        public void signal() {
            lock.lock();
            try {
                pending = true;
                signalled.signalAll();
            } finally {
                lock.unlock();
            }
        }

        /**
         * Waits until a notification for this name arrives or {@code nanos} pass. Returns false only
         * if the thread was interrupted (the interrupt flag is kept).
         */
        public boolean await(long nanos) {
            lock.lock();
            try {
                long left = nanos;
                while (!pending && left > 0) {
                    left = signalled.awaitNanos(left);
                }
                pending = false;
                return true;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            } finally {
                lock.unlock();
            }
        }

        @Override
        public void close() {
            Set<Subscription> set = subscribers.get(key);
            if (set != null) {
                set.remove(this);
            }
        }
    }
}
