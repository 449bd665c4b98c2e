package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.internal.service.Hooks;
import dev.baton.testkit.PausePoints;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** J03: a handler's rows and the attempt's completion commit together or not at all. */
class JobTransactionTest extends JobTestSupport {
    private static final int ROWS = 3;

    /**
     * J03: the handler writes its rows in {@code ctx.transaction}; the transaction (rows + completion)
     * is paused just before COMMIT, its backend is terminated (the worker "dies before commit"), and
     * the COMMIT is released into the dead connection. Nothing of attempt 1 is committed: no rows, job
     * not completed. After the lease expires the job is rescued and attempt 2 commits rows and
     * completion together: exactly one committed copy of the rows, and the job succeeded.
     *
     * <p>Protection removed to see it fail: in {@code Worker.RunningAttempt#transaction}, an extra
     * {@code c.commit()} right after {@code work.apply(c)} (the handler's rows committed on their own,
     * the completion separately). Attempt 1's rows then survived the termination and attempt 2 wrote a
     * second copy: the assertion on rows of attempt 1 (and on one copy) failed.
     */
    @Test
    void J03_rowsAndCompletionCommitTogetherOrNotAtAll() throws Exception {
        createEffectTable(false);
        CompletableFuture<Throwable> firstAttempt = new CompletableFuture<>();
        // The completion transaction holds the job row's lock (fence FOR UPDATE), so heartbeats of the
        // paused attempt block on it and the worker would self-stop (interrupting the pause) after half
        // the lease. Pause the heartbeater too: the whole worker is stalled before COMMIT.
        PausePoints.Pause heartbeats = points.armAll(Hooks.Points.JOB_HEARTBEAT_BEFORE_SEND);
        PausePoints.Pause beforeCommit = points.arm(Hooks.Points.JOB_TX_BEFORE_COMMIT);
        var ownPool = ownPool("j03-node", 8);
        WorkerConfig config = fastWorker("default", 1).build();
        Baton node = startNode(nodeBuilder("j03-node", ownPool, points::reach)
                .worker(config)
                .handle("rows", Payload.class, (p, ctx) -> {
                    try {
                        ctx.transaction(tx -> {
                            for (int i = 0; i < ROWS; i++) {
                                insertEffect(tx, ctx.jobId(), ctx.attempt(), "j03-node", i);
                            }
                            return null;
                        });
                    } catch (RuntimeException e) {
                        if (ctx.attempt() == 1) {
                            firstAttempt.complete(e);
                        }
                        throw e;
                    }
                    if (ctx.attempt() == 1) {
                        firstAttempt.complete(null);
                    }
                }));
        long id = node.jobs().enqueue(JobRequest.of("rows", new Payload(1))).id();
        beforeCommit.awaitReached(WAIT);

        // The worker dies before COMMIT: its transaction's backend is terminated by the server.
        int pid = idleInTransactionBackend();
        try (Connection c = pool.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT pg_terminate_backend(?)")) {
            ps.setInt(1, pid);
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next() && rs.getBoolean(1))
                        .as("terminated backend " + pid)
                        .isTrue();
            }
        }
        beforeCommit.release();
        Throwable failure = firstAttempt.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        assertThat(failure).as("attempt 1's commit into a dead connection").isNotNull();
        System.out.println("J03: attempt 1's transaction failed with " + failure);
        assertThat(count("SELECT count(*) FROM " + schema + ".effect"))
                .as("rows of attempt 1")
                .isZero();
        JobRow afterDeath = row(id);
        assertThat(afterDeath.state()).as("job not completed by attempt 1").isNotEqualTo("succeeded");
        assertThat(afterDeath.attempt()).isEqualTo(1);
        heartbeats.release();

        // The lease expires (database clock), the maintenance leader rescues it, attempt 2 runs.
        long released = System.nanoTime();
        awaitState(id, "succeeded");
        System.out.printf("J03: rescued and re-run in %d ms%n", (System.nanoTime() - released) / 1_000_000);
        JobInfo info = node.jobs().get(id).orElseThrow();
        assertThat(info.attempt()).isEqualTo(2);
        assertThat(info.stallCount()).isEqualTo(1);
        assertThat(count("SELECT count(*) FROM " + schema + ".effect"))
                .as("one committed copy")
                .isEqualTo(ROWS);
        assertThat(count("SELECT count(*) FROM " + schema + ".effect WHERE attempt = 2"))
                .isEqualTo(ROWS);
        assertThat(count("SELECT count(DISTINCT n) FROM " + schema + ".effect")).isEqualTo(ROWS);
    }

    /** The backend of the paused completion transaction: idle in transaction after the completion. */
    private int idleInTransactionBackend() throws Exception {
        String like = "%UPDATE \"" + schema + "\".job j%SET state = 'succeeded'%";
        try (Connection c = pool.getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "SELECT pid FROM pg_stat_activity WHERE state = 'idle in transaction' AND query LIKE ?")) {
            ps.setString(1, like);
            try (ResultSet rs = ps.executeQuery()) {
                assertThat(rs.next())
                        .as("an idle-in-transaction backend whose last statement is the completion")
                        .isTrue();
                int pid = rs.getInt(1);
                assertThat(rs.next()).as("exactly one such backend").isFalse();
                return pid;
            }
        }
    }
}
