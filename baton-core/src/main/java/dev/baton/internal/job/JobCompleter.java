package dev.baton.internal.job;

import dev.baton.internal.db.Db;
import dev.baton.internal.notify.Notifier;
import dev.baton.internal.service.Hooks;
import dev.baton.internal.service.Service;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Records the outcomes of this node's attempts in batches: successes, releases, snoozes and failures
 * each in one statement, every row fenced by id, attempt token and state, so an attempt that lost its job
 * writes nothing. A batch is whatever was queued when the previous one finished (at most
 * {@value #MAX_BATCH}), so under load one statement records many outcomes and when idle each is
 * recorded at once. An attempt stops counting as in flight on its node (and its claimer is woken, once
 * per batch) only after the outcome is recorded or given up on; its handler slot was free again as soon as
 * the handler returned (decision 0027).
 */
public final class JobCompleter extends Service {
    private static final Logger log = LoggerFactory.getLogger(JobCompleter.class);
    public static final int MAX_BATCH = 1000;
    /** SQLSTATE class 22, data exception: a value the database cannot store (not a connection problem). */
    private static final String DATA_EXCEPTION_CLASS = "22";

    private final Db db;
    private final JobStore store;
    private final Hooks hooks;
    private final BlockingQueue<AttemptOutcome> outcomes = new LinkedBlockingQueue<>();

    public JobCompleter(Db db, JobStore store, Hooks hooks, LongSupplier ticker) {
        super("baton-job-completer", ticker);
        this.db = db;
        this.store = store;
        this.hooks = hooks;
    }

    /** Queues an outcome for recording. */
    public void add(AttemptOutcome outcome) {
        outcomes.add(outcome);
    }

    /** Outcomes queued and not yet taken (tests). */
    public int pending() {
        return outcomes.size();
    }

    /**
     * Waits for the first queued outcome, then records it with every other queued one (up to
     * {@value #MAX_BATCH}) as one batch. Returns 0: the next pass waits for the next outcome.
     */
    @Override
    protected long runOnce() throws InterruptedException {
        List<AttemptOutcome> batch = new ArrayList<>();
        batch.add(outcomes.take());
        outcomes.drainTo(batch, MAX_BATCH - 1);
        batch.remove(AttemptOutcome.POISON);
        if (!batch.isEmpty()) {
            flush(batch);
        }
        return 0;
    }

    /** Ends a wait for the next outcome. */
    @Override
    protected void onStopRequested() {
        outcomes.add(AttemptOutcome.POISON);
    }

    /** Records what was queued before the stop. */
    @Override
    protected void afterLastPass() {
        List<AttemptOutcome> rest = new ArrayList<>();
        outcomes.drainTo(rest);
        rest.remove(AttemptOutcome.POISON);
        if (!rest.isEmpty()) {
            flush(rest);
        }
    }

    /** Records a batch of outcomes; retried on connection failures (every statement is idempotent). */
    public void flush(List<AttemptOutcome> batch) {
        try {
            hooks.reach(Hooks.Points.JOB_OUTCOMES_BEFORE_RECORD);
            recordWithRetries(batch);
        } finally {
            // Done with these attempts, then wake each claimer once per batch, not once per job.
            List<Notifier.Subscription> wakes = new ArrayList<>(1);
            for (AttemptOutcome o : batch) {
                if (o.free != null) {
                    o.free.run();
                }
                if (o.whenRecorded != null) {
                    o.whenRecorded.accept(o.recorded && !o.stale);
                }
                if (o.wake != null && !wakes.contains(o.wake)) {
                    wakes.add(o.wake);
                }
            }
            wakes.forEach(Notifier.Subscription::signal);
        }
    }

    private void recordWithRetries(List<AttemptOutcome> batch) {
        for (int attempt = 1; ; attempt++) {
            try {
                record(batch);
                hooks.reach(Hooks.Points.JOB_OUTCOMES_RECORDED);
                return;
            } catch (SQLException | RuntimeException e) {
                if (attempt >= 5) {
                    log.error(
                            "recording {} job outcomes failed {} times; giving up: their leases will expire and the "
                                    + "jobs will run again (at least once)",
                            batch.size(),
                            attempt,
                            e);
                    return;
                }
                log.warn(
                        "recording {} job outcomes failed (attempt {}), retrying: {}",
                        batch.size(),
                        attempt,
                        e.getMessage());
                try {
                    Thread.sleep(100L * attempt); // backoff of a background retry, not test synchronisation
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    /**
     * Records a batch: successes, releases and failures each in one statement (each its own transaction,
     * so one kind's trouble never takes the others down with it). Outcomes already recorded are taken
     * out of the batch, so a retry after a failure repeats only what is left.
     */
    private void record(List<AttemptOutcome> batch) throws SQLException {
        batch.sort(Comparator.comparingLong(o -> o.id)); // one lock order for every batch
        List<AttemptOutcome> ok = new ArrayList<>();
        List<AttemptOutcome> failed = new ArrayList<>();
        List<AttemptOutcome> released = new ArrayList<>();
        List<AttemptOutcome> snoozed = new ArrayList<>();
        for (AttemptOutcome o : batch) {
            if (o.recorded) {
                continue;
            }
            switch (o.kind) {
                case SUCCESS -> ok.add(o);
                case RELEASE -> released.add(o);
                case SNOOZE -> snoozed.add(o);
                default -> failed.add(o);
            }
        }
        if (!ok.isEmpty()) {
            recorded(
                    "completions",
                    ok,
                    db.call("recording " + ok.size() + " completions", c -> store.complete(c, ids(ok), tokens(ok))));
        }
        if (!released.isEmpty()) {
            recorded(
                    "releases",
                    released,
                    db.call(
                            "recording " + released.size() + " releases",
                            c -> store.release(c, ids(released), tokens(released))));
        }
        if (!snoozed.isEmpty()) {
            Long[] delays = new Long[snoozed.size()];
            for (int i = 0; i < delays.length; i++) {
                delays[i] = snoozed.get(i).delayMs;
            }
            recorded(
                    "snoozes",
                    snoozed,
                    db.transaction(
                            "recording " + snoozed.size() + " snoozes",
                            tx -> store.snooze(tx, ids(snoozed), tokens(snoozed), delays)));
        }
        if (!failed.isEmpty()) {
            try {
                fail(failed);
            } catch (SQLException e) {
                if (e.getSQLState() == null || !e.getSQLState().startsWith(DATA_EXCEPTION_CLASS)) {
                    throw e;
                }
                // One error the database cannot store must not sink the others: record them one by one,
                // and the unstorable one with a record that says so.
                log.warn(
                        "recording {} failed attempts together was refused ({}); recording them one by one",
                        failed.size(),
                        e.getMessage());
                for (AttemptOutcome o : failed) {
                    try {
                        fail(List.of(o));
                    } catch (SQLException single) {
                        if (single.getSQLState() == null
                                || !single.getSQLState().startsWith(DATA_EXCEPTION_CLASS)) {
                            throw single;
                        }
                        log.error(
                                "the error of job {} attempt token {} cannot be stored ({}); recording the attempt's "
                                        + "outcome without it",
                                o.id,
                                o.token,
                                single.getMessage());
                        o.error = JobErrors.unrecordable(single.getMessage());
                        fail(List.of(o));
                    }
                }
            }
        }
    }

    private void fail(List<AttemptOutcome> failed) throws SQLException {
        String[] errors = new String[failed.size()];
        Long[] delays = new Long[failed.size()];
        String[] outcomeKinds = new String[failed.size()];
        for (int i = 0; i < errors.length; i++) {
            AttemptOutcome o = failed.get(i);
            errors[i] = o.error;
            delays[i] = o.delayMs;
            outcomeKinds[i] = o.kind.sql;
        }
        recorded(
                "failed attempts",
                failed,
                db.transaction(
                                "recording " + failed.size() + " failed attempts",
                                tx -> store.fail(tx, ids(failed), tokens(failed), errors, delays, outcomeKinds))
                        .keySet());
    }

    /**
     * Marks the outcomes as recorded, and those the statement did not match as stale: their attempt was no
     * longer current when its outcome arrived (its lease expired and the job was rescued, or an operator
     * ended it), so nothing was written for them; said in the log, never dropped silently.
     */
    private static void recorded(String what, List<AttemptOutcome> outcomes, Collection<Long> matched) {
        List<Long> stale = null;
        Set<Long> written = matched.size() == outcomes.size() ? null : new HashSet<>(matched);
        for (AttemptOutcome o : outcomes) {
            o.recorded = true;
            if (written != null && !written.contains(o.id)) {
                o.stale = true;
                (stale == null ? stale = new ArrayList<>() : stale).add(o.id);
            }
        }
        if (stale != null) {
            log.warn(
                    "{} of {} {} not recorded: their attempts were no longer current (lease expired and the job "
                            + "rescued, or ended by an operator); jobs {}",
                    stale.size(),
                    outcomes.size(),
                    what,
                    stale);
        }
    }

    private static long[] ids(List<AttemptOutcome> os) {
        long[] out = new long[os.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = os.get(i).id;
        }
        return out;
    }

    private static long[] tokens(List<AttemptOutcome> os) {
        long[] out = new long[os.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = os.get(i).token;
        }
        return out;
    }
}
