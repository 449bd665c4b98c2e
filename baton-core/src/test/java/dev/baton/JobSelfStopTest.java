package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.internal.maintenance.Maintenance;
import dev.baton.internal.service.Hooks;
import dev.baton.testkit.FaultProxy;
import dev.baton.testkit.PausePoints;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.LongSupplier;
import javax.sql.DataSource;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * J07: heartbeats fail indefinitely while the handler runs. The handler is cancelled at half a job
 * lease after the send time of the last confirmed heartbeat, not before; the attempt writes nothing
 * and the rescuer requeues the job once its lease has expired on the database clock. A slow but
 * answered beat restarts the deadline from its send time.
 *
 * <p>Construction. The node's coordination data source (heartbeats) goes through a {@link FaultProxy};
 * its main pool (claims, completions) is direct, so only heartbeats fail. For the exact "at half a
 * lease, not before" the node runs on a manual ticker ({@code Baton.Builder#ticker}): the worker's
 * deadlines, beat schedule and send times are all read from it, so nothing happens on its own and the
 * test moves time in steps. The pause point {@code JOB_HEARTBEAT_BEFORE_SEND} is the synchronisation:
 * the heartbeater checks every attempt's deadline at the top of its loop and, when a beat is due, reads
 * the send time from the ticker and reaches the pause point before sending. So when it parks there
 * with the ticker at t, it has already checked the deadline at t (and the send time of the beat is
 * t); when it parks there again, the previous beat has been fully processed. Only real-time bounds
 * remain real (each beat call is bounded to one interval of wall time; the database lease is wall
 * time), and the test never asserts on wall-clock durations.
 */
class JobSelfStopTest extends JobBehaviourTestBase {
    /** L = 3 s, R = 500 ms on the manual ticker: L/2 = 1.5 s > 2R = 1 s. R also bounds each beat call. */
    private static final Duration LEASE = Duration.ofSeconds(3);

    private static final Duration BEAT = Duration.ofMillis(500);
    private static final long R = BEAT.toNanos();
    private static final long HALF_LEASE = LEASE.toNanos() / 2;
    private static final long T0 = 1_000_000_000_000L;

    /** The worker's clock in these tests: moves only when the test moves it. */
    static final class ManualTicker implements LongSupplier {
        private final AtomicLong now = new AtomicLong(T0);

        @Override
        public long getAsLong() {
            return now.get();
        }

        void set(long nanos) {
            now.set(nanos);
        }
    }

    private final CountDownLatch started = new CountDownLatch(1);
    private final CountDownLatch cancelled = new CountDownLatch(1);
    private final AtomicReference<JobContext> firstAttempt = new AtomicReference<>();
    private final AtomicLong cancelSeenAt = new AtomicLong();
    private final List<Integer> attempts = new CopyOnWriteArrayList<>();
    private final CountDownLatch finish = new CountDownLatch(1);

    /**
     * Protections removed and seen failing:
     * <ul>
     *   <li>the self-stop (the {@code now - a.deadline() >= 0} branch in Worker.heartbeatLoop): the
     *       handler was never cancelled, the wait for cancellation at the deadline timed out;</li>
     *   <li>half the lease (deadline = last confirmed send + the whole job lease): not cancelled at
     *       s1 + L/2, same failure;</li>
     *   <li>"not before" (deadline = last confirmed send + L/4): cancelled already when the ticker stood
     *       at s1 + L/2 - 1 ns, "cancelled before half a lease" failed;</li>
     *   <li>"writes nothing" (a DEADLINE stop recorded like a failed attempt, retryOrFail): the job
     *       was back to available with an error before the rescue, "still running with its token"
     *       failed.</li>
     * </ul>
     */
    @Test
    void J07_heartbeatsFailIndefinitely_handlerCancelledAtHalfLeaseNotBefore_attemptWritesNothing() throws Exception {
        ManualTicker ticker = new ManualTicker();
        FaultProxy proxy = closeLater(FaultProxy.start(PG.host(), PG.port()));
        Baton node = startNode(ticker, proxy);
        Jobs jobs = node.jobs();
        long id = jobs.enqueue(JobRequest.of("hold", new Item("h"))).id();
        assertThat(started.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
        // Claimed with the ticker at T0: the attempt's first deadline is T0 + L/2.
        Row claimed = row(id);
        assertThat(claimed.state()).isEqualTo("running");

        // Beat 1, answered: sent at s1 = T0 + R.
        long s1 = T0 + R;
        PausePoints.Pause beat1 = points.arm(Hooks.Points.JOB_HEARTBEAT_BEFORE_SEND);
        ticker.set(s1);
        beat1.awaitReached(WAIT);
        beat1.release();

        // Beat 2 is due at s1 + R. When the heartbeater reaches the pause point again, beat 1 has been
        // answered and processed. From here on every beat is lost (black hole).
        PausePoints.Pause beat2 = points.arm(Hooks.Points.JOB_HEARTBEAT_BEFORE_SEND);
        ticker.set(s1 + R);
        beat2.awaitReached(WAIT);
        assertThat(row(id).leaseExpiresAt())
                .as("beat 1 extended the lease in the database")
                .isAfter(claimed.leaseExpiresAt());
        proxy.blackHole();
        beat2.release();

        // One nanosecond before half a lease after s1: the heartbeater checks deadlines at this instant
        // and (a beat being due, as L/2 > 2R) then parks before sending. Not cancelled yet.
        long deadline = s1 + HALF_LEASE;
        PausePoints.Pause justBefore = points.arm(Hooks.Points.JOB_HEARTBEAT_BEFORE_SEND);
        ticker.set(deadline - 1);
        awaitBeatOrCancellation(justBefore);
        assertThat(firstAttempt.get().isCancelled())
                .as("cancelled before half a lease")
                .isFalse();
        assertThat(cancelled.getCount()).isEqualTo(1);

        // At half a lease exactly: cancelled, while the ticker stays at the deadline.
        ticker.set(deadline);
        justBefore.release();
        assertThat(cancelled.await(WAIT.toMillis(), TimeUnit.MILLISECONDS))
                .as("self-stopped at half a lease")
                .isTrue();
        assertThat(cancelSeenAt.get()).isEqualTo(deadline);

        // The attempt records nothing, although its handler returned normally. Ordering fact: with one
        // slot, the marker job is claimed only after the first attempt's execution has ended, and
        // outcomes are recorded in order; so once the marker has succeeded, anything the first attempt
        // queued would have been recorded too.
        long marker = jobs.enqueue(JobRequest.of("marker", new Item("m"))).id();
        awaitState(jobs, marker, JobState.SUCCEEDED);
        Row after = row(id);
        assertThat(after.state())
                .as("still running with its token until rescue")
                .isEqualTo("running");
        assertThat(after.token()).isEqualTo(claimed.token());
        assertThat(after.attempt()).isEqualTo(1);
        assertThat(after.errorsJson()).isEqualTo("[]");
        assertThat(after.finishedAt()).isNull();

        // Rescue: once the lease expires on the database clock the job is requeued with a stall counted,
        // and runs again (attempt 2 returns at once).
        proxy.heal();
        Maintenance rescuer = maintenance(config());
        Awaitility.await().atMost(WAIT).pollInterval(Duration.ofMillis(50)).until(() -> {
            rescuer.rescueOnce();
            return row(id).stallCount() == 1;
        });
        JobInfo done = awaitState(jobs, id, JobState.SUCCEEDED);
        assertThat(done.attempt()).isEqualTo(2);
        assertThat(done.errors()).singleElement().satisfies(e -> {
            assertThat(e.errorClass()).isEqualTo("stalled");
            assertThat(e.attempt()).isEqualTo(1);
        });
        assertThat(attempts).containsExactly(1, 2);
    }

    /**
     * A slow beat: sent at s1, answered when the ticker stands at s1 + R - 1 ns (through 40 ms of proxy
     * latency each way, well within the one-interval bound of the call, which counts the borrow's validation
     * round trip too). The deadline restarts from the
     * send time: not cancelled at s1 + L/2 - 1 ns (past the deadline the previous beat had set), and
     * cancelled at s1 + L/2 (not at the answer time + L/2). A first beat at normal speed opens the
     * heartbeat connection, so the slow beat pays only for its own round trip.
     *
     * <p>Protections removed and seen failing: measuring the deadline from the send time (Worker.beat
     * set {@code confirmedSendNanos = ticker.getAsLong()} after the answer instead of {@code send}):
     * the handler was not cancelled at s1 + L/2 and "cancelled at the send time of the slow beat + L/2"
     * failed. With the restart removed altogether (confirmedSendNanos never updated) it was cancelled
     * at the claim's deadline: "answered beats restarted the deadline" failed.
     */
    @Test
    void J07_slowButAnsweredBeatRestartsDeadlineFromItsSendTime() throws Exception {
        ManualTicker ticker = new ManualTicker();
        FaultProxy proxy = closeLater(FaultProxy.start(PG.host(), PG.port()));
        Baton node = startNode(ticker, proxy);
        long id = node.jobs().enqueue(JobRequest.of("hold", new Item("h"))).id();
        assertThat(started.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
        Row claimed = row(id);

        // Beat 0 at T0 + R, at normal speed.
        PausePoints.Pause beat0 = points.arm(Hooks.Points.JOB_HEARTBEAT_BEFORE_SEND);
        ticker.set(T0 + R);
        beat0.awaitReached(WAIT);
        beat0.release();

        // Beat 1 at s1: when the heartbeater parks before sending it, beat 0 has been processed.
        long s1 = T0 + 2 * R;
        PausePoints.Pause beat1 = points.arm(Hooks.Points.JOB_HEARTBEAT_BEFORE_SEND);
        ticker.set(s1);
        beat1.awaitReached(WAIT);
        Row afterBeat0 = row(id);
        assertThat(afterBeat0.leaseExpiresAt()).as("beat 0 was answered").isAfter(claimed.leaseExpiresAt());
        // Beat 1 has read its send time (s1). It is slow: real latency on the wire, and by the time it is
        // answered the ticker stands just under one interval later.
        proxy.latency(Duration.ofMillis(40));
        ticker.set(s1 + R - 1);
        beat1.release();

        PausePoints.Pause beat2 = points.arm(Hooks.Points.JOB_HEARTBEAT_BEFORE_SEND);
        ticker.set(s1 + R);
        awaitBeatOrCancellation(beat2);
        assertThat(firstAttempt.get().isCancelled())
                .as("answered beats restarted the deadline")
                .isFalse();
        assertThat(row(id).leaseExpiresAt()).as("the slow beat was answered").isAfter(afterBeat0.leaseExpiresAt());
        proxy.blackHole();
        beat2.release();

        long deadline = s1 + HALF_LEASE;
        assertThat(deadline - 1).as("past beat 0's deadline").isGreaterThan(T0 + R + HALF_LEASE);
        PausePoints.Pause justBefore = points.arm(Hooks.Points.JOB_HEARTBEAT_BEFORE_SEND);
        ticker.set(deadline - 1);
        awaitBeatOrCancellation(justBefore);
        assertThat(firstAttempt.get().isCancelled())
                .as("the slow beat restarted the deadline")
                .isFalse();

        ticker.set(deadline);
        justBefore.release();
        assertThat(cancelled.await(WAIT.toMillis(), TimeUnit.MILLISECONDS))
                .as("cancelled at the send time of the slow beat + L/2")
                .isTrue();
        assertThat(cancelSeenAt.get()).isEqualTo(deadline);
        proxy.heal();
    }

    /**
     * On the real clock (L = 5 s, R = 250 ms): once the heartbeat connection is established, every
     * beat is slowed by proxy latency (40 ms each way, well under one interval, which bounds each call)
     * but answered. The handler keeps running across twelve more answered beats, which the database
     * shows as twelve new lease_expires_at values; beats are sent at least one interval apart, so they
     * span more than half a lease (2.5 s) after the claim: each answered beat restarted the deadline.
     * (Half a lease is ten intervals, so a beat delayed by a loaded machine — seen with L = 2.5 s — is
     * not mistaken for an unanswered one.)
     * Then the handler finishes and the job succeeds with no error.
     *
     * <p>Protection removed and seen failing: the restart (confirmedSendNanos never updated by an
     * answered beat): the handler was cancelled at half a lease after its claim, "cancelled while its
     * beats were answered" failed.
     */
    @Test
    void J07_slowButAnsweredBeatsKeepHandlerRunningPastHalfLease() throws Exception {
        FaultProxy proxy = closeLater(FaultProxy.start(PG.host(), PG.port()));
        DataSource coordination = proxiedPool("j07-coord", proxy, 4);
        Baton node = start(nodeBuilder("j07-node")
                // The node's own heartbeat (bounded by its interval) must not time out through the slow link:
                // an abandoned call closes its connection, and the job heartbeats share the pool.
                .nodeHeartbeat(Duration.ofSeconds(2))
                .coordinationDataSource(coordination)
                .notifications(NotificationMode.POLL)
                .worker(WorkerConfig.builder()
                        .queue("default", 1)
                        .jobLease(Duration.ofMillis(5000))
                        .heartbeatInterval(Duration.ofMillis(250))
                        .pollInterval(POLL)
                        .build())
                .handle("hold", Item.class, (item, ctx) -> {
                    firstAttempt.compareAndSet(null, ctx);
                    attempts.add(ctx.attempt());
                    started.countDown();
                    while (!finish.await(50, TimeUnit.MILLISECONDS) && !ctx.isCancelled()) {
                        // working; stops when told to finish or cancelled
                    }
                    if (ctx.isCancelled()) {
                        cancelled.countDown();
                    }
                }));
        closeLater(proxy::heal);
        long id = node.jobs().enqueue(JobRequest.of("hold", new Item("h"))).id();
        assertThat(started.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
        Instant claimLease = row(id).leaseExpiresAt();
        // The first beat opens the heartbeat connection (several round trips); then the wire slows down.
        Awaitility.await()
                .atMost(WAIT)
                .pollInterval(Duration.ofMillis(10))
                .until(() -> !claimLease.equals(row(id).leaseExpiresAt()));
        proxy.latency(Duration.ofMillis(40));
        Instant before = row(id).leaseExpiresAt();

        Set<Instant> slowBeats = ConcurrentHashMap.newKeySet();
        Awaitility.await().atMost(WAIT).pollInterval(Duration.ofMillis(20)).until(() -> {
            Row r = row(id);
            if ("running".equals(r.state()) && r.leaseExpiresAt().isAfter(before)) {
                slowBeats.add(r.leaseExpiresAt());
            }
            return slowBeats.size() >= 12 || firstAttempt.get().isCancelled();
        });
        assertThat(firstAttempt.get().isCancelled())
                .as("cancelled while its beats were answered")
                .isFalse();
        assertThat(slowBeats).hasSizeGreaterThanOrEqualTo(12);
        finish.countDown();
        JobInfo done = awaitState(node.jobs(), id, JobState.SUCCEEDED);
        assertThat(done.attempt()).isEqualTo(1);
        assertThat(done.errors()).isEmpty();
        assertThat(cancelled.getCount()).isEqualTo(1);
        assertThat(attempts).containsExactly(1);
    }

    /**
     * Waits until the heartbeater parks at {@code beat} or the attempt is cancelled (a cancelled attempt
     * is no longer beaten, so the pause point would not be reached).
     */
    private void awaitBeatOrCancellation(PausePoints.Pause beat) {
        Awaitility.await()
                .atMost(WAIT)
                .pollInterval(Duration.ofMillis(5))
                .until(() -> beat.parkedCount() == 1 || firstAttempt.get().isCancelled());
    }

    private WorkerConfig config() {
        return WorkerConfig.builder()
                .queue("default", 1)
                .jobLease(LEASE)
                .heartbeatInterval(BEAT)
                .pollInterval(POLL)
                .rescueInterval(Duration.ofMillis(200))
                .drainTimeout(Duration.ZERO)
                .build();
    }

    /**
     * A node whose heartbeats (coordination data source) go through {@code proxy}, on the manual
     * ticker. drainTimeout 0: the drain deadline is read from the same frozen ticker. Before the node
     * is closed the proxy is healed (registered after the node, so it runs first).
     */
    private Baton startNode(ManualTicker ticker, FaultProxy proxy) {
        DataSource coordination = proxiedPool("j07-coord", proxy, 4);
        Baton.Builder b = nodeBuilder("j07-node")
                .coordinationDataSource(coordination)
                .notifications(NotificationMode.POLL)
                // Leadership of maintenance also reads the ticker: keep its renewals (3 s) beyond the
                // steps these tests take, so it never renews through the black hole.
                .maintenance(LeadershipConfig.defaults())
                .worker(config())
                .handle("hold", Item.class, (item, ctx) -> {
                    attempts.add(ctx.attempt());
                    if (ctx.attempt() > 1) {
                        return; // the rerun after rescue
                    }
                    firstAttempt.set(ctx);
                    started.countDown();
                    while (!ctx.awaitCancellation(Duration.ofMillis(100))) {
                        // waits for cancellation
                    }
                    cancelSeenAt.set(ticker.getAsLong());
                    cancelled.countDown();
                    // and returns normally: a self-stopped attempt must record nothing even so
                })
                .handle("marker", Item.class, (item, ctx) -> {});
        Baton node = start(b, ticker);
        closeLater(proxy::heal);
        return node;
    }
}
