package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.baton.internal.service.Hooks;
import dev.baton.testkit.PausePoints;
import java.time.Duration;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** L09: a graceful release hands the lease over through a notification, not after a poll or an expiry. */
class HandoffTest extends LeadershipDbTest {
    private static final String NAME = "handoff";

    /** The holder: a 30 s lease, so the "retry when the holder's lease is due to expire" path is far away. */
    private static final LeadershipConfig HOLDER = LeadershipConfig.builder()
            .leaseTtl(Duration.ofSeconds(30))
            .renewInterval(Duration.ofSeconds(5))
            .pollInterval(Duration.ofMillis(100))
            .stopTimeout(Duration.ofSeconds(5))
            .build();
    /** The waiter: polls once an hour, so only a notification can wake it before the holder's lease expires. */
    private static final LeadershipConfig WAITER = LeadershipConfig.builder()
            .leaseTtl(Duration.ofSeconds(1))
            .renewInterval(Duration.ofMillis(200))
            .pollInterval(Duration.ofHours(1))
            .stopTimeout(Duration.ofSeconds(5))
            .build();

    /**
     * A leads with L = 30 s; B waits with a one-hour poll. A stops gracefully; B is elected with the next
     * generation, and B's acquired_at (database clock) is before A's lease would have expired: neither the
     * poll nor the expiry can explain it, only the release notification.
     *
     * <p>Protection removed to see it fail: notification delivery ({@code Notifier.deliver} made to
     * ignore lease payloads). B then slept through the release, and the await for its election timed out
     * (it would have come only at A's expiry, 30 s later).
     */
    @Test
    void L09_gracefulReleaseWakesTheWaitingCandidateByNotification() throws Exception {
        Assumptions.assumeFalse(
                PG.pooled(),
                "LISTEN through a transaction pooler loses notifications (Baton falls "
                        + "back to polling there; see E01_pooledModeFallsBackToPolling)");
        String appB = "l09-b-" + schema;
        HikariDataSource bCoord = pool("l09-b-coord", withParam(PG.jdbcUrl(), "ApplicationName=" + appB), 3);
        Baton a = start(nodeBuilder("l09-a", nodePool("l09-a")));
        Baton b = start(nodeBuilder("l09-b", nodePool("l09-b")).coordinationDataSource(bCoord));
        assertThat(b.notificationsActive()).isTrue();
        Recorder ra = new Recorder();
        Recorder rb = new Recorder();
        Leadership runnerA = a.leadership(NAME, HOLDER, idleTask(), ra).start();
        LeaseGrant ga = ra.awaitElected().grant();
        PausePoints.Pause lost = points.arm(Hooks.Points.CAMPAIGN_LOST);
        b.leadership(NAME, WAITER, idleTask(), rb).start();
        // B's first attempt has run (and lost): it now waits for a notification or A's expiry in ~30 s.
        lost.awaitReached(WAIT);
        lost.release();
        assertThat(rb.elections()).isEmpty();

        long stopAt = System.nanoTime();
        runnerA.stop();
        Recorder.Event elected = rb.awaitElected();
        Recorder.Event revoked = ra.awaitRevoked();

        assertThat(revoked.reason()).isEqualTo(RevocationReason.STOPPED);
        assertThat(elected.grant().generation()).isGreaterThan(ga.generation());
        LeaseHistoryEntry aEntry = historyOf(NAME, ga.generation());
        LeaseHistoryEntry bEntry = historyOf(NAME, elected.grant().generation());
        assertThat(aEntry.endReason()).contains("released");
        assertThat(bEntry.acquiredAt())
                .as("B acquired before A's lease would have expired")
                .isBefore(ga.expiresAt());
        System.out.printf(
                "L09: hand-off %.1f ms from stop(), %.1f ms from A's revocation callback, %d ms on the "
                        + "database clock from release to B's acquisition (A's lease had %d s left)%n",
                ms(elected.nanos() - stopAt),
                ms(elected.nanos() - revoked.nanos()),
                Duration.between(aEntry.endedAt().orElseThrow(), bEntry.acquiredAt())
                        .toMillis(),
                Duration.between(bEntry.acquiredAt(), ga.expiresAt()).toSeconds());
    }

    /**
     * E01: through a transaction pooler the LISTEN probe fails, so notifications are reported inactive and
     * a hand-off still happens, through polling (again well before the holder's lease would have expired).
     *
     * <p>Protection removed to see it fail: the start-up probe ({@code Notifier.runOnce}: the
     * {@code mode == AUTO && !probe(pg)} fallback); the node then reported notifications active
     * through PgBouncer and the first assertion failed.
     */
    @Test
    void E01_pooledModeFallsBackToPolling() throws Exception {
        Assumptions.assumeTrue(PG.pooled(), "only meaningful through a transaction pooler (BATON_POOLED=transaction)");
        // The test pool (12 connections) in every profile: AUTO listens only from a pool of 4 or more, and this
        // test is about what AUTO decides from the server's behaviour, not from the pool's size.
        Baton a = start(nodeBuilder("e01-a", pool).notifications(NotificationMode.AUTO));
        Baton b = start(nodeBuilder("e01-b", pool).notifications(NotificationMode.AUTO));
        assertThat(a.notificationsActive()).isFalse();
        assertThat(b.notificationsActive()).isFalse();
        Recorder ra = new Recorder();
        Recorder rb = new Recorder();
        Leadership runnerA = a.leadership(NAME, HOLDER, idleTask(), ra).start();
        LeaseGrant ga = ra.awaitElected().grant();
        LeadershipConfig polling = LeadershipConfig.builder()
                .leaseTtl(Duration.ofSeconds(1))
                .renewInterval(Duration.ofMillis(200))
                .pollInterval(Duration.ofMillis(200))
                .build();
        b.leadership(NAME, polling, idleTask(), rb).start();
        long stopAt = System.nanoTime();
        runnerA.stop();
        Recorder.Event elected = rb.awaitElected();
        assertThat(elected.grant().generation()).isGreaterThan(ga.generation());
        assertThat(historyOf(NAME, elected.grant().generation()).acquiredAt()).isBefore(ga.expiresAt());
        System.out.printf(
                "E01: pooled hand-off by polling (poll 200 ms) %.1f ms after stop()%n", ms(elected.nanos() - stopAt));
    }
}
