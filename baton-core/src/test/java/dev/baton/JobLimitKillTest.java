package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.internal.service.Hooks;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;

/** J18: the holder of a limited job's place is paused (SIGSTOP), then killed (SIGKILL). */
class JobLimitKillTest extends JobTestSupport {

    /**
     * J18: queue {@code default} is limited to one running job. A worker in a JVM of its own (J02's
     * child) claims job A and blocks; job B waits. The child is frozen with SIGSTOP, so A's lease is no
     * longer renewed. A node in this JVM starts B only once A's attempt lease has expired on the database
     * clock (B's attempted_at is at or after A's lease end, read back from A's rescue record), not before;
     * a watcher polling the live holders of the queue throughout never sees more than one; after SIGKILL,
     * A is rescued and run again, and both jobs end succeeded.
     *
     * <p>Protection removed to see it fail: the holders' count in claim_limited (the "used" CTE's join got
     * {@code AND false}, so the room was always the full limit). The node in this JVM then started B while
     * A was still held, and the assertion that B started at or after the end of A's lease failed.
     */
    @Test
    void J18_pausedHoldersPlaceFreesAfterItsLeaseOnTheDatabaseClockNotBeforeAndNeverTwice() throws Exception {
        createEffectTable(false);
        var own = ownPool("j18-node", 6);
        Baton node = nodeBuilder("j18-node", own, Hooks.NONE)
                .jobLimit(JobLimit.perQueue("default", 1))
                .worker(fastWorker("default", 2).build())
                .handle(
                        "external",
                        Map.class,
                        (p, ctx) -> ctx.transaction(tx -> {
                            insertEffect(tx, ctx.jobId(), ctx.attempt(), "j18-node", ((Number) p.get("n")).intValue());
                            return null;
                        }))
                .build();
        closeLater(node);
        node.jobs().setLimit(JobLimit.perQueue("default", 1)); // before the child starts: it claims limited too
        long a = node.jobs().enqueue(JobRequest.of("external", Map.of("n", 1))).id();

        Process child = ChildNode.start(JobWorkerProcess.class, PG, schema, "j18-child");
        AtomicBoolean stopWatch = new AtomicBoolean();
        AtomicLong maxRunning = new AtomicLong();
        Thread watcher = new Thread(() -> watch(stopWatch, maxRunning), "j18-watcher");
        try {
            CompletableFuture<Long> effect = new CompletableFuture<>();
            List<String> output = new ArrayList<>();
            ChildNode.read(child, "j18-child", "EFFECT ", effect, output);
            assertThat(effect.get(WAIT.toMillis() * 2, TimeUnit.MILLISECONDS)).isEqualTo(a);
            watcher.setDaemon(true);
            watcher.start();

            long b = node.jobs()
                    .enqueue(JobRequest.of("external", Map.of("n", 2)))
                    .id();
            node.start(); // sets the limit again (same value) and claims: B must wait for A's place
            ChildNode.signal(child, "STOP");
            awaitState(b, "succeeded");

            assertThat(count("SELECT count(*) FROM " + schema + ".job b, " + schema + ".job a WHERE b.id = " + b
                            + " AND a.id = " + a + " AND b.attempted_at >= CASE WHEN a.errors = '[]'::jsonb THEN"
                            + " a.lease_expires_at ELSE (substring(a.errors -> 0 ->> 'message' from"
                            + " 'expired at (.+) without'))::timestamptz END"))
                    .as("B started at or after the end of A's lease (database clock)")
                    .isEqualTo(1);
            ChildNode.signal(child, "KILL");
            assertThat(child.waitFor(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
            awaitState(a, "succeeded");
            stopWatch.set(true);
            watcher.join(WAIT.toMillis());
            System.out.printf("J18: most live holders of the queue limited to 1: %d%n", maxRunning.get());
            assertThat(maxRunning.get())
                    .as("live holders of the queue limited to 1")
                    .isEqualTo(1);
            assertThat(row(a).attempt())
                    .as("A's attempts (the frozen one, then the rescue's; more if a loaded machine stalls one)")
                    .isGreaterThanOrEqualTo(2);
            assertThat(row(a).stallCount()).as("A's stalls").isGreaterThanOrEqualTo(1);
        } finally {
            stopWatch.set(true);
            child.destroyForcibly();
            child.waitFor(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        }
    }

    private void watch(AtomicBoolean stop, AtomicLong max) {
        try (Connection c = pool.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM " + schema + ".job WHERE queue = "
                        + "'default' AND state = 'running' AND lease_expires_at > clock_timestamp()")) {
            while (!stop.get()) {
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    max.accumulateAndGet(rs.getLong(1), Math::max);
                }
                LockSupport.parkNanos(1_000_000); // pacing only
            }
        } catch (Exception e) {
            max.set(Long.MAX_VALUE); // fails the assertion, with the cause printed
            e.printStackTrace();
        }
    }
}
