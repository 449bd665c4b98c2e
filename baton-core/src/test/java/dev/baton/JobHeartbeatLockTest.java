package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.internal.service.Hooks;
import dev.baton.testkit.PausePoints;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * One job's completion transaction holds its job row FOR UPDATE until it commits. The batched
 * heartbeat of the node must not wait for that lock: every other running job would then miss its
 * heartbeats and self-stop.
 */
class JobHeartbeatLockTest extends DbTest {
    record Task(String name) {}

    /**
     * Protection checked: SKIP LOCKED in the heartbeat statement (with locked-but-current attempts
     * reported as such). With the heartbeat a plain UPDATE, it waited on the locked row until its
     * bound, no lease was extended, and the unrelated job B self-stopped (the assertion on
     * {@code bCancelled} failed).
     */
    @Test
    void J07_longCompletionTransactionDoesNotStallOtherJobsHeartbeats() throws Exception {
        CountDownLatch bRunning = new CountDownLatch(1);
        AtomicBoolean bCancelled = new AtomicBoolean();
        Duration lease = Duration.ofMillis(1200);
        // A's completion transaction holds a connection for over a lease: the node's other work gets connections of
        // its own (on the user pool profile's two, B's beats would share one with the claims and services).
        Baton b = closeLater(Baton.builder(appPoolOf("w", 6))
                        .schema(schema)
                        .nodeId("w")
                        .testHooks(points::reach)
                        .worker(WorkerConfig.builder()
                                .queue("default", 4)
                                .jobLease(lease)
                                .heartbeatInterval(Duration.ofMillis(150))
                                .pollInterval(Duration.ofMillis(50))
                                .drainTimeout(Duration.ZERO)
                                .build())
                        .handle("long-tx", Task.class, (t, ctx) -> ctx.transaction(tx -> null))
                        .handle("steady", Task.class, (t, ctx) -> {
                            bRunning.countDown();
                            if (ctx.awaitCancellation(Duration.ofMinutes(1))) {
                                bCancelled.set(true);
                            }
                        })
                        .build())
                .start();
        long steady = b.jobs().enqueue(JobRequest.of("steady", new Task("b"))).id();
        assertThat(bRunning.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();

        PausePoints.Pause beforeCommit = points.arm(Hooks.Points.JOB_TX_BEFORE_COMMIT);
        b.jobs().enqueue(JobRequest.of("long-tx", new Task("a")));
        beforeCommit.awaitReached(WAIT);
        Instant lockedAt = dbNow();
        Instant bLeaseBefore = leaseOf(steady);
        // Keep A's row locked for longer than half a lease, measured on the database clock.
        Awaitility.await()
                .atMost(WAIT)
                .pollInterval(Duration.ofMillis(20))
                .until(() -> Duration.between(lockedAt, dbNow()).compareTo(lease) > 0);
        assertThat(leaseOf(steady)).as("B's lease kept being extended").isAfter(bLeaseBefore);
        assertThat(bCancelled)
                .as("B must not self-stop because A holds its row")
                .isFalse();
        beforeCommit.release();
        b.jobs().cancel(steady);
        Awaitility.await().atMost(WAIT).until(bCancelled::get);
    }

    private Instant dbNow() throws Exception {
        try (var c = pool.getConnection();
                ResultSet rs = c.createStatement().executeQuery("SELECT clock_timestamp()")) {
            rs.next();
            return rs.getTimestamp(1).toInstant();
        }
    }

    private Instant leaseOf(long id) throws Exception {
        try (var c = pool.getConnection();
                ResultSet rs = c.createStatement()
                        .executeQuery("SELECT lease_expires_at FROM " + schema + ".job WHERE id = " + id)) {
            rs.next();
            return rs.getTimestamp(1).toInstant();
        }
    }
}
