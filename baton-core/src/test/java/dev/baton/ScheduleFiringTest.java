package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.baton.internal.schedule.Scheduler;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;

/**
 * S01: N nodes all firing the same schedule produce one job per due instant, never one per node.
 *
 * <p>Protections removed (in a scratch copy) and seen failing:
 * <ol>
 *   <li>the compare-and-set of firing: {@code AND next_run_at = :seen} of the {@code advance} statement
 *       ({@code schedule.sql}) replaced by {@code AND :seen::timestamptz IS NOT NULL}: the job count per
 *       instant stayed one (the idempotency key deduplicated), but both racing schedulers fired and
 *       recorded the firing: {@link #S01_racingSchedulersBlockedOnTheSameInstantFireItOnce} failed
 *       (fireDue returned [2, 2], not [0, 2]) and the stress test failed on "jobs reported = jobs
 *       enqueued" (110 reported, 55 enqueued);</li>
 *   <li>the idempotency key ({@code ScheduleKeys.idempotencyKey(..)} left out of the job built by
 *       {@code Scheduler.job}): the CAS alone still kept one job per instant (the loser's enqueue
 *       rolls back with its failed CAS), but all three tests failed on "each job names its due
 *       instant" (key null);</li>
 *   <li>both at once: the stress test got 22 jobs for 11 instants, the blocked race 4 jobs for 2.</li>
 * </ol>
 * The two protections are redundant for the job count; each alone is enough for one job per instant.
 */
class ScheduleFiringTest extends ScheduleTestSupport {
    private static final Duration EVERY = Duration.ofMillis(300);

    /**
     * S01: three full nodes (worker, scheduler leadership, the same declaration) run one schedule
     * every 300 ms; each due instant from the first to the last fired has exactly one job, and every
     * job ran once (no fault injected, so no retry happened).
     */
    @Test
    void S01_threeNodesWithTheSameScheduleFireOneJobPerDueInstant() throws Exception {
        Map<Long, AtomicInteger> handled = new ConcurrentHashMap<>();
        List<Baton> nodes = new ArrayList<>();
        for (String id : new String[] {"n1", "n2", "n3"}) {
            HikariDataSource ds = closeLater(PG.newPool("s01-" + id, 8));
            nodes.add(startNode(nodeBuilder(id, ds)
                    .application("svc", "1")
                    .worker(fastWorker("default", 3).build())
                    .handle(
                            "s01.tick",
                            Object.class,
                            (p, ctx) -> handled.computeIfAbsent(ctx.jobId(), k -> new AtomicInteger())
                                    .incrementAndGet())
                    .schedule(Schedule.every("s01", EVERY).job("s01.tick", null))));
        }
        // At least 10 due instants fired, and everything fired so far has run.
        Awaitility.await()
                .atMost(WAIT)
                .pollInterval(Duration.ofMillis(50))
                .until(() -> jobsOfKind("s01.tick").size() >= 10);
        nodes.forEach(Baton::close); // stop firing: the set below is final
        Awaitility.await()
                .atMost(WAIT)
                .pollInterval(Duration.ofMillis(50))
                .until(() ->
                        jobsOfKind("s01.tick").stream().allMatch(j -> !j.state().equals("running")));

        List<FiredJob> jobs = jobsOfKind("s01.tick");
        List<Instant> instants = firedInstants("s01", "s01.tick");
        assertThat(new HashSet<>(instants)).as("one job per due instant").hasSize(jobs.size());
        Instant first = instants.stream().min(Instant::compareTo).orElseThrow();
        Instant last = instants.stream().max(Instant::compareTo).orElseThrow();
        assertThat(first.toEpochMilli() % EVERY.toMillis())
                .as("aligned to the epoch")
                .isZero();
        assertThat(new HashSet<>(instants))
                .as("every instant from the first to the last, once")
                .isEqualTo(new HashSet<>(grid(first, last.plus(EVERY), EVERY)));
        assertThat(jobs)
                .filteredOn(j -> j.state().equals("succeeded"))
                .extracting(FiredJob::id)
                .allSatisfy(id -> assertThat(handled.get(id))
                        .as("job %d handled once", id)
                        .hasValue(1));
        assertThat(handled.keySet()).isSubsetOf(jobs.stream().map(FiredJob::id).toList());
        assertThat(info("s01").declaredBy()).containsExactly("1");
    }

    /**
     * S01: two schedulers (two "nodes", no leader lease) fire the same schedule at the same moment,
     * deterministically: the test holds the schedule row's lock, so both read the same
     * {@code next_run_at}, enqueue and then block (one on the row, the other on the first's key);
     * once the lock is released exactly one firing commits. The outage before it (instants dropped
     * by SKIP) is recorded once: fired + dropped = the instants the schedule advanced over.
     */
    @Test
    void S01_racingSchedulersBlockedOnTheSameInstantFireItOnce() throws Exception {
        Schedule s = Schedule.every("s01race", Duration.ofMillis(200))
                .job("s01race.tick", null)
                .misfire(MisfirePolicy.SKIP)
                .misfireThreshold(Duration.ofMillis(300));
        schedulesApi().declare("svc", "1", List.of(s));
        Instant n0 = nextRunAt("s01race");
        awaitDbClock(n0.plusMillis(6 * 200)); // an outage: several instants are older than the threshold

        HikariDataSource dsA = closeLater(PG.newPool("s01-a", 3));
        HikariDataSource dsB = closeLater(PG.newPool("s01-b", 3));
        Scheduler a = scheduler(dsA, "svc");
        Scheduler b = scheduler(dsB, "svc");
        ExecutorService exec = Executors.newFixedThreadPool(2);
        try (Connection lock = pool.getConnection()) {
            lock.setAutoCommit(false);
            try (PreparedStatement ps = lock.prepareStatement(
                    "SELECT next_run_at FROM " + schema + ".schedule WHERE name = 's01race' FOR UPDATE")) {
                ps.executeQuery().close();
            }
            Future<Integer> ra = exec.submit(a::fireDue);
            Future<Integer> rb = exec.submit(b::fireDue);
            // Both are inside their firing transaction for the same instant, blocked.
            Awaitility.await()
                    .atMost(WAIT)
                    .pollInterval(Duration.ofMillis(10))
                    .until(() -> backendsWaitingOnLock() == 2);
            lock.commit();
            int fa = ra.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
            int fb = rb.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);

            assertThat(jobsOfKind("s01race.tick"))
                    .as("one job per instant: the loser's jobs rolled back or deduplicated")
                    .hasSize(Math.max(fa, fb));
            List<Instant> fired = firedInstants("s01race", "s01race.tick");
            ScheduleInfo info = info("s01race");
            List<Instant> advancedOver = grid(n0, info.nextRunAt(), Duration.ofMillis(200));
            assertThat(fired).as("one job per instant").doesNotHaveDuplicates().isNotEmpty();
            assertThat(List.of(fa, fb))
                    .as("exactly one scheduler fired; the other lost the CAS")
                    .containsExactlyInAnyOrder(0, fired.size());
            assertThat(info.misfiredTotal())
                    .as("dropped instants, counted once")
                    .isPositive()
                    .isEqualTo(advancedOver.size() - fired.size());
            assertThat(advancedOver).containsAll(fired);
            assertThat(info.lastDueAt())
                    .contains(fired.stream().max(Instant::compareTo).orElseThrow());
        } finally {
            exec.shutdownNow();
        }
    }

    /**
     * S01: two schedulers call {@code fireDue()} at the same moment, round after round, each round
     * released as the next instant of five schedules (every 200 ms) becomes due, for at least ten
     * instants. Per schedule, each instant has exactly one job, and the jobs the schedulers report
     * are exactly the jobs enqueued.
     */
    @Test
    void S01_twoSchedulersRacingOverManyInstantsEnqueueOneJobPerInstant() throws Exception {
        Duration every = Duration.ofMillis(200);
        List<Schedule> defs = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            defs.add(Schedule.every("s01s" + i, every).job("s01s" + i + ".tick", null));
        }
        schedulesApi().declare("svc", "1", defs);
        Map<String, Instant> firstDue = new HashMap<>();
        for (Schedule d : defs) {
            firstDue.put(d.name(), nextRunAt(d.name()));
        }
        Instant end =
                firstDue.values().stream().max(Instant::compareTo).orElseThrow().plus(every.multipliedBy(10));

        HikariDataSource dsA = closeLater(PG.newPool("s01-a", 3));
        HikariDataSource dsB = closeLater(PG.newPool("s01-b", 3));
        Scheduler[] schedulers = {scheduler(dsA, "svc"), scheduler(dsB, "svc")};
        AtomicBoolean stop = new AtomicBoolean();
        // Each round starts when the earliest next run is due (waiting on the database clock), both at once.
        CyclicBarrier barrier = new CyclicBarrier(2, () -> {
            try {
                Instant due = minNextRun();
                stop.set(due.isAfter(end));
                if (!stop.get()) {
                    awaitDbClock(due);
                }
            } catch (Exception e) {
                stop.set(true);
                throw new IllegalStateException(e);
            }
        });
        AtomicInteger reported = new AtomicInteger();
        CountDownLatch done = new CountDownLatch(2);
        List<CompletableFuture<Void>> runs = new ArrayList<>();
        for (Scheduler sch : schedulers) {
            runs.add(CompletableFuture.runAsync(() -> {
                try {
                    while (true) {
                        barrier.await(WAIT.toMillis(), TimeUnit.MILLISECONDS);
                        if (stop.get()) {
                            return;
                        }
                        reported.addAndGet(sch.fireDue());
                    }
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                } finally {
                    done.countDown();
                }
            }));
        }
        assertThat(done.await(WAIT.toMillis() * 2, TimeUnit.MILLISECONDS)).isTrue();
        for (CompletableFuture<Void> r : runs) {
            r.join();
        }

        int total = 0;
        for (Schedule d : defs) {
            List<Instant> instants = grid(firstDue.get(d.name()), nextRunAt(d.name()), every);
            assertThat(jobsOfKind(d.name() + ".tick"))
                    .as("%s: one job per instant advanced over", d.name())
                    .hasSize(instants.size());
            List<Instant> fired = firedInstants(d.name(), d.name() + ".tick");
            Instant next = nextRunAt(d.name());
            assertThat(fired)
                    .as("%s: one job per instant", d.name())
                    .doesNotHaveDuplicates()
                    .containsExactlyInAnyOrderElementsOf(grid(firstDue.get(d.name()), next, every));
            assertThat(fired.size()).as("%s: instants fired", d.name()).isGreaterThanOrEqualTo(10);
            total += fired.size();
        }
        assertThat(reported.get())
                .as("jobs the schedulers reported firing = jobs enqueued")
                .isEqualTo(total);
        assertThat(count("SELECT count(*) FROM " + schema + ".job")).isEqualTo(total);
    }

    private Instant minNextRun() throws Exception {
        try (Connection c = pool.getConnection();
                ResultSet rs =
                        c.createStatement().executeQuery("SELECT min(next_run_at) FROM " + schema + ".schedule")) {
            rs.next();
            return rs.getTimestamp(1).toInstant();
        }
    }
}
