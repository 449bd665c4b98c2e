package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.baton.Uniqueness.Conflict;
import dev.baton.internal.job.JobStore;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Scoped uniqueness at enqueue ({@link JobRequest#unique}): racing enqueues of one key leave one job
 * whatever the scope; each scope frees the key when its job leaves it; on conflict the existing job is
 * returned, a waiting one's payload and run-at replaced, or the enqueue rejected with nothing written; alone,
 * in batches and on the caller's transaction.
 */
class JobUniquenessTest extends JobBehaviourTestBase {
    private static final int ROUNDS = 15;
    private static final int THREADS_PER_POOL = 4;

    private static Uniqueness uniqueness(Uniqueness.Scope scope) {
        return switch (scope) {
            case AVAILABLE -> Uniqueness.whileAvailable();
            case AVAILABLE_OR_RUNNING -> Uniqueness.whileAvailableOrRunning();
            case WINDOW -> Uniqueness.within(Duration.ofHours(1));
        };
    }

    /**
     * Racing enqueues of one key, from four threads on each of two pools (two "nodes"), released together
     * round after round, leave one job per key, and every racer is told that job's id.
     *
     * <p>Protection removed and seen failing: the key row lock (the {@code unique_lock} statement replaced
     * by an insert {@code ON CONFLICT DO NOTHING} and a plain read of the key's latest job, no row lock):
     * keys ended with more than one job under every scope ("jobs per key" failed); the batch race below
     * ended in "deadlock detected"; and {@link #theCallersTransactionHoldsTheKeyUntilItEnds} saw the racer
     * create a second job instead of waiting.
     */
    @ParameterizedTest
    @EnumSource(Uniqueness.Scope.class)
    void racingEnqueuesOfOneKeyLeaveOneJob(Uniqueness.Scope scope) throws Exception {
        Jobs a = racers("unique-a");
        Jobs b = racers("unique-b");
        int racers = 2 * THREADS_PER_POOL;
        CyclicBarrier start = new CyclicBarrier(racers);
        ExecutorService threads = Executors.newFixedThreadPool(racers);
        closeLater(threads::shutdownNow);
        List<Future<List<Long>>> results = new ArrayList<>();
        for (int t = 0; t < racers; t++) {
            Jobs jobs = t % 2 == 0 ? a : b;
            results.add(threads.submit(() -> {
                List<Long> ids = new ArrayList<>();
                for (int round = 0; round < ROUNDS; round++) {
                    start.await(WAIT.toMillis(), TimeUnit.MILLISECONDS);
                    ids.add(jobs.enqueue(JobRequest.of("sync", new Item("r" + round))
                                    .unique("race-" + round, uniqueness(scope)))
                            .id());
                }
                return ids;
            }));
        }
        List<List<Long>> all = new ArrayList<>();
        for (Future<List<Long>> f : results) {
            all.add(f.get(WAIT.toMillis(), TimeUnit.MILLISECONDS));
        }
        Map<String, Long> perKey = jobsPerName();
        assertThat(perKey).hasSize(ROUNDS);
        assertThat(perKey.values()).as("jobs per key").containsOnly(1L);
        for (int round = 0; round < ROUNDS; round++) {
            int r = round;
            assertThat(all.stream().map(ids -> ids.get(r)).distinct())
                    .as("every racer of round " + r + " got the one job")
                    .hasSize(1);
        }
    }

    /** The same race in batches: each batch carries every round's key, in its own (shuffled) order. */
    @Test
    void racingBatchesLeaveOneJobPerKey() throws Exception {
        Jobs a = racers("unique-batch-a");
        Jobs b = racers("unique-batch-b");
        int racers = 2 * THREADS_PER_POOL;
        CyclicBarrier start = new CyclicBarrier(racers);
        ExecutorService threads = Executors.newFixedThreadPool(racers);
        closeLater(threads::shutdownNow);
        List<Future<?>> done = new ArrayList<>();
        for (int t = 0; t < racers; t++) {
            Jobs jobs = t % 2 == 0 ? a : b;
            int shift = t;
            done.add(threads.submit(() -> {
                List<JobRequest> batch = new ArrayList<>();
                for (int i = 0; i < ROUNDS; i++) {
                    int k = (i + shift) % ROUNDS; // another order per racer: the key locks must not deadlock
                    batch.add(JobRequest.of("sync", new Item("k" + k))
                            .unique("batch-" + k, Uniqueness.whileAvailableOrRunning()));
                }
                start.await(WAIT.toMillis(), TimeUnit.MILLISECONDS);
                return jobs.enqueueAll(batch);
            }));
        }
        for (Future<?> f : done) {
            f.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        }
        assertThat(jobsPerName())
                .hasSize(ROUNDS)
                .allSatisfy((k, n) -> assertThat(n).as(k).isEqualTo(1L));
    }

    /**
     * A client for {@link #THREADS_PER_POOL} racing threads, on a pool of its own with a connection for each: a racer
     * that holds one waits on the key locks of the other pool's racers, so on the user pool profile's two
     * connections the last racers would wait for several whole transactions to borrow one.
     */
    private Jobs racers(String name) {
        return new Jobs(appPoolOf(name, THREADS_PER_POOL + 1), new JobStore(schema), PayloadCodec.jackson(), 1 << 20);
    }

    /** Each scope frees its key when the key's latest job leaves it; the window by the database clock. */
    @Test
    void eachScopeFreesTheKeyWhenItsJobLeavesIt() throws Exception {
        Jobs jobs = jobsClient();
        JobStore store = new JobStore(schema);

        // While available: a running job frees the key; a second available one holds it again.
        EnqueueResult first = jobs.enqueue(unique("a1", "avail", Uniqueness.whileAvailable()));
        assertThat(jobs.enqueue(unique("a2", "avail", Uniqueness.whileAvailable())))
                .isEqualTo(new EnqueueResult(first.id(), false, EnqueueResult.Outcome.EXISTING));
        assertThat(claimOne(store)).isEqualTo(first.id());
        EnqueueResult second = jobs.enqueue(unique("a3", "avail", Uniqueness.whileAvailable()));
        assertThat(second.outcome()).isEqualTo(EnqueueResult.Outcome.CREATED);
        assertThat(second.id()).isNotEqualTo(first.id());

        // While available or running: the running job holds the key; once finished it is free.
        EnqueueResult r1 = jobs.enqueue(unique("r1", "active", Uniqueness.whileAvailableOrRunning()));
        assertThat(claimOne(store)).isIn(r1.id(), second.id());
        assertThat(claimOne(store)).isIn(r1.id(), second.id());
        assertThat(row(r1.id()).state()).isEqualTo("running");
        assertThat(jobs.enqueue(unique("r2", "active", Uniqueness.whileAvailableOrRunning()))
                        .id())
                .isEqualTo(r1.id());
        jobs.cancel(r1.id()); // a running job: cancellation requested; finish it as its worker would
        try (Connection c = pool.getConnection();
                Statement s = c.createStatement()) {
            s.executeUpdate("UPDATE " + schema + ".job SET state = 'cancelled', finished_at = clock_timestamp(), "
                    + "attempt_token = NULL WHERE id = " + r1.id());
        }
        EnqueueResult r3 = jobs.enqueue(unique("r3", "active", Uniqueness.whileAvailableOrRunning()));
        assertThat(r3.created()).isTrue();

        // Within a window: any state counts, until the window has passed on the database clock.
        Uniqueness window = Uniqueness.within(Duration.ofMillis(300));
        EnqueueResult w1 = jobs.enqueue(unique("w1", "window", window));
        jobs.cancel(w1.id()); // finished, but still within the window
        assertThat(jobs.enqueue(unique("w2", "window", window)).id()).isEqualTo(w1.id());
        Awaitility.await()
                .atMost(WAIT)
                .pollInterval(Duration.ofMillis(20))
                .until(() -> count("SELECT count(*) FROM " + schema + ".job WHERE id = " + w1.id()
                                + " AND created_at + interval '300 milliseconds' < clock_timestamp()")
                        == 1);
        EnqueueResult w3 = jobs.enqueue(unique("w3", "window", window));
        assertThat(w3.created()).isTrue();
        assertThat(jobs.enqueue(unique("w4", "window", window)).id()).isEqualTo(w3.id());
    }

    /**
     * REPLACE debounces: the waiting job takes the new payload and run-at, same id; a running job is never
     * changed (under "while available or running" its id is returned; under "while available" a new job is
     * enqueued).
     *
     * <p>Protection removed and seen failing: the state checks of REPLACE ({@code "available".equals(state)}
     * in {@code JobStore.enqueueUnique} and {@code AND state = 'available'} in {@code unique_replace}): the
     * running job's payload was overwritten and REPLACED returned instead of EXISTING.
     */
    @Test
    void replaceDebouncesTheWaitingJobAndNeverTouchesARunningOne() throws Exception {
        Jobs jobs = jobsClient();
        Uniqueness debounce = Uniqueness.whileAvailableOrRunning().onConflict(Conflict.REPLACE);
        EnqueueResult first = jobs.enqueue(unique("v1", "debounce", debounce).delay(Duration.ofHours(1)));
        Instant firstRunAt = row(first.id()).runAt();
        EnqueueResult second = jobs.enqueue(unique("v2", "debounce", debounce).delay(Duration.ofHours(2)));
        assertThat(second).isEqualTo(new EnqueueResult(first.id(), false, EnqueueResult.Outcome.REPLACED));
        JobInfo replaced = jobs.get(first.id()).orElseThrow();
        assertThat(replaced.payloadJson()).contains("v2");
        assertThat(replaced.runAt()).isAfterOrEqualTo(firstRunAt.plus(Duration.ofHours(1)));
        assertThat(jobCount()).isEqualTo(1);

        // Due now, claimed: running. REPLACE leaves it alone.
        jobs.enqueue(unique("v3", "debounce", debounce));
        assertThat(claimOne(new JobStore(schema))).isEqualTo(first.id());
        EnqueueResult onRunning = jobs.enqueue(unique("v4", "debounce", debounce));
        assertThat(onRunning).isEqualTo(new EnqueueResult(first.id(), false, EnqueueResult.Outcome.EXISTING));
        assertThat(jobs.get(first.id()).orElseThrow().payloadJson()).contains("v3");

        // Under "while available", the running job is out of scope: a new job.
        Uniqueness waitingOnly = Uniqueness.whileAvailable().onConflict(Conflict.REPLACE);
        EnqueueResult fresh = jobs.enqueue(unique("v5", "debounce", waitingOnly));
        assertThat(fresh.outcome()).isEqualTo(EnqueueResult.Outcome.CREATED);
        assertThat(jobs.get(first.id()).orElseThrow().payloadJson()).contains("v3");
        assertThat(jobCount()).isEqualTo(2);
    }

    /**
     * REJECT throws {@link DuplicateJobException} with the existing id and writes nothing: alone, in a batch
     * (nothing of the batch), and on the caller's transaction (which stays usable and keeps its own rows).
     *
     * <p>Protection removed and seen failing: the savepoint in {@code Jobs.onCaller} (the batch written
     * straight on the caller's transaction): the batch's first job stayed in the caller's transaction and
     * was committed with it.
     */
    @Test
    void rejectWritesNothing() throws Exception {
        Jobs jobs = jobsClient();
        Uniqueness reject = Uniqueness.whileAvailable().onConflict(Conflict.REJECT);
        long existing = jobs.enqueue(unique("x1", "rej", reject)).id();
        String before = dump();

        assertThatThrownBy(() -> jobs.enqueue(unique("x2", "rej", reject)))
                .isInstanceOfSatisfying(DuplicateJobException.class, e -> {
                    assertThat(e.existingId()).isEqualTo(existing);
                    assertThat(e.uniqueKey()).isEqualTo("rej");
                })
                .hasMessageContaining("'rej'")
                .hasMessageContaining("job " + existing);
        assertThat(dump()).isEqualTo(before);

        assertThatThrownBy(() -> jobs.enqueueAll(List.of(
                        JobRequest.of("sync", new Item("plain")),
                        unique("x3", "other", reject),
                        unique("x4", "rej", reject))))
                .isInstanceOf(DuplicateJobException.class);
        assertThat(dump()).as("nothing of the batch").isEqualTo(before);

        createOwnTable();
        try (Connection tx = appPool.getConnection()) {
            tx.setAutoCommit(false);
            insertOwn(tx, 1);
            assertThatThrownBy(() ->
                            jobs.enqueueAll(tx, List.of(unique("x5", "other", reject), unique("x6", "rej", reject))))
                    .isInstanceOf(DuplicateJobException.class);
            insertOwn(tx, 2); // the caller's transaction goes on
            tx.commit();
        }
        assertThat(dump()).as("no job from the caller's transaction").isEqualTo(before);
        assertThat(count("SELECT count(*) FROM " + schema + ".own")).isEqualTo(2);
    }

    /** In one batch a later request with a key sees the earlier one; requests without a key are unaffected. */
    @Test
    void aBatchSeesItsOwnEarlierRequests() throws Exception {
        Jobs jobs = jobsClient();
        List<EnqueueResult> r = jobs.enqueueAll(List.of(
                unique("b1", "k1", Uniqueness.whileAvailable()),
                unique("b2", "k1", Uniqueness.whileAvailable().onConflict(Conflict.REPLACE)),
                JobRequest.of("sync", new Item("plain")),
                unique("b3", "k2", Uniqueness.within(Duration.ofMinutes(5)))));
        assertThat(r)
                .extracting(EnqueueResult::outcome)
                .containsExactly(
                        EnqueueResult.Outcome.CREATED,
                        EnqueueResult.Outcome.REPLACED,
                        EnqueueResult.Outcome.CREATED,
                        EnqueueResult.Outcome.CREATED);
        assertThat(r.get(1).id()).isEqualTo(r.get(0).id());
        assertThat(jobs.get(r.get(0).id()).orElseThrow().payloadJson()).contains("b2");
        assertThat(jobCount()).isEqualTo(3);
    }

    /**
     * On the caller's transaction the key stays locked until it ends: an enqueue of the same key elsewhere
     * waits (seen in pg_stat_activity), then finds the caller's job once it commits.
     */
    @Test
    void theCallersTransactionHoldsTheKeyUntilItEnds() throws Exception {
        Jobs jobs = jobsClient();
        Jobs other = new Jobs(ownPool("unique-other", 2), new JobStore(schema), PayloadCodec.jackson(), 1 << 20);
        ExecutorService thread = Executors.newSingleThreadExecutor();
        closeLater(thread::shutdownNow);
        try (Connection tx = appPool.getConnection()) {
            tx.setAutoCommit(false);
            EnqueueResult mine = jobs.enqueue(tx, unique("t1", "txkey", Uniqueness.whileAvailable()));
            assertThat(mine.created()).isTrue();
            assertThat(jobs.enqueue(tx, unique("t2", "txkey", Uniqueness.whileAvailable()))
                            .id())
                    .as("the same transaction sees its own job")
                    .isEqualTo(mine.id());
            CompletableFuture<EnqueueResult> racer = CompletableFuture.supplyAsync(
                    () -> other.enqueue(unique("t3", "txkey", Uniqueness.whileAvailable())), thread);
            Awaitility.await()
                    .atMost(WAIT)
                    .pollInterval(Duration.ofMillis(20))
                    .until(() -> count("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                    + "AND query LIKE '%job_unique%'")
                            >= 1);
            assertThat(racer).isNotDone();
            tx.commit();
            assertThat(racer.get(WAIT.toMillis(), TimeUnit.MILLISECONDS).id()).isEqualTo(mine.id());
        }
        assertThat(jobCount()).isEqualTo(1);
    }

    /**
     * A caller's REPEATABLE READ transaction whose snapshot predates a racer's committed job of the same key
     * does not insert a second job: its enqueue fails with a serialization failure (40001), to be retried.
     *
     * <p>Protection removed and seen failing: every write to the key row ({@code unique_lock} made a plain
     * read of the key's job, and the key row update in {@code enqueue_unique} dropped): no serialization
     * failure was raised; the stale snapshot saw no job for the key and inserted a second one. (Removing the
     * upsert alone is not enough to see it fail: the key row update at insert then raises the 40001.)
     */
    @Test
    void aRepeatableReadCallerNeverMissesARacersJob() throws Exception {
        Jobs jobs = jobsClient();
        try (Connection tx = pool.getConnection()) {
            tx.setAutoCommit(false);
            try (Statement s = tx.createStatement()) {
                s.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ");
                s.executeQuery("SELECT count(*) FROM " + schema + ".job").close(); // the snapshot is taken here
            }
            long racer = jobs.enqueue(unique("rr1", "rr", Uniqueness.whileAvailable()))
                    .id();
            assertThatThrownBy(() -> jobs.enqueue(tx, unique("rr2", "rr", Uniqueness.whileAvailable())))
                    .isInstanceOfSatisfying(
                            SQLException.class, e -> assertThat(e.getSQLState()).isEqualTo("40001"));
            tx.rollback();
            assertThat(jobs.enqueue(tx, unique("rr3", "rr", Uniqueness.whileAvailable()))
                            .id())
                    .as("retried: the racer's job")
                    .isEqualTo(racer);
            tx.commit();
        }
        assertThat(jobCount()).isEqualTo(1);
    }

    /** A transaction binding's transaction is the caller's: the key lock and the job go with it. */
    @Test
    void aBoundTransactionIsHonoured() throws Exception {
        JobsTransactionBindingTest.ThreadBinding binding = new JobsTransactionBindingTest.ThreadBinding();
        Jobs jobs = closeLater(Baton.builder(appPool)
                        .schema(schema)
                        .migrateOnStart(false)
                        .transactionBinding(binding)
                        .build())
                .jobs();
        try (Connection tx = appPool.getConnection()) {
            tx.setAutoCommit(false);
            binding.bound.set(tx);
            try {
                EnqueueResult one = jobs.enqueue(unique("p1", "bound", Uniqueness.whileAvailable()));
                assertThat(jobs.enqueue(unique("p2", "bound", Uniqueness.whileAvailable())))
                        .isEqualTo(new EnqueueResult(one.id(), false));
                assertThat(jobCount()).as("not committed yet").isZero();
                tx.rollback();
            } finally {
                binding.bound.remove();
            }
        }
        assertThat(jobCount()).isZero();
        assertThat(jobs.enqueue(unique("p3", "bound", Uniqueness.whileAvailable()))
                        .created())
                .as("the rolled-back job held nothing")
                .isTrue();
    }

    /** The pruner deletes the key rows of pruned jobs; a key whose job is gone starts afresh. */
    @Test
    void prunedJobsFreeTheirKeys() throws Exception {
        Jobs jobs = jobsClient();
        long id = jobs.enqueue(unique("g1", "gone", Uniqueness.within(Duration.ofDays(1))))
                .id();
        try (Connection c = pool.getConnection();
                Statement s = c.createStatement()) {
            s.executeUpdate("DELETE FROM " + schema + ".job WHERE id = " + id); // as the pruner deletes
        }
        assertThat(jobs.enqueue(unique("g2", "gone", Uniqueness.within(Duration.ofDays(1))))
                        .created())
                .isTrue();
        try (Connection c = pool.getConnection();
                Statement s = c.createStatement()) {
            s.executeUpdate("DELETE FROM " + schema + ".job");
        }
        maintenance(fastWorker("default", 1).build()).pruneOnce();
        assertThat(count("SELECT count(*) FROM " + schema + ".job_unique")).isZero();
    }

    /** Bad input is refused with what was wrong and what is allowed. */
    @Test
    void badInputIsRefused() {
        JobRequest r = JobRequest.of("sync", null);
        assertThatThrownBy(() -> r.unique(null, Uniqueness.whileAvailable()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("uniqueness key");
        assertThatThrownBy(() -> r.unique("x".repeat(201), Uniqueness.whileAvailable()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("uniqueness key");
        assertThatThrownBy(() -> r.unique("k", null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("uniqueness must be set");
        for (Duration bad : new Duration[] {null, Duration.ZERO, Duration.ofMillis(-1), Duration.ofDays(366)}) {
            assertThatThrownBy(() -> Uniqueness.within(bad))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("between 1 ms and PT8760H")
                    .hasMessageContaining("but was " + bad);
        }
        assertThatThrownBy(() -> Uniqueness.whileAvailable().onConflict(null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("RETURN_EXISTING, REPLACE, REJECT");
        assertThat(r.unique("k", Uniqueness.whileAvailable()).uniqueKey()).isEqualTo("k");
        assertThat(r.uniqueKey()).as("requests are immutable").isNull();
    }

    private static JobRequest unique(String name, String key, Uniqueness u) {
        return JobRequest.of("sync", new Item(name)).unique(key, u);
    }

    private long claimOne(JobStore store) throws SQLException {
        try (Connection c = pool.getConnection()) {
            List<JobStore.Claimed> claimed = store.claim(c, "default", new String[] {"sync"}, 1, 60_000, "test");
            assertThat(claimed).hasSize(1);
            return claimed.get(0).id();
        }
    }

    /** Jobs per payload name. */
    private Map<String, Long> jobsPerName() throws SQLException {
        Map<String, Long> out = new TreeMap<>();
        try (Connection c = pool.getConnection();
                PreparedStatement ps =
                        c.prepareStatement("SELECT payload->>'name', count(*) FROM " + schema + ".job GROUP BY 1");
                ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                out.put(rs.getString(1), rs.getLong(2));
            }
        }
        return out;
    }

    /** Every job row and key row, as text. */
    private String dump() throws SQLException {
        StringBuilder out = new StringBuilder();
        try (Connection c = pool.getConnection();
                Statement s = c.createStatement()) {
            for (String q : List.of(
                    "SELECT j::text FROM " + schema + ".job j ORDER BY id",
                    "SELECT u::text FROM " + schema + ".job_unique u ORDER BY unique_key")) {
                try (ResultSet rs = s.executeQuery(q)) {
                    while (rs.next()) {
                        out.append(rs.getString(1)).append('\n');
                    }
                }
            }
        }
        return out.toString();
    }

    private void createOwnTable() throws SQLException {
        try (Connection c = pool.getConnection();
                Statement s = c.createStatement()) {
            s.execute("CREATE TABLE " + schema + ".own (n int)");
        }
    }

    private void insertOwn(Connection tx, int n) throws SQLException {
        try (PreparedStatement ps = tx.prepareStatement("INSERT INTO " + schema + ".own VALUES (?)")) {
            ps.setInt(1, n);
            ps.executeUpdate();
        }
    }
}
