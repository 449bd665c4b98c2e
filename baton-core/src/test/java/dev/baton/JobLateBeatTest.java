package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.internal.service.Hooks;
import dev.baton.testkit.PausePoints;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/** J07: a heartbeat that reaches the database after the attempt's lease expired does not revive it. */
class JobLateBeatTest extends JobBehaviourTestBase {

    /**
     * The heartbeater is parked just before it sends a beat for a running attempt; the test waits until
     * the attempt's lease has expired on the database clock (no rescuer runs: its interval is a minute),
     * then lets the beat go. The beat must not extend the expired lease: the job stays free for a rescue,
     * and a cluster-wide job limit, which counts only live leases, cannot find the place it already gave
     * away taken again. The attempt is told to stop.
     *
     * <p>Protection removed and seen failing: {@code lease_expires_at > clock_timestamp()} in the
     * {@code heartbeat} statement: the late beat set a new lease ("the late beat revived the lease").
     */
    @Test
    void J07_aBeatArrivingAfterTheLeaseExpiredDoesNotReviveIt() throws Exception {
        CountDownLatch running = new CountDownLatch(1);
        CountDownLatch stopped = new CountDownLatch(1);
        Baton node = start(nodeBuilder("late-beat")
                .worker(fastWorker("default", 1)
                        .rescueInterval(Duration.ofMinutes(1))
                        .build())
                .handle("hold", Item.class, (item, ctx) -> {
                    running.countDown();
                    while (!ctx.awaitCancellation(Duration.ofMillis(20))) {
                        // working until told to stop
                    }
                    stopped.countDown();
                }));
        long id = node.jobs().enqueue(JobRequest.of("hold", new Item("h"))).id();
        assertThat(running.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();

        PausePoints.Pause beat = points.arm(Hooks.Points.JOB_HEARTBEAT_BEFORE_SEND);
        beat.awaitReached(WAIT);
        Awaitility.await()
                .atMost(WAIT)
                .pollInterval(Duration.ofMillis(20))
                .until(() -> count("SELECT count(*) FROM " + schema + ".job WHERE id = " + id
                                + " AND lease_expires_at <= clock_timestamp()")
                        == 1);
        long token = row(id).token();
        beat.release();

        assertThat(stopped.await(WAIT.toMillis(), TimeUnit.MILLISECONDS))
                .as("the attempt was told to stop")
                .isTrue();
        Row after = row(id);
        assertThat(after.state()).isEqualTo("running");
        assertThat(after.token()).as("not rescued meanwhile").isEqualTo(token);
        assertThat(count("SELECT count(*) FROM " + schema + ".job WHERE id = " + id
                        + " AND lease_expires_at <= clock_timestamp()"))
                .as("the late beat revived the lease")
                .isEqualTo(1);
    }
}
