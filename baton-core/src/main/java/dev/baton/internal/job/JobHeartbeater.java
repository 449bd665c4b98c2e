package dev.baton.internal.job;

import dev.baton.internal.db.BoundedCalls;
import dev.baton.internal.job.RunningAttempt.StopReason;
import dev.baton.internal.service.Hooks;
import dev.baton.internal.service.Service;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeoutException;
import java.util.function.LongSupplier;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps this node's running attempts current: every heartbeat interval it extends the leases of all of
 * them in one bounded statement, and between beats it watches their deadlines. An attempt whose lease
 * could not be confirmed for half the job lease (counted from the send time of its last confirmed beat
 * or claim) is stopped and writes nothing (self-stop); one past its timeout is stopped as timed out;
 * one the database no longer knows as current (rescued, finished elsewhere) is stopped as lost; one
 * whose cancellation was requested is stopped as cancelled.
 */
public final class JobHeartbeater extends Service {
    private static final Logger log = LoggerFactory.getLogger(JobHeartbeater.class);

    private final Map<Long, RunningAttempt> running;
    private final JobStore store;
    private final Hooks hooks;
    private final Duration jobLease;
    private final long interval;
    /** Beats run bounded (a black-holed socket must not hang them), on the coordination pool. */
    private final BoundedCalls calls;
    /** When the next beat is due (ticker nanoseconds). Service thread only (or a test's). */
    private long nextBeat;

    /**
     * @param running the node's running attempts by job id (shared with the worker, which adds and
     *                removes them)
     */
    public JobHeartbeater(
            Map<Long, RunningAttempt> running,
            DataSource coordination,
            JobStore store,
            Hooks hooks,
            Duration jobLease,
            Duration heartbeatInterval,
            LongSupplier ticker) {
        super("baton-job-heartbeat", ticker);
        this.running = running;
        this.store = store;
        this.hooks = hooks;
        this.jobLease = jobLease;
        this.interval = heartbeatInterval.toNanos();
        this.calls = new BoundedCalls(coordination, "baton-job-heartbeat-calls");
        this.nextBeat = ticker.getAsLong() + interval;
    }

    @Override
    protected void beforeFirstPass() {
        nextBeat = ticker.getAsLong() + interval;
    }

    /**
     * Stops the attempts past their deadline or timeout, beats if a beat is due, and returns the time
     * until the next thing to do: the next beat or the earliest deadline or timeout of a running attempt.
     */
    @Override
    protected long runOnce() {
        long now = ticker.getAsLong();
        long wakeAt = nextBeat;
        for (RunningAttempt a : running.values()) {
            if (a.stopReason != null || a.finished) {
                continue; // a finished attempt only waits for its outcome to be recorded
            }
            if (now - a.deadline() >= 0) {
                if (a.stop(StopReason.DEADLINE)) {
                    log.warn(
                            "job {} attempt {} self-stopped: its lease could not be confirmed for half the "
                                    + "job lease ({}); it writes nothing and will be rescued",
                            a.job.id(),
                            a.job.attempt(),
                            jobLease.dividedBy(2));
                }
            } else if (a.hasTimeout && now - a.timeoutAt >= 0) {
                a.stop(StopReason.TIMEOUT);
            } else {
                wakeAt = earliest(wakeAt, a.deadline());
                if (a.hasTimeout) {
                    wakeAt = earliest(wakeAt, a.timeoutAt);
                }
            }
        }
        if (now - nextBeat >= 0) {
            long send = ticker.getAsLong();
            beat(send);
            nextBeat = send + interval;
            return 0; // look at the deadlines again at once
        }
        return wakeAt - now;
    }

    @Override
    protected void afterLastPass() {
        calls.close();
    }

    private static long earliest(long a, long b) {
        return a - b <= 0 ? a : b;
    }

    private void beat(long send) {
        List<RunningAttempt> live = new ArrayList<>();
        for (RunningAttempt a : running.values()) {
            if (a.stopReason == null) {
                live.add(a);
            }
        }
        if (live.isEmpty()) {
            return;
        }
        long[] ids = new long[live.size()];
        long[] tokens = new long[live.size()];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = live.get(i).job.id();
            tokens[i] = live.get(i).job.token();
        }
        hooks.reach(Hooks.Points.JOB_HEARTBEAT_BEFORE_SEND);
        Map<Long, JobStore.Beat> current;
        try {
            current = calls.call(
                    c -> store.heartbeat(c, jobLease.toMillis(), ids, tokens, BoundedCalls.serverMillis(interval)),
                    interval);
        } catch (TimeoutException | SQLException | RuntimeException e) {
            log.warn(
                    "heartbeat of {} running jobs not confirmed ({}); handlers self-stop at half the job lease "
                            + "after their last confirmed beat",
                    ids.length,
                    e instanceof TimeoutException ? "no answer" : e.getMessage());
            return;
        }
        for (RunningAttempt a : live) {
            JobStore.Beat beat = current.get(a.job.id());
            if (beat == JobStore.Beat.LOCKED) {
                continue; // in its own completion transaction: still current, lease not extended
            }
            if (beat == null) {
                // A handler that has returned is not stopped: its outcome may have been recorded since the
                // attempts were listed, and if not, its write is fenced (the completer says if it matched).
                if (!a.finished && running.get(a.job.id()) == a && a.stop(StopReason.LOST)) {
                    log.warn(
                            "job {} attempt {} is no longer current (rescued or finished elsewhere); its handler is "
                                    + "cancelled and its outcome will not be recorded",
                            a.job.id(),
                            a.job.attempt());
                }
            } else {
                a.confirmedSendNanos = send; // the database extended the lease no earlier than this
                if (beat == JobStore.Beat.EXTENDED_CANCEL) {
                    a.stop(StopReason.CANCEL_REQUESTED);
                }
            }
        }
    }
}
