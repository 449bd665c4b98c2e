package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.baton.internal.service.Hooks;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/** Cluster-wide job limits enforced at claim time (decision 0019): J17, J19, shared and restarted limits, bad input. */
class JobLimitsTest extends JobTestSupport {
    private static final int NODES = 4;

    /**
     * J17: four nodes (own pools) race claims on a queue limited to 3 running jobs and on a queue limited
     * to 2 running jobs per tenant (six tenants, metadata entry "tenant"), each node with more slots than
     * the limits. A watcher polls the live holders per scope throughout; afterwards the attempt intervals
     * [attempted_at, finished_at) of every job are swept for the highest overlap per scope. Neither ever
     * exceeds its limit, and every job succeeds on its first attempt.
     *
     * <p>Protection removed to see it fail: the lock_limits statement (JobStore.claimLimited no longer ran
     * it, so racing claimers counted holders in snapshots that missed each other's claims). The watcher
     * then saw 6 running on the queue limited to 3 and 4 of one tenant limited to 2 (the sweep: 7 and 4).
     */
    @Test
    void J17_racingClaimersOnFourNodesNeverExceedTheQueueOrThePerTenantLimit() throws Exception {
        List<Baton> nodes = new ArrayList<>();
        for (int i = 1; i <= NODES; i++) {
            String id = "j17-node-" + i;
            var own = ownPool(id, 6);
            Baton.Builder b = nodeBuilder(id, own, Hooks.NONE)
                    .worker(fastWorker("lq", 4).queue("kq", 6).build())
                    .handle(
                            "work",
                            Payload.class,
                            (p, ctx) -> ctx.transaction(tx -> {
                                try (PreparedStatement ps = tx.prepareStatement("SELECT pg_sleep(0.004)")) {
                                    ps.execute(); // a little work, so that attempts overlap
                                }
                                return null;
                            }));
            if (i == 1) {
                b.jobLimit(JobLimit.perQueue("lq", 3))
                        .jobLimit(JobLimit.perMetadata("tenant", 2).inQueue("kq"));
            }
            nodes.add(b.build());
        }
        closeLaterAll(nodes);
        nodes.get(0).start(); // sets the limits before any node claims
        List<JobRequest> batch = new ArrayList<>();
        for (int i = 0; i < 150; i++) {
            batch.add(JobRequest.of("work", new Payload(i)).queue("lq"));
        }
        for (int i = 0; i < 240; i++) {
            batch.add(JobRequest.of("work", new Payload(i)).queue("kq").metadata("tenant", "t" + (i % 6)));
        }
        nodes.get(0).jobs().enqueueAll(batch);

        Watcher watcher = new Watcher(
                "SELECT count(*) FROM " + schema + ".job WHERE queue = 'lq' AND state = 'running'"
                        + " AND lease_expires_at > clock_timestamp()",
                "SELECT coalesce(max(n), 0) FROM (SELECT count(*) AS n FROM " + schema + ".job WHERE queue = 'kq'"
                        + " AND state = 'running' AND lease_expires_at > clock_timestamp()"
                        + " GROUP BY metadata ->> 'tenant') t");
        watcher.start();
        for (int i = 1; i < NODES; i++) {
            nodes.get(i).start();
        }
        Awaitility.await()
                .atMost(WAIT.multipliedBy(2))
                .pollInterval(Duration.ofMillis(50))
                .until(() -> count("SELECT count(*) FROM " + schema + ".job WHERE state = 'succeeded'") == 390);
        watcher.stop();

        // On a machine too loaded to answer heartbeats in time some attempts self-stop and are run again; the
        // sweep then sees only each job's last attempt (it can miss an overlap, never invent one).
        long retried = count("SELECT count(*) FROM " + schema + ".job WHERE attempt <> 1");
        long sweptQueue = maxOverlap("queue = 'lq'", "''");
        long sweptTenant = maxOverlap("queue = 'kq'", "metadata ->> 'tenant'");
        System.out.printf(
                "J17: watcher max %d (queue, limit 3), %d (per tenant, limit 2) over %d polls; sweep max %d, %d;"
                        + " jobs run more than once %d%n",
                watcher.max[0].get(), watcher.max[1].get(), watcher.polls.get(), sweptQueue, sweptTenant, retried);
        assertThat(watcher.max[0].get()).as("running on the queue limited to 3").isLessThanOrEqualTo(3);
        assertThat(watcher.max[1].get())
                .as("running of one tenant limited to 2")
                .isLessThanOrEqualTo(2);
        assertThat(sweptQueue)
                .as("overlapping attempts on the queue limited to 3")
                .isLessThanOrEqualTo(3);
        assertThat(sweptTenant)
                .as("overlapping attempts of one tenant limited to 2")
                .isLessThanOrEqualTo(2);
        assertThat(count("SELECT count(DISTINCT claimed_by) FROM " + schema + ".job"))
                .as("nodes that ran jobs")
                .isGreaterThanOrEqualTo(2);
    }

    /**
     * J19: four nodes claim from a queue whose starts are limited to R = 5 per W = 400 ms, and from a
     * queue limited to 3 starts per 300 ms per tenant (three tenants). Every attempt's attempted_at (the
     * database clock, the instant the claim checked the rate; of a job's last attempt, should a loaded
     * machine make an attempt self-stop and run again) is recorded; every window [t, t + W) that
     * starts at an attempt holds at most 2R − 1 starts: the GCRA bound (R at once after a quiet spell,
     * then one per W / R), the same as Coordination's rate limiter.
     *
     * <p>Protection removed to see it fail: the lock_limits statement again (claimers read the same
     * theoretical arrival time and took the same allowance): 11 starts in one 400 ms window of the queue
     * (bound 9); the per-tenant windows stayed within theirs in that run (5, bound 5), the queue's failed it.
     */
    @Test
    void J19_startsPerWindowStayWithinTheRateAcrossFourNodes() throws Exception {
        List<Baton> nodes = new ArrayList<>();
        for (int i = 1; i <= NODES; i++) {
            String id = "j19-node-" + i;
            var own = ownPool(id, 6);
            Baton.Builder b = nodeBuilder(id, own, Hooks.NONE)
                    .worker(fastWorker("rq", 4).queue("rt", 4).build())
                    .handle("tick", Payload.class, (p, ctx) -> {});
            if (i == 1) {
                b.jobLimit(JobLimit.ratePerQueue("rq", 5, Duration.ofMillis(400)))
                        .jobLimit(JobLimit.ratePerMetadata("tenant", 3, Duration.ofMillis(300))
                                .inQueue("rt"));
            }
            nodes.add(b.build());
        }
        closeLaterAll(nodes);
        nodes.get(0).start();
        List<JobRequest> batch = new ArrayList<>();
        for (int i = 0; i < 40; i++) {
            batch.add(JobRequest.of("tick", new Payload(i)).queue("rq"));
        }
        for (int i = 0; i < 36; i++) {
            batch.add(JobRequest.of("tick", new Payload(i)).queue("rt").metadata("tenant", "t" + (i % 3)));
        }
        nodes.get(0).jobs().enqueueAll(batch);
        for (int i = 1; i < NODES; i++) {
            nodes.get(i).start();
        }
        Awaitility.await()
                .atMost(WAIT.multipliedBy(2))
                .pollInterval(Duration.ofMillis(50))
                .until(() -> count("SELECT count(*) FROM " + schema + ".job WHERE state = 'succeeded'") == 76);

        long queueMax = maxStartsInWindow("queue = 'rq'", "''", 400);
        long tenantMax = maxStartsInWindow("queue = 'rt'", "metadata ->> 'tenant'", 300);
        System.out.printf(
                "J19: most starts in a 400 ms window %d (R = 5, bound 9); in a 300 ms window of one "
                        + "tenant %d (R = 3, bound 5)%n",
                queueMax, tenantMax);
        assertThat(queueMax).as("starts in any 400 ms window of the queue").isLessThanOrEqualTo(2 * 5 - 1);
        assertThat(tenantMax).as("starts in any 300 ms window of one tenant").isLessThanOrEqualTo(2 * 3 - 1);
    }

    /**
     * Limits live in the database: declared by one node, seen and enforced by another started after the
     * first has stopped (a restart), listed by any node, removed through the API.
     */
    @Test
    void limitsAreSharedByNodesAndSurviveRestart() throws Exception {
        var own1 = ownPool("lim-1", 3);
        Baton declaring = nodeBuilder("lim-1", own1, Hooks.NONE)
                .jobLimit(JobLimit.perQueue("sq", 2))
                .jobLimit(JobLimit.perKind("other", 7))
                .build();
        closeLater(declaring).start();
        declaring.close();

        CountDownLatch release = new CountDownLatch(1);
        AtomicLong claims = new AtomicLong();
        Hooks hooks = point -> {
            if (Hooks.Points.JOB_CLAIMED.equals(point)) {
                claims.incrementAndGet();
            }
        };
        var own2 = ownPool("lim-2", 8);
        Baton worker = startNode(nodeBuilder("lim-2", own2, hooks)
                .worker(fastWorker("sq", 5).build())
                .handle("block", Payload.class, (p, ctx) -> release.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)));
        assertThat(worker.jobs().limits()).containsExactly(JobLimit.perKind("other", 7), JobLimit.perQueue("sq", 2));
        for (int i = 0; i < 5; i++) {
            worker.jobs().enqueue(JobRequest.of("block", new Payload(i)).queue("sq"));
        }
        String running = "SELECT count(*) FROM " + schema + ".job WHERE state = 'running'";
        Awaitility.await().atMost(WAIT).until(() -> count(running) == 2);
        long seen = claims.get();
        Awaitility.await().atMost(WAIT).until(() -> claims.get() >= seen + 3); // three more claim passes
        assertThat(count(running))
                .as("running with 5 free slots and a limit of 2")
                .isEqualTo(2);

        // A lower value holds at the next claim; removing the limit lifts it.
        worker.jobs().setLimit(JobLimit.perQueue("sq", 1));
        assertThat(worker.jobs().limits()).contains(JobLimit.perQueue("sq", 1));
        assertThat(worker.jobs().removeLimit(JobLimit.perQueue("sq", 99))).isTrue();
        assertThat(worker.jobs().removeLimit(JobLimit.perQueue("sq", 99))).isFalse();
        Awaitility.await().atMost(WAIT).until(() -> count(running) == 5);
        release.countDown();
        Awaitility.await()
                .atMost(WAIT)
                .until(() -> count("SELECT count(*) FROM " + schema + ".job WHERE state = 'succeeded'") == 5);
    }

    @Test
    void badLimitsAreRefusedWithSpecificErrorsAndChangeNothing() throws Exception {
        var own = ownPool("lim-bad", 2);
        Baton node = closeLater(nodeBuilder("lim-bad", own, Hooks.NONE).build()).start();
        Jobs jobs = node.jobs();
        assertThatThrownBy(() -> JobLimit.perQueue("Bad Queue", 2))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("queue must match")
                .hasMessageContaining("'Bad Queue'");
        assertThatThrownBy(() -> JobLimit.perQueue("q", 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("maxRunning must be 1 to 1000000, but was 0");
        assertThatThrownBy(() -> JobLimit.perKind("", 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("kind must be 1 to 200 characters, but was 0 characters");
        assertThatThrownBy(() -> JobLimit.perMetadata(null, 1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("metadata key must be 1 to 100 characters, but was null");
        assertThatThrownBy(() -> JobLimit.ratePerQueue("q", 0, Duration.ofSeconds(1)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("starts per window must be 1 to 1000000, but was 0");
        assertThatThrownBy(() -> JobLimit.ratePerKind("k", 5, Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("rate window must be PT0.001S to PT24H, but was PT0S");
        assertThatThrownBy(() -> JobLimit.ratePerKind("k", 5, Duration.ofNanos(1_500_000)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("whole number of milliseconds");
        assertThatThrownBy(() -> JobLimit.ratePerMetadata("tenant", 5, null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("but was null");
        assertThatThrownBy(() -> JobLimit.perQueue("q", 2).inQueue("r"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("already applies to queue 'q'");
        assertThatThrownBy(() -> JobLimit.perKind("k", 2).ofKind("j"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("already applies to kind 'k'");
        assertThatThrownBy(() -> jobs.setLimit(null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("limit must not be null");
        assertThatThrownBy(() -> jobs.removeLimit(null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("limit must not be null");
        assertThatThrownBy(() -> Baton.builder(own).jobLimit(null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("limit must not be null");
        assertThat(jobs.limits()).as("limits after refused input").isEmpty();

        // Identity is the scope and the kind of limit, never the values.
        assertThat(JobLimit.perMetadata("tenant", 2).inQueue("q").ofKind("k").id())
                .isEqualTo("running:queue=q;kind=k;metadata=tenant");
        assertThat(JobLimit.ratePerQueue("q", 2, Duration.ofSeconds(1)).id()).isEqualTo("rate:queue=q");
    }

    /** Every job of the scope, swept in time order: the most attempts [attempted_at, finished_at) that overlapped. */
    private long maxOverlap(String where, String valueExpr) throws Exception {
        return count("WITH ev AS (SELECT attempted_at AS at, 1 AS d, " + valueExpr + " AS v FROM " + schema
                + ".job WHERE " + where + " UNION ALL SELECT finished_at, -1, " + valueExpr + " FROM " + schema
                + ".job WHERE " + where + ") SELECT coalesce(max(n), 0) FROM (SELECT sum(d) OVER (PARTITION BY v"
                + " ORDER BY at, d ROWS UNBOUNDED PRECEDING) AS n FROM ev) s");
    }

    /** The most attempts started in one window [attempted_at, attempted_at + ms) of the scope. */
    private long maxStartsInWindow(String where, String valueExpr, int ms) throws Exception {
        return count("SELECT coalesce(max(n), 0) FROM (SELECT (SELECT count(*) FROM " + schema + ".job b WHERE b."
                + where + " AND " + valueExpr.replace("metadata", "b.metadata") + " = "
                + valueExpr.replace("metadata", "a.metadata") + " AND b.attempted_at >= a.attempted_at"
                + " AND b.attempted_at < a.attempted_at + interval '" + ms + " milliseconds') AS n FROM " + schema
                + ".job a WHERE a." + where + ") s");
    }

    private void closeLaterAll(List<Baton> nodes) {
        nodes.forEach(this::closeLater);
    }

    /** Polls the given counts (each one statement, so one snapshot) until stopped; keeps their maxima. */
    private final class Watcher {
        final String[] queries;
        final AtomicLong[] max;
        final AtomicLong polls = new AtomicLong();
        final AtomicBoolean stop = new AtomicBoolean();
        final Thread thread;
        volatile Throwable failure;

        Watcher(String... queries) {
            this.queries = queries;
            this.max = new AtomicLong[queries.length];
            for (int i = 0; i < queries.length; i++) {
                max[i] = new AtomicLong();
            }
            this.thread = new Thread(this::run, "limit-watcher");
            thread.setDaemon(true);
        }

        void start() {
            thread.start();
        }

        void stop() throws InterruptedException {
            stop.set(true);
            thread.join(WAIT.toMillis());
            assertThat(failure).as("watcher failure").isNull();
            assertThat(polls.get()).as("watcher polls").isPositive();
        }

        private void run() {
            try (Connection c = pool.getConnection()) {
                while (!stop.get()) {
                    for (int i = 0; i < queries.length; i++) {
                        try (ResultSet rs = c.createStatement().executeQuery(queries[i])) {
                            rs.next();
                            long n = rs.getLong(1);
                            max[i].accumulateAndGet(n, Math::max);
                        }
                    }
                    polls.incrementAndGet();
                    LockSupport.parkNanos(500_000); // pacing only: leave the cores to the nodes
                }
            } catch (Throwable t) {
                failure = t;
            }
        }
    }
}
