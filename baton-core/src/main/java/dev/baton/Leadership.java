package dev.baton;

import dev.baton.internal.db.BoundedCalls;
import dev.baton.internal.db.Identifiers;
import dev.baton.internal.lease.LeaseStore;
import dev.baton.internal.notify.Notifier;
import dev.baton.internal.service.Hooks;
import dev.baton.internal.service.Service;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * Runs a {@link LeaderTask} on at most one instance at a time: campaigns for a lease, runs the task
 * while it holds it, renews every R, and <b>stops the task by itself</b> as soon as it cannot prove
 * it still owns the lease.
 *
 * <p>Timing (L = lease TTL, R = renew interval): every renewal call is bounded to R. The local
 * deadline is L/2 after the send time of the last confirmed renewal, measured on the monotonic
 * clock; when it passes the task is cancelled (flag plus interrupt) and the term ends. Because the
 * database started the TTL no earlier than that send time, the task is told to stop at least L/2
 * before anyone else can acquire. Safety does not rest on this timing: every write of the task is
 * fenced by the database. Renewals and acquisition borrow from the coordination data source call by
 * call (give Baton one of its own so that an exhausted application pool cannot starve them); each runner
 * is one acquisition, so two runners of one name never lead at once, in one process or in two.
 *
 * <p>Graceful {@link #stop()} cancels the task, waits for it, and releases the lease with a
 * notification, so a waiting candidate takes over at once rather than after a poll.
 */
public final class Leadership implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(Leadership.class);

    private final Leases leases;
    private final DataSource coordination;
    private final DataSource writes;
    private final Notifier notifier;
    private final String name;
    private final String owner;
    private final LeadershipConfig config;
    private final LeaderTask task;
    private final LeadershipListener listener;
    private final Hooks hooks;
    private final LongSupplier ticker;
    private final BatonMetrics metrics;
    /**
     * This runner's acquisition: it retries within it, so a grant whose answer was lost is recovered at
     * once, while another runner of the same name (in this process or on a node with the same id) is a
     * different acquisition and is kept out like any other owner.
     */
    private final String acquisition = Leases.newAcquisition();

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition events = lock.newCondition();
    private volatile boolean started;
    private volatile boolean stopping;
    /** An operator's drain holds this runner: no term, no campaign (see {@link #hold}). */
    private volatile boolean held;
    /** Asked before every campaign: false while this node must not campaign (see {@link #campaignGate}). */
    private volatile BooleanSupplier mayCampaign = () -> true;

    private volatile Thread control;
    private volatile LeaseGrant current;
    private volatile Term term;
    private volatile Notifier.Subscription wakeup;

    /** Acquire, renew and release: bounded calls on the runner's own connection. */
    private BoundedCalls calls;

    Leadership(
            Leases leases,
            DataSource coordination,
            DataSource writes,
            Notifier notifier,
            String name,
            String owner,
            LeadershipConfig config,
            LeaderTask task,
            LeadershipListener listener,
            Hooks hooks,
            LongSupplier ticker,
            BatonMetrics metrics) {
        this.leases = leases;
        this.coordination = coordination;
        this.writes = writes;
        this.notifier = notifier;
        this.name = Identifiers.name("lease name", name);
        this.owner = Identifiers.name("owner id", owner);
        this.config = Objects.requireNonNull(config, "config");
        this.task = Objects.requireNonNull(task, "task");
        this.listener = listener == null ? LeadershipListener.NONE : listener;
        this.hooks = hooks;
        this.ticker = ticker;
        this.metrics = metrics;
    }

    /** Starts campaigning. Idempotent. */
    public Leadership start() {
        lock.lock();
        try {
            if (started) {
                return this;
            }
            started = true;
            calls = new BoundedCalls(coordination, "baton-lease-calls-" + name);
            Thread t = new Thread(this::campaign, "baton-leadership-" + name);
            t.setDaemon(true);
            control = t;
            t.start();
            return this;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Stops: cancels the task if leading, waits up to the stop timeout for it to finish, releases the
     * lease (waking waiting candidates), and stops campaigning. Idempotent; returns when done.
     */
    public void stop() {
        lock.lock();
        Thread t;
        try {
            if (!started || stopping) {
                t = control;
                if (t == null) {
                    return;
                }
            } else {
                stopping = true;
                events.signalAll();
                Notifier.Subscription wake = wakeup;
                if (wake != null) {
                    wake.signal();
                }
            }
            t = control;
        } finally {
            lock.unlock();
        }
        if (t != null && t != Thread.currentThread()) {
            try {
                t.join(config.stopTimeout()
                        .plus(config.renewInterval().multipliedBy(3))
                        .toMillis());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    @Override
    public void close() {
        stop();
    }

    /**
     * Asked before every campaign (on the campaign thread): a node whose operators' controls it has not read
     * recently reads them first, so that a node reaching the database again after an outage obeys a drain
     * issued meanwhile before it takes a lease.
     */
    void campaignGate(BooleanSupplier gate) {
        this.mayCampaign = gate;
    }

    /**
     * An operator's drain: while held, a leader steps down (reason {@link RevocationReason#DRAINED},
     * releasing the lease) and no campaign is made; when the hold is lifted, campaigning resumes at once.
     */
    void hold(boolean hold) {
        lock.lock();
        try {
            if (held == hold) {
                return;
            }
            held = hold;
            events.signalAll();
            Notifier.Subscription wake = wakeup;
            if (wake != null) {
                wake.signal();
            }
        } finally {
            lock.unlock();
        }
    }

    /** The lease name this runner campaigns for. */
    public String name() {
        return name;
    }

    /**
     * True while this instance leads and its local deadline has not passed. A hint for routing and
     * display only: guard writes with {@link LeaderContext#fenced}, never with this.
     */
    public boolean isLeader() {
        LeaseGrant g = current;
        return g != null && ticker.getAsLong() < g.localDeadlineNanos();
    }

    /** The grant of the current term, if leading. */
    public Optional<LeaseGrant> currentGrant() {
        return Optional.ofNullable(current);
    }

    // ---------------------------------------------------------------- control loop

    private void campaign() {
        try (Notifier.Subscription wake = notifier.subscribe(leases.store().channel(), name)) {
            wakeup = wake;
            while (!stopping) {
                if (held || !mayCampaign.getAsBoolean()) {
                    wake.await(Service.jitter(config.pollInterval().toNanos()));
                    continue;
                }
                long wait;
                try {
                    long bound = config.renewInterval().toNanos();
                    LeaseStore.Attempt attempt = calls.call(
                            c -> leases.store()
                                    .acquire(
                                            c,
                                            name,
                                            owner,
                                            config.leaseTtl(),
                                            null,
                                            acquisition,
                                            BoundedCalls.serverMillis(bound)),
                            bound);
                    if (attempt.grant().isPresent()) {
                        RevocationReason ended = lead(attempt.grant().get());
                        if (ended == RevocationReason.TASK_COMPLETED || ended == RevocationReason.TASK_FAILED) {
                            // A task that ends at once must not spin through generations.
                            wake.await(Service.jitter(config.pollInterval().toNanos()));
                        }
                        continue;
                    }
                    hooks.reach(Hooks.Points.CAMPAIGN_LOST);
                    // Retry when the holder's lease is due to expire, on a release notification, or
                    // at the next (jittered) poll, whichever comes first. While notifications are
                    // known to arrive, a release wakes us, so only the expiry matters: an idle
                    // candidate then costs one query per lease term, not one per poll.
                    long untilExpiry = attempt.expiresInNanos() + 1_000_000;
                    wait = notifier.listening()
                            ? untilExpiry
                            : Math.min(Service.jitter(config.pollInterval().toNanos()), untilExpiry);
                } catch (TimeoutException | RuntimeException | SQLException e) {
                    log.warn("campaign for lease '{}' by '{}' failed, retrying: {}", name, owner, describe(e));
                    wait = Service.jitter(config.pollInterval().toNanos());
                }
                if (!stopping) {
                    wake.await(Math.max(wait, 1_000_000));
                }
            }
        } catch (RuntimeException | Error e) {
            log.error("leadership runner for '{}' died; no longer campaigning", name, e);
            throw e;
        } finally {
            calls.close();
        }
    }

    private RevocationReason lead(LeaseGrant grant) {
        current = grant;
        Term t = new Term(grant);
        term = t;
        log.info("'{}' elected leader of '{}' with generation {}", owner, name, grant.generation());
        metrics.leadershipAcquired(name, grant.generation());
        callback(() -> listener.onElected(grant));
        t.start();
        long renewInterval = config.renewInterval().toNanos();
        long nextRenew = grant.confirmedSendNanos() + renewInterval;
        RevocationReason reason;
        while (true) {
            long now = ticker.getAsLong();
            long deadline = current.localDeadlineNanos();
            if (stopping) {
                reason = RevocationReason.STOPPED;
                break;
            }
            if (held) {
                reason = RevocationReason.DRAINED;
                break;
            }
            if (now - deadline >= 0) {
                reason = RevocationReason.DEADLINE;
                break;
            }
            if (t.done()) {
                reason = t.failure == null ? RevocationReason.TASK_COMPLETED : RevocationReason.TASK_FAILED;
                break;
            }
            long until = Math.min(nextRenew, deadline);
            if (until - now > 0) {
                awaitEvent(until - now);
                continue;
            }
            hooks.reach(Hooks.Points.RENEW_BEFORE_SEND);
            long send = ticker.getAsLong();
            if (send - deadline >= 0) {
                continue; // paused past the deadline: step down without renewing
            }
            try {
                LeaseGrant held = current;
                long bound = Math.min(renewInterval, deadline - send);
                current = calls.call(
                        c -> leases.store().renew(c, held, config.leaseTtl(), BoundedCalls.serverMillis(bound)), bound);
                nextRenew = send + renewInterval;
                metrics.leaseRenewed(name, Duration.ofNanos(ticker.getAsLong() - send), true);
            } catch (LeaseLostException e) {
                metrics.leaseRenewed(name, Duration.ofNanos(ticker.getAsLong() - send), false);
                reason = RevocationReason.LOST;
                break;
            } catch (TimeoutException | RuntimeException | SQLException e) {
                metrics.leaseRenewed(name, Duration.ofNanos(ticker.getAsLong() - send), false);
                // Unconfirmed: keep trying until the local deadline; the lease may still be ours.
                log.warn(
                        "renewal of lease '{}' generation {} not confirmed ({}); deadline in {} ms",
                        name,
                        grant.generation(),
                        describe(e),
                        (deadline - ticker.getAsLong()) / 1_000_000);
                nextRenew = ticker.getAsLong() + renewInterval / 4;
            }
        }
        stepDown(t, reason);
        return reason;
    }

    private void stepDown(Term t, RevocationReason reason) {
        LeaseGrant grant = current;
        current = null;
        t.cancel();
        if (reason == RevocationReason.LOST || reason == RevocationReason.DEADLINE) {
            log.warn("'{}' stepped down as leader of '{}' generation {}: {}", owner, name, grant.generation(), reason);
        } else {
            log.info("'{}' stepped down as leader of '{}' generation {}: {}", owner, name, grant.generation(), reason);
        }
        metrics.leadershipRevoked(name, reason);
        callback(() -> listener.onRevoked(grant, reason));
        if (reason != RevocationReason.LOST) {
            // Let in-flight fenced writes finish before letting the next leader in. After a deadline
            // the release is best effort: it matches owner and generation, so it can only clear our own
            // expired-or-expiring grant, and it shortens the gap when the database is reachable again.
            t.awaitDone(config.stopTimeout());
            release(grant);
        }
        // Never run two terms' tasks at once in this process.
        while (!t.awaitDone(config.stopTimeout())) {
            log.warn(
                    "leader task of '{}' generation {} still running {} after cancellation; it cannot write "
                            + "(its writes are fenced) but it holds a thread",
                    name,
                    grant.generation(),
                    config.stopTimeout());
            if (stopping) {
                break;
            }
        }
        term = null;
    }

    private void release(LeaseGrant grant) {
        for (int attempt = 1; attempt <= 3; attempt++) {
            try {
                long bound = config.renewInterval().toNanos();
                boolean released =
                        calls.call(c -> leases.store().release(c, grant, BoundedCalls.serverMillis(bound)), bound);
                log.debug(
                        "release of '{}' generation {}: {}",
                        name,
                        grant.generation(),
                        released ? "released" : "no longer ours");
                return;
            } catch (TimeoutException | RuntimeException | SQLException e) {
                log.warn(
                        "release of lease '{}' generation {} failed (attempt {}/3): {}",
                        name,
                        grant.generation(),
                        attempt,
                        describe(e));
            }
        }
    }

    private void awaitEvent(long nanos) {
        lock.lock();
        try {
            if (!stopping) {
                events.awaitNanos(nanos);
            }
        } catch (InterruptedException e) {
            // The control thread is only interrupted by executor shutdown; treat as a stop.
            stopping = true;
        } finally {
            lock.unlock();
        }
    }

    /** Wakes the control loop (a term ended; tests that advance a manual ticker). */
    void signal() {
        lock.lock();
        try {
            events.signalAll();
        } finally {
            lock.unlock();
        }
    }

    private static void callback(Runnable r) {
        try {
            r.run();
        } catch (RuntimeException e) {
            log.warn("leadership listener threw; ignored", e);
        }
    }

    private static String describe(Throwable e) {
        return e instanceof TimeoutException ? "no answer within the bound" : e.getMessage();
    }

    // ---------------------------------------------------------------- one term

    /** One term of leadership: the task's thread and its cancellation. */
    private final class Term implements LeaderContext {
        private final LeaseGrant grant;
        private final CountDownLatch cancelled = new CountDownLatch(1);
        private final CountDownLatch finished = new CountDownLatch(1);
        private volatile Thread thread;
        private volatile Throwable failure;

        Term(LeaseGrant grant) {
            this.grant = grant;
        }

        void start() {
            Thread t = new Thread(this::run, "baton-leader-" + name + "-g" + grant.generation());
            t.setDaemon(true);
            thread = t;
            t.start();
        }

        private void run() {
            // The task's thread is its own: these stay for the whole term (see Mdc).
            MDC.put(Mdc.NODE, owner);
            MDC.put(Mdc.LEASE, name);
            MDC.put(Mdc.GENERATION, Long.toString(grant.generation()));
            try {
                hooks.reach(Hooks.Points.TASK_BEFORE_RUN);
                task.run(this);
            } catch (Throwable e) {
                if (!isCancelled()) {
                    failure = e;
                    log.error("leader task of '{}' generation {} failed", name, grant.generation(), e);
                } else {
                    log.debug("leader task of '{}' ended after cancellation: {}", name, e.toString());
                }
            } finally {
                finished.countDown();
                signal();
            }
        }

        void cancel() {
            cancelled.countDown();
            Thread t = thread;
            if (t != null && t != Thread.currentThread()) {
                t.interrupt();
            }
        }

        boolean done() {
            return finished.getCount() == 0;
        }

        boolean awaitDone(Duration timeout) {
            try {
                return finished.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return done();
            }
        }

        @Override
        public LeaseGrant grant() {
            return grant;
        }

        @Override
        public boolean isCancelled() {
            return cancelled.getCount() == 0;
        }

        @Override
        public boolean awaitCancellation(Duration timeout) {
            try {
                return cancelled.await(timeout.toNanos(), TimeUnit.NANOSECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return true;
            }
        }

        @Override
        public <T> T fenced(FencedWork<T> work) {
            if (isCancelled()) {
                throw new LeaseLostException(grant, "leadership term of " + grant + " is over; write refused locally");
            }
            return leases.fenced(writes, grant, work);
        }

        @Override
        public void check(Connection transaction) throws SQLException {
            leases.check(transaction, grant);
        }
    }
}
