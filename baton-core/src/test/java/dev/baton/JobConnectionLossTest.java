package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.internal.maintenance.Maintenance;
import dev.baton.internal.service.Hooks;
import dev.baton.testkit.FaultProxy;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/** J04: the worker loses its connection to the database in the middle of a job. */
class JobConnectionLossTest extends JobTestSupport {

    /** What node A's handler saw when it was told to stop. */
    record SelfStop(long nanos, JobRow rowThen, Throwable lateTransaction) {}

    /**
     * J04: node A works through a proxy (main and coordination pools); its handler waits with
     * {@code ctx.awaitCancellation}. The proxy black-holes every byte. A's heartbeats go unanswered,
     * and A's handler is told to stop after half the job lease, while the job row is still running
     * under A's attempt token with an unexpired lease on the database clock, i.e. before anyone could
     * rescue it. A completion transaction attempted after that is refused and writes nothing. After
     * the network heals, node B (direct connections) rescues the job and completes it.
     *
     * <p>Protection removed to see it fail: the self-stop in {@code Worker#heartbeatLoop} (the
     * {@code now - a.deadline() >= 0 → stop(DEADLINE)} branch). A's handler then kept running through
     * the partition, past the expiry of its lease: it was never told to stop and the test failed.
     */
    @Test
    void J04_handlerSelfStopsBeforeLeaseExpiresAndWritesNothing() throws Exception {
        createEffectTable(false);
        FaultProxy proxy = closeLater(FaultProxy.start(PG.host(), PG.port()));
        var aMain = proxiedPool(proxy, "j04-a-main", 8, "j04-a");
        var aCoord = proxiedPool(proxy, "j04-a-coord", 4, "j04-a");
        CountDownLatch aStarted = new CountDownLatch(1);
        CompletableFuture<SelfStop> aStopped = new CompletableFuture<>();
        Baton a = startNode(nodeBuilder("j04-a", aMain, Hooks.NONE)
                .coordinationDataSource(aCoord)
                .worker(fastWorker("default", 1).build())
                .handle("slow", Payload.class, (p, ctx) -> {
                    if (ctx.attempt() != 1) {
                        throw new AssertionError("node A should run only attempt 1");
                    }
                    aStarted.countDown();
                    while (!ctx.awaitCancellation(Duration.ofMillis(20))) {
                        // working
                    }
                    long at = System.nanoTime();
                    JobRow then = row(ctx.jobId()); // direct connection, not through the proxy
                    Throwable late = null;
                    try {
                        ctx.transaction(tx -> {
                            insertEffect(tx, ctx.jobId(), ctx.attempt(), "j04-a", 0);
                            return null;
                        });
                    } catch (Throwable t) {
                        late = t;
                    }
                    aStopped.complete(new SelfStop(at, then, late));
                }));
        long id = a.jobs().enqueue(JobRequest.of("slow", new Payload(1))).id();
        assertThat(aStarted.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
        JobRow claimed = row(id);
        assertThat(claimed.claimedBy()).isEqualTo("j04-a");

        long cut = System.nanoTime();
        proxy.blackHole();
        SelfStop stop;
        try {
            stop = aStopped.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.TimeoutException e) {
            throw new AssertionError("node A's handler was not told to stop during the partition", e);
        }
        System.out.printf(
                "J04: black hole → handler told to stop: %d ms (job lease %s; self-stop at L/2)%n",
                (stop.nanos() - cut) / 1_000_000, JOB_LEASE);

        // Stopped before anyone else could be let in: still A's running attempt, lease not yet expired.
        assertThat(stop.rowThen().state()).isEqualTo("running");
        assertThat(stop.rowThen().token()).isEqualTo(claimed.token());
        assertThat(stop.rowThen().stallCount()).isZero();
        assertThat(stop.rowThen().leaseLive())
                .as("lease still live on the database clock at self-stop")
                .isTrue();
        // The attempt writes nothing: its late completion is refused.
        assertThat(stop.lateTransaction()).isInstanceOf(AttemptLostException.class);

        proxy.heal();
        a.drain(); // A stops claiming: the re-run must be another node's

        var bPool = ownPool("j04-b", 8);
        Baton b = startNode(nodeBuilder("j04-b", bPool, Hooks.NONE)
                .worker(fastWorker("default", 2).build())
                .handle(
                        "slow",
                        Payload.class,
                        (p, ctx) -> ctx.transaction(tx -> {
                            insertEffect(tx, ctx.jobId(), ctx.attempt(), "j04-b", 0);
                            return null;
                        })));
        // Once A's lease has expired on the database clock, the rescuer (B's maintenance, or this
        // direct-connection run of it) returns the job to the queue and B runs it.
        Maintenance rescuer = rescuer(fastWorker("default", 1).build(), "j04-b");
        Awaitility.await().atMost(WAIT).pollInterval(Duration.ofMillis(20)).until(() -> {
            rescuer.rescueOnce();
            return !claimed.token().equals(row(id).token());
        });
        awaitState(id, "succeeded");

        JobInfo info = b.jobs().get(id).orElseThrow();
        assertThat(info.attempt()).isEqualTo(2);
        assertThat(info.claimedBy()).contains("j04-b");
        assertThat(info.stallCount()).isEqualTo(1);
        assertThat(info.errors()).singleElement().satisfies(e -> {
            assertThat(e.errorClass()).isEqualTo("stalled");
            assertThat(e.attempt()).isEqualTo(1);
            assertThat(e.node()).isEqualTo("j04-a");
        });
        assertThat(count("SELECT count(*) FROM " + schema + ".effect WHERE attempt = 1"))
                .as("A's writes")
                .isZero();
        assertThat(count("SELECT count(*) FROM " + schema + ".effect")).isEqualTo(1);
        assertThat(count("SELECT count(*) FROM " + schema + ".effect WHERE attempt = 2 AND node = 'j04-b'"))
                .isEqualTo(1);
    }
}
