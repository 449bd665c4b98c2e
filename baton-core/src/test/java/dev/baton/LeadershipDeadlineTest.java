package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.internal.service.Hooks;
import dev.baton.testkit.PausePoints;
import java.time.Duration;
import org.junit.jupiter.api.Test;

/**
 * The leadership counterpart of J07's timing test, on a manual clock: a slow but answered renewal
 * restarts the local deadline from the time it was <em>sent</em>, and the leader stops exactly at that
 * send time + L/2, not a nanosecond earlier, never later (however late the answer arrived).
 */
class LeadershipDeadlineTest extends LeadershipDbTest {
    private static final Duration L = Duration.ofSeconds(20);
    private static final Duration R = Duration.ofSeconds(4);
    private static final long SLOW_ANSWER = Duration.ofMillis(3500).toNanos();

    /**
     * Protection removed and seen failing: the deadline counted from the send time. With
     * {@code Leases.renew} reading the clock after the statement answered (the grant's
     * {@code confirmedSendNanos} = arrival time), the grant's deadline was 3.5 s later than send + L/2,
     * {@code isLeader()} was still true there, and the runner renewed instead of stepping down.
     */
    @Test
    void L14_slowButAnsweredRenewalRestartsTheDeadlineFromItsSendTime() throws Exception {
        JobSelfStopTest.ManualTicker clock = new JobSelfStopTest.ManualTicker();
        Baton node = nodeWithTicker(nodeBuilder("deadline-node", appPool), clock);
        LeadershipConfig config = LeadershipConfig.builder()
                .leaseTtl(L)
                .renewInterval(R)
                .pollInterval(Duration.ofMillis(100))
                .build();
        Recorder recorder = new Recorder();
        Leadership runner = node.leadership("deadline", config, idleTask(), recorder);
        PausePoints.Pause answered = points.arm(Hooks.Points.RENEW_ANSWERED);
        runner.start();
        long s0 = recorder.awaitElected().grant().confirmedSendNanos();

        // The first renewal is sent at s1 = s0 + R; its answer arrives 3.5 s later.
        long s1 = s0 + R.toNanos();
        clock.set(s1);
        runner.signal();
        answered.awaitReached(WAIT);
        clock.set(s1 + SLOW_ANSWER);
        PausePoints.Pause nextSend = points.arm(Hooks.Points.RENEW_BEFORE_SEND);
        answered.release();

        // The next renewal is due at s1 + R; it is held before it is sent, as if the database went silent.
        clock.set(s1 + R.toNanos());
        runner.signal();
        nextSend.awaitReached(WAIT);
        long deadline = s1 + L.toNanos() / 2;
        assertThat(runner.currentGrant().orElseThrow().localDeadlineNanos()).isEqualTo(deadline);
        clock.set(deadline - 1);
        assertThat(runner.isLeader()).as("one nanosecond before send + L/2").isTrue();
        clock.set(deadline);
        assertThat(runner.isLeader()).as("at send + L/2").isFalse();
        nextSend.release();
        Recorder.Event revoked = recorder.awaitRevoked();
        assertThat(revoked.reason()).isEqualTo(RevocationReason.DEADLINE);
        assertThat(revoked.grant().generation())
                .isEqualTo(recorder.awaitElected().grant().generation());
    }
}
