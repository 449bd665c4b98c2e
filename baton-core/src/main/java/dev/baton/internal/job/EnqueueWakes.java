package dev.baton.internal.job;

import dev.baton.internal.db.Db;
import dev.baton.internal.service.Service;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Wakes the workers of a queue for the enqueues Baton commits itself, at most once per queue every
 * {@link #WINDOW_NANOS} (decision 0038). A transaction that notified takes, as it commits, one lock for every
 * database of the server and holds it until its commit is flushed, so notifying transactions commit one after the
 * other: a stream of small enqueues, each notifying, commits one at a time (the machine's PostgreSQL 15, fsync on,
 * 32 clients: 3,921 inserts/s with a NOTIFY each, 8,143 without). The first enqueue of a queue after a quiet window
 * notifies in its own statement, delivered at its commit, as before; one within the window of the queue's last
 * notification does not, and is left pending once it has committed. The first enqueue after the window notifies in
 * its statement again, for the pending ones too; if none comes within {@link #CARRY_NANOS} of the window's end, this
 * service's thread notifies the queue: one statement of its own for every enqueue since (decision 0042: under a
 * stream, the enqueues carry nearly all notifications and the thread sends few). A job's workers are thus woken no
 * later than one window, the carry time and one round trip after its commit, never left for their poll.
 *
 * <p>No lock on an enqueue's path: with one lock, 32 threads enqueueing one job per call (their commits ending
 * together) waited for it 264 times over 10 ms in 60,000 enqueues (median 19 ms, at most 58; JFR), none without.
 *
 * <p>Enqueues in a transaction a framework keeps for the caller (Spring's) are notified the same way after it
 * commits, when its binding can say when ({@link #afterCommit}, decision 0039); enqueues on a connection the caller
 * hands over notify in its transaction: Baton does not see that commit. The thread starts with the first enqueue it
 * serves (an instance that only enqueues has one too) and ends on {@link #close()}; a closed instance notifies every
 * enqueue in its own statement again.
 */
public final class EnqueueWakes extends Service {
    private static final Logger log = LoggerFactory.getLogger(EnqueueWakes.class);
    /** The least time between two notifications of a queue for enqueues Baton commits itself. */
    public static final long WINDOW_NANOS = TimeUnit.MILLISECONDS.toNanos(2);
    /**
     * After a queue's window, how long an enqueue into it has to carry its pending notification in its own
     * statement before this service's thread sends it (decision 0042).
     */
    public static final long CARRY_NANOS = TimeUnit.MILLISECONDS.toNanos(1);
    /** From a queue's last notification, when this service's thread notifies it for the enqueues since. */
    public static final long NOTIFIER_NANOS = WINDOW_NANOS + CARRY_NANOS;
    /** How long the thread waits with nothing to notify (a trailing notification wakes it at once). */
    private static final long IDLE_NANOS = TimeUnit.SECONDS.toNanos(10);
    /** After a notification failed (no connection from the pool, the database away): the wait before the next try. */
    public static final long RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    /** Above this many queues remembered, those whose window has passed are forgotten. */
    private static final int FORGET_ABOVE = 1024;

    private final Db db;
    private final JobStore store;
    /**
     * Per queue: when (ticker) it was last notified, inline or by this thread. Read and written without a lock: a
     * race costs at most a second notification within a window, never a missing one (that is {@link #pending}'s).
     */
    private final Map<String, Long> lastNotified = new ConcurrentHashMap<>();
    /**
     * Queues with ended enqueues not yet notified. A queue leaves it only as it is notified (taken before the
     * statement, so an enqueue ending meanwhile puts it back), and a failed notification puts it back.
     */
    private final Set<String> pending = ConcurrentHashMap.newKeySet();

    /** Set by {@link #close()}, read after marking a queue pending: either the caller or the last pass notifies. */
    private volatile boolean stopped;
    /** The thread was started: {@link Service#start()} takes a lock, not to be taken on every enqueue. */
    private volatile boolean started;
    /** The last notification failed: the next failure is not logged again. Service thread only. */
    private boolean failing;

    public EnqueueWakes(Db db, JobStore store, LongSupplier ticker) {
        super("baton-enqueue-notifier", ticker);
        this.db = db;
        this.store = store;
    }

    /** An enqueue of Baton's own transaction: {@code notify} says whether its statement notifies the queues. */
    @FunctionalInterface
    public interface Write<T> {
        T run(boolean notify) throws SQLException;
    }

    /**
     * Runs {@code write}, an enqueue into {@code queues} that commits before it returns: it notifies in its own
     * statement if none of the queues was notified within the window, else this service notifies them once the
     * write has ended. Failed too: its commit may have succeeded unseen (an unknown outcome), and a notification
     * for nothing costs a claim that finds nothing, where a missed one costs the workers' poll.
     */
    public <T> T enqueue(Collection<String> queues, Write<T> write) throws SQLException {
        List<String> carried = new ArrayList<>();
        boolean inline = inline(queues, carried);
        boolean wrote = false;
        try {
            T result = write.run(inline);
            wrote = true;
            return result;
        } finally {
            if (!inline) {
                notifyLater(queues);
            } else if (!wrote && !carried.isEmpty()) {
                notifyLater(carried); // the statement that was to carry their notification failed
            }
        }
    }

    /**
     * True, and the queues marked notified now, if the enqueue should notify in its own statement: when every one
     * of its queues' windows has passed. Its notification then also stands for their enqueues still pending (ended
     * before this one's commit, so woken at it): those queues are taken from the pending ones into {@code carried},
     * and this service's thread does not send a statement of its own for them (decision 0042).
     */
    boolean inline(Collection<String> queues, List<String> carried) {
        if (stopped) {
            return true;
        }
        long now = ticker.getAsLong();
        for (String q : queues) {
            Long last = lastNotified.get(q);
            if (last != null && now - last < WINDOW_NANOS) {
                return false; // within the window: the queue's next notification is this thread's
            }
        }
        if (lastNotified.size() > FORGET_ABOVE) {
            lastNotified.values().removeIf(last -> now - last >= NOTIFIER_NANOS);
        }
        for (String q : queues) {
            lastNotified.put(q, now);
            if (pending.remove(q)) {
                carried.add(q);
            }
        }
        return true;
    }

    /**
     * Jobs were enqueued into {@code queues} in a transaction that has now committed (or whose commit's outcome is
     * unknown), without a notification of its own: this service notifies the queues when their window ends
     * (decision 0039). Only marks them, without waiting for the database (after {@link #close()}: notifies them on
     * the calling thread); never throws.
     */
    public void afterCommit(Collection<String> queues) {
        notifyLater(queues);
    }

    /** The queues' enqueue has ended without notifying them: they are notified when their window ends. */
    void notifyLater(Collection<String> queues) {
        if (!started && !stopped) {
            started = true;
            start(); // started by the first enqueue it serves
        }
        boolean added = false;
        for (String q : queues) {
            added |= pending.add(q);
        }
        if (stopped) {
            notify(takeAll()); // stopped since this enqueue's decision: notified on the caller's thread
        } else if (added) {
            wake(); // a queue already pending is in the thread's wait
        }
    }

    /**
     * Notifies the pending queues whose window and carry time have passed without an enqueue carrying their
     * notification; waits until the next one's have.
     */
    @Override
    protected long runOnce() {
        List<String> due = new ArrayList<>();
        long now = ticker.getAsLong();
        for (String q : pending) {
            Long last = lastNotified.get(q);
            if ((last == null || now - last >= NOTIFIER_NANOS) && pending.remove(q)) {
                due.add(q);
                lastNotified.put(q, now);
            }
        }
        if (!due.isEmpty()) {
            try {
                notifyNow(due);
                if (failing) {
                    log.info("the enqueue notifier notifies queues again");
                }
                failing = false;
            } catch (SQLException | RuntimeException e) {
                // Kept pending and tried again: the workers would otherwise wait for their poll.
                if (!failing) {
                    log.warn(
                            "could not notify the workers of queues {} for their new jobs ({}); trying again every {} ms",
                            due,
                            e.getMessage(),
                            TimeUnit.NANOSECONDS.toMillis(RETRY_NANOS));
                }
                failing = true;
                pending.addAll(due);
                return RETRY_NANOS;
            }
        }
        now = ticker.getAsLong();
        long wait = IDLE_NANOS;
        for (String q : pending) {
            Long last = lastNotified.get(q);
            wait = Math.min(wait, last == null ? 0 : last + NOTIFIER_NANOS - now);
        }
        return wait;
    }

    /** Notifies the queues still pending as the thread ends. */
    @Override
    protected void afterLastPass() {
        notify(takeAll());
    }

    /**
     * Stops the thread (if it ever started), notifying the queues still pending; from now on every enqueue
     * notifies in its own statement.
     */
    public void close() {
        stopped = true;
        stop();
    }

    /** Takes every pending queue: each one by one taker only, the caller or the thread. */
    private List<String> takeAll() {
        List<String> all = new ArrayList<>();
        for (String q : pending) {
            if (pending.remove(q)) {
                all.add(q);
            }
        }
        return all;
    }

    private void notifyNow(List<String> queues) throws SQLException {
        db.call("notifying the workers of queues " + queues, c -> {
            store.notifyQueues(c, queues);
            return null;
        });
    }

    /** Notifies once, as the notifier ends or after it: a failure is logged and the workers find the jobs at their poll. */
    private void notify(List<String> queues) {
        if (queues.isEmpty()) {
            return;
        }
        try {
            notifyNow(queues);
        } catch (SQLException | RuntimeException e) {
            log.warn("jobs were enqueued, but their queues {} could not be notified: {}", queues, e.getMessage());
        }
    }
}
