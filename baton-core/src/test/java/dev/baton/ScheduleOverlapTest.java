package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * S06: a run still going when the next instant is due. A schedule fires every 300 ms; its handler
 * blocks until the test releases a latch (much longer than the interval). Two worker nodes with
 * three slots each could run several at once; a watcher polls the number of running jobs of the
 * schedule every 10 ms throughout.
 *
 * <p>Protection removed to see it fail: the schedule's concurrency key on fired jobs
 * ({@code d.allowOverlap() ? null : ScheduleKeys.concurrencyKey(..)} in {@code Scheduler.job} replaced
 * by {@code null}): the watcher saw 2 (then more) running at once without allowOverlap.
 */
class ScheduleOverlapTest extends ScheduleTestSupport {

    /** S06: allowOverlap false (the default): never two running at once, however many instants pile up. */
    @Test
    void S06_withoutOverlap_neverTwoRunsAtOnce() throws Exception {
        Watch w = run("s06", false);
        try {
            // Three more instants fired while the first run is blocked: jobs were waiting to be claimed
            // by two idle workers (polling every 50 ms) for over 600 ms.
            Awaitility.await()
                    .atMost(WAIT)
                    .pollInterval(Duration.ofMillis(20))
                    .until(() -> w.maxRunning.get() > 1 || jobsOfKind("s06.job").size() >= 4 && w.running.get() == 1);
            assertThat(w.maxRunning.get())
                    .as("most runs of the schedule at once")
                    .isEqualTo(1);
            assertThat(jobsOfKind("s06.job"))
                    .filteredOn(j -> j.state().equals("available"))
                    .hasSizeGreaterThanOrEqualTo(2);
            long samplesBefore = w.samples.get();
            // Let the runs go; they now follow each other.
            w.release.countDown();
            Awaitility.await().atMost(WAIT).pollInterval(Duration.ofMillis(20)).until(() -> w.handled.get() >= 6);
            Awaitility.await()
                    .atMost(WAIT)
                    .pollInterval(Duration.ofMillis(20))
                    .until(() -> w.samples.get() >= samplesBefore + 20);
        } finally {
            w.stop();
        }
        assertThat(w.error.get()).isNull();
        assertThat(w.maxRunning.get()).as("most runs of the schedule at once").isEqualTo(1);
    }

    /** S06: allowOverlap(true): a run starts while the previous one is still going. */
    @Test
    void S06_withOverlapAllowed_runsOverlap() throws Exception {
        Watch w = run("s06o", true);
        try {
            Awaitility.await().atMost(WAIT).pollInterval(Duration.ofMillis(20)).until(() -> w.maxRunning.get() >= 2);
        } finally {
            w.release.countDown();
            w.stop();
        }
        assertThat(w.error.get()).isNull();
        assertThat(w.maxRunning.get()).isGreaterThanOrEqualTo(2);
    }

    private static final class Watch {
        final CountDownLatch release = new CountDownLatch(1);
        final AtomicInteger handled = new AtomicInteger();
        final AtomicLong running = new AtomicLong();
        final AtomicLong maxRunning = new AtomicLong();
        final AtomicLong samples = new AtomicLong();
        final AtomicReference<Throwable> error = new AtomicReference<>();
        ScheduledExecutorService watcher;

        void stop() throws InterruptedException {
            watcher.shutdownNow();
            watcher.awaitTermination(10, TimeUnit.SECONDS);
        }
    }

    private Watch run(String name, boolean allowOverlap) {
        Watch w = new Watch();
        w.watcher = Executors.newSingleThreadScheduledExecutor();
        HikariDataSource watchPool = closeLater(PG.newPool(name + "-watch", 1));
        w.watcher.scheduleAtFixedRate(
                () -> {
                    try (Connection c = watchPool.getConnection();
                            PreparedStatement ps = c.prepareStatement(
                                    "SELECT count(*) FROM " + schema + ".job WHERE state = 'running' AND kind = ?")) {
                        ps.setString(1, name + ".job");
                        try (ResultSet rs = ps.executeQuery()) {
                            rs.next();
                            long n = rs.getLong(1);
                            w.running.set(n);
                            w.maxRunning.accumulateAndGet(n, Math::max);
                            w.samples.incrementAndGet();
                        }
                    } catch (Exception e) {
                        w.error.compareAndSet(null, e);
                    }
                },
                0,
                10,
                TimeUnit.MILLISECONDS);
        for (String id : new String[] {"w1", "w2"}) {
            HikariDataSource ds = closeLater(PG.newPool(name + "-" + id, 10));
            startNode(nodeBuilder(id, ds)
                    .application("svc", "1")
                    .worker(fastWorker("default", 3).build())
                    .schedule(Schedule.every(name, Duration.ofMillis(300))
                            .job(name + ".job", null)
                            .allowOverlap(allowOverlap))
                    .handle(name + ".job", Object.class, (p, ctx) -> {
                        while (!w.release.await(20, TimeUnit.MILLISECONDS) && !ctx.isCancelled()) {
                            // a slow run: blocked until the test releases it
                        }
                        w.handled.incrementAndGet();
                    }));
        }
        return w;
    }
}
