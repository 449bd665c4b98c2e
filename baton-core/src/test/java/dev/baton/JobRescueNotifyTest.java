package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.internal.db.Jdbc;
import dev.baton.internal.service.Hooks;
import java.sql.Connection;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * J02 (rescue side): a rescued job is claimed at once by an idle worker: the rescue notifies the queue, so an idle node
 * does not wait for its next poll (which here is an hour away).
 *
 * <p>Protection removed to see it fail: the {@code pg_notify} of the rescue statement ({@code job.sql},
 * name: rescue; the {@code notified} CTE never evaluated): the job was rescued to 'available' but the idle
 * node did not claim it, and the latch timed out.
 */
class JobRescueNotifyTest extends JobTestSupport {

    @Test
    void J02_rescuedJobWakesAnIdleWorkerAtOnce() throws Exception {
        Assumptions.assumeFalse(PG.pooled(), "LISTEN cannot work through transaction pooling: workers only poll there");
        CountDownLatch ran = new CountDownLatch(1);
        Baton node = startNode(nodeBuilder("a", pool, Hooks.NONE)
                .worker(fastWorker("q", 1).pollInterval(Duration.ofHours(1)).build())
                .handle("k", Payload.class, (p, ctx) -> ran.countDown()));
        assertThat(node.notificationsActive()).isTrue();
        // A dead worker's attempt: running, its lease expiring in 1 s, long after the idle node's last claim.
        try (Connection c = pool.getConnection()) {
            Jdbc.execute(
                    c,
                    "INSERT INTO " + schema + ".job (queue, kind, payload, priority, state, run_at, max_attempts, "
                            + "attempt, attempt_token, lease_expires_at, claimed_by) VALUES ('q', 'k', '{\"n\": 1}', 50, 'running', "
                            + "clock_timestamp(), 25, 1, -1, clock_timestamp() + interval '1 second', 'dead-node')");
        }
        assertThat(ran.await(WAIT.toMillis(), TimeUnit.MILLISECONDS))
                .as("rescued job claimed by the idle node")
                .isTrue();
    }
}
