package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.baton.internal.db.Jdbc;
import dev.baton.internal.job.EnqueueWakes;
import dev.baton.internal.job.JobStore;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import javax.sql.DataSource;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Enqueues that Baton commits itself notify their queue at most once per window (decision 0038): the first
 * after a quiet window in its own statement, the rest once, after they committed, from the enqueue notifier's
 * thread. The client's clock is held still here, so the window ends only when the test moves it on: what would
 * otherwise be a race of milliseconds is a fixed order of steps.
 */
class JobEnqueueWakesTest extends JobBehaviourTestBase {
    private final AtomicLong clientClock = new AtomicLong(1_000_000_000L);

    @BeforeEach
    void needsListen() {
        Assumptions.assumeFalse(PG.pooled(), "LISTEN through a transaction pooler loses notifications");
    }

    /**
     * Two connections of the application pool are open before the test begins, so that no borrow of a client and its
     * notifier (two at a time at most) waits for a new one: the user pool profile gives a borrow 1 s, and a
     * notification whose borrow failed is tried again only as the test moves the client's clock.
     */
    @BeforeEach
    void twoConnectionsOpen() throws SQLException {
        try (Connection one = appPool.getConnection();
                Connection two = appPool.getConnection()) {
            assertThat(one).isNotSameAs(two);
        }
    }

    /**
     * Fifty single enqueues in one window: one notification in the first enqueue's statement, one after the
     * window from the notifier, sent when all fifty rows were there; none for each of the others. A client
     * closed within a window notifies what it still held.
     *
     * <p>Protections removed to see it fail: the window ({@code EnqueueWakes.inline} always true): 50
     * notifications before the marker, not one. The notification after the commits ({@code notifyLater} doing
     * nothing): the second notification never came and the await timed out. The notification at close
     * ({@code afterLastPass} notifying nothing): the closed client's queue was heard once, and the await timed out.
     */
    @Test
    void enqueuesWithinAWindowAreNotifiedOnceMoreAfterTheyCommittedNotEachInItsOwnStatement() throws Exception {
        Jobs jobs = client().jobs();
        try (JobChannelListener heard = new JobChannelListener()) {
            for (int i = 0; i < 50; i++) {
                jobs.enqueue(JobRequest.of("kind.wake", new Item("#" + i)).queue("burst"));
            }
            assertHeardBeforeTheWindowEnded(heard, "burst");

            clientClock.addAndGet(EnqueueWakes.NOTIFIER_NANOS);
            awaitAsTheClockMoves(() -> heard.queues.size() == 3);
            assertThat(heard.queues).containsExactly("burst", "marker", "burst");
            assertThat(heard.rowsWhenHeard.get(2))
                    .as("rows of the queue when the notifier's notification arrived")
                    .isEqualTo(50L);

            // Another client, closed within its window: the close notifies for the enqueues after the first.
            Baton closing = client();
            for (int i = 0; i < 5; i++) {
                closing.jobs()
                        .enqueue(JobRequest.of("kind.wake", new Item("late #" + i))
                                .queue("closing"));
            }
            closing.close();
            await().atMost(WAIT).until(() -> heard.queues.size() == 5);
            assertThat(heard.queues.subList(3, 5)).containsExactly("closing", "closing");
            assertThat(heard.rowsWhenHeard.get(4)).isEqualTo(5L);
        }
    }

    /**
     * The first enqueue after the window notifies in its own statement, and that notification stands for the
     * enqueues the window held back: the notifier's thread sends nothing for them (decision 0042). Five enqueues in
     * a window, the clock moved past the window but not past the carry time, a sixth: two notifications, the second
     * sent when all six rows were there; none more as the client closes (its notifier sends what it still holds).
     *
     * <p>Protection removed to see it fail: the carrying ({@code EnqueueWakes.inline} leaving the pending queues to
     * the notifier): a third notification came before the marker.
     */
    @Test
    void theFirstEnqueueAfterTheWindowCarriesTheNotificationOfTheEnqueuesItHeldBack() throws Exception {
        Baton carrier = client();
        Jobs jobs = carrier.jobs();
        try (JobChannelListener heard = new JobChannelListener()) {
            for (int i = 0; i < 5; i++) {
                jobs.enqueue(JobRequest.of("kind.wake", new Item("#" + i)).queue("carried"));
            }
            clientClock.addAndGet(EnqueueWakes.WINDOW_NANOS);
            jobs.enqueue(JobRequest.of("kind.wake", new Item("#5")).queue("carried"));
            await().atMost(WAIT).until(() -> heard.queues.size() == 2);
            assertThat(heard.rowsWhenHeard.get(1))
                    .as("rows of the queue when the sixth enqueue's notification arrived")
                    .isEqualTo(6L);

            carrier.close();
            assertHeardBefore(heard, List.of("carried", "carried"));
        }
    }

    /**
     * J01 (pick-up side): an enqueue that was to carry the held-back notification fails: the notifier sends it after
     * the carry time, so the jobs that were committed are still woken.
     *
     * <p>Protection removed to see it fail: putting the carried queues back when the carrying enqueue failed
     * ({@code EnqueueWakes.enqueue}'s {@code notifyLater(carried)}): no second notification came, and the await
     * timed out.
     */
    @Test
    void J01_whenTheEnqueueThatWasToCarryTheNotificationFailsTheNotifierSendsIt() throws Exception {
        AtomicBoolean down = new AtomicBoolean();
        Jobs jobs = clientOfAPoolThatRefuses(down, new AtomicInteger());
        try (JobChannelListener heard = new JobChannelListener()) {
            for (int i = 0; i < 5; i++) {
                jobs.enqueue(JobRequest.of("kind.wake", new Item("#" + i)).queue("dropped"));
            }
            clientClock.addAndGet(EnqueueWakes.WINDOW_NANOS);
            down.set(true);
            assertThatThrownBy(() -> jobs.enqueue(
                            JobRequest.of("kind.wake", new Item("#5")).queue("dropped")))
                    .isInstanceOf(BatonException.class);
            down.set(false);

            clientClock.addAndGet(EnqueueWakes.NOTIFIER_NANOS);
            awaitAsTheClockMoves(() -> heard.queues.size() == 2);
            assertThat(heard.queues).containsExactly("dropped", "dropped");
            assertThat(heard.rowsWhenHeard.get(1)).isEqualTo(5L);
        }
    }

    /**
     * Enqueues in a transaction a framework keeps for the thread (as Spring's binding offers it) are notified after
     * that transaction committed, by the notifier, at most once per window: ten transactions of one job each within
     * one window make one notification, then one more when the window ends, sent when all ten rows were there; none
     * inside a transaction (decision 0039).
     *
     * <p>Protection removed to see it fail: the binding's after-commit ({@code Jobs.onBound} notifying in the
     * statement whatever the binding can do): ten notifications before the marker, one per transaction.
     */
    @Test
    void enqueuesInAFrameworksTransactionAreNotifiedAfterItCommitsOncePerWindow() throws Exception {
        ThreadTransactions transactions = new ThreadTransactions();
        Jobs jobs = closeLater(Baton.builder(appPool)
                        .schema(schema)
                        .ticker(clientClock::get)
                        .transactionBinding(transactions)
                        .build())
                .jobs();
        try (JobChannelListener heard = new JobChannelListener()) {
            transactions.run(
                    appPool,
                    () -> jobs.enqueue(
                            JobRequest.of("kind.wake", new Item("#0")).queue("bound")));
            // The queue was quiet: notified at once, by the notifier. The clock stands still: this opens the window.
            await().atMost(WAIT).until(() -> heard.queues.contains("bound"));
            for (int i = 1; i < 10; i++) {
                Item item = new Item("#" + i);
                transactions.run(
                        appPool,
                        () -> jobs.enqueue(JobRequest.of("kind.wake", item).queue("bound")));
            }
            assertHeardBeforeTheWindowEnded(heard, "bound");

            clientClock.addAndGet(EnqueueWakes.NOTIFIER_NANOS);
            awaitAsTheClockMoves(() -> heard.queues.size() == 3);
            assertThat(heard.queues.get(2)).isEqualTo("bound");
            assertThat(heard.rowsWhenHeard.get(2)).isEqualTo(10L);
        }
    }

    /**
     * A client on the client's clock whose pool refuses every connection while {@code down} is set, counting the
     * refusals in {@code refused}.
     */
    private Jobs clientOfAPoolThatRefuses(AtomicBoolean down, AtomicInteger refused) {
        DataSource flaky = (DataSource) Proxy.newProxyInstance(
                getClass().getClassLoader(), new Class<?>[] {DataSource.class}, (proxy, m, args) -> {
                    if (m.getName().equals("getConnection") && down.get()) {
                        refused.incrementAndGet();
                        throw new SQLException("no connection (test)", "08001");
                    }
                    try {
                        return m.invoke(appPool, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        return closeLater(Baton.builder(flaky)
                        .schema(schema)
                        .ticker(clientClock::get)
                        .build())
                .jobs();
    }

    /**
     * Sends a marker on the job channel and, once it is heard, asserts that {@code queue} was heard once before it.
     * Notifications arrive in commit order: once the marker is heard, so is every enqueue's before it.
     */
    private void assertHeardBeforeTheWindowEnded(JobChannelListener heard, String queue) throws SQLException {
        assertHeardBefore(heard, List.of(queue));
    }

    /**
     * Sends a marker on the job channel and, once it is heard, asserts that exactly {@code queues} were heard before
     * it: notifications arrive in commit order.
     */
    private void assertHeardBefore(JobChannelListener heard, List<String> queues) throws SQLException {
        try (Connection c = pool.getConnection()) {
            Jdbc.execute(c, "SELECT pg_notify('" + JobStore.channel(schema) + "', 'marker')");
        }
        await().atMost(WAIT).until(() -> heard.queues.contains("marker"));
        List<String> expected = new ArrayList<>(queues);
        expected.add("marker");
        assertThat(heard.queues).as("heard before the marker").containsExactlyElementsOf(expected);
    }

    /** A transaction per thread, kept by "a framework": its connection, and what runs once it has committed. */
    private static final class ThreadTransactions implements TransactionBinding {
        private final ThreadLocal<Connection> open = new ThreadLocal<>();
        private final ThreadLocal<List<Runnable>> afterCommit = ThreadLocal.withInitial(ArrayList::new);

        @Override
        public Optional<Connection> current(DataSource dataSource) {
            return Optional.ofNullable(open.get());
        }

        @Override
        public <T> T bind(DataSource dataSource, Connection transaction, Callable<T> work) throws Exception {
            return work.call();
        }

        @Override
        public boolean afterCommit(Runnable wake) {
            return open.get() != null && afterCommit.get().add(wake);
        }

        /** Runs {@code work} in a transaction of this thread, commits it, then runs what was registered. */
        void run(DataSource dataSource, Runnable work) throws SQLException {
            try (Connection c = dataSource.getConnection()) {
                c.setAutoCommit(false);
                open.set(c);
                try {
                    work.run();
                    c.commit();
                } finally {
                    open.remove();
                }
                afterCommit.get().forEach(Runnable::run);
            } finally {
                afterCommit.remove();
            }
        }
    }

    /**
     * J01 (pick-up side): a notification the notifier could not send (no connection: the pool exhausted, the database
     * away) is kept and sent once a connection comes back, not dropped for the workers' poll.
     *
     * <p>Protection removed to see it fail: the queues put back after a failure ({@code pending.addAll(due)} in
     * {@code EnqueueWakes.runOnce}): the second notification never came, and the await timed out.
     */
    @Test
    void J01_aNotificationThatFailedIsSentOnceAConnectionComesBack() throws Exception {
        AtomicBoolean down = new AtomicBoolean();
        AtomicInteger refused = new AtomicInteger();
        Jobs jobs = clientOfAPoolThatRefuses(down, refused);
        try (JobChannelListener heard = new JobChannelListener()) {
            for (int i = 0; i < 5; i++) {
                jobs.enqueue(JobRequest.of("kind.wake", new Item("#" + i)).queue("flaky"));
            }
            await().atMost(WAIT).until(() -> heard.queues.contains("flaky"));

            down.set(true);
            clientClock.addAndGet(EnqueueWakes.NOTIFIER_NANOS);
            awaitAsTheClockMoves(() -> refused.get() > 0);
            down.set(false);
            awaitAsTheClockMoves(() -> heard.queues.size() == 2);
            assertThat(heard.queues).containsExactly("flaky", "flaky");
            assertThat(heard.rowsWhenHeard.get(1))
                    .as("rows of the queue when the retried notification arrived")
                    .isEqualTo(5L);
        }
    }

    /**
     * J01 (pick-up side): jobs whose enqueue did not notify are still started at once by a node whose next poll is
     * an hour away: the notifier wakes it when the window ends. The node is made idle first (a claim found the one
     * job there, which blocks a slot), so nothing but a notification can start the jobs enqueued after that claim.
     *
     * <p>Protection removed to see it fail: the notification after the commits ({@code EnqueueWakes.notifyLater}
     * doing nothing): none of the twenty jobs started, and the latch timed out.
     */
    @Test
    void J01_jobsEnqueuedWithoutANotificationOfTheirOwnAreStartedWithoutWaitingForAPoll() throws Exception {
        CountDownLatch ran = new CountDownLatch(20);
        Jobs jobs = client().jobs();
        CountDownLatch release = idleNode(fastWorker("q", 4), "q", ran::countDown, jobs);
        try {
            // Within the first enqueue's window (the client's clock stands still): not notified by themselves.
            for (int i = 0; i < 10; i++) {
                jobs.enqueue(JobRequest.of("kind.wake", new Item("#" + i)).queue("q"));
            }
            List<JobRequest> batch = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                batch.add(JobRequest.of("kind.wake", new Item("batch #" + i)).queue("q"));
            }
            jobs.enqueueAll(batch);
            clientClock.addAndGet(EnqueueWakes.NOTIFIER_NANOS);
            awaitAsTheClockMoves(() -> ran.getCount() == 0); // every job started, none left for the poll an hour away
        } finally {
            release.countDown();
        }
    }

    /**
     * J01 (pick-up side, many enqueuers): eight threads enqueue one job per call into two queues at once, and a node
     * whose next poll is an hour away starts every job. The node is made idle first (one job blocks a slot), so it
     * claims only when notified. First every 25th enqueue moves the client's clock past the window (every 50th
     * past the carry time too), so the notifier's passes and the inline notifications fall among the enqueues (a queue marked while the notifier
     * takes it, a notification sent while others commit). Then one job in each of two other queues is notified in
     * its statement and run; with the node idle again and the clock held inside that window, the eight threads
     * enqueue 80 more into those two, none of them notified by itself, and the window ends. A mark lost in any of
     * these orders leaves jobs for the poll.
     *
     * <p>Protection removed to see it fail: the notification after the commits ({@code EnqueueWakes.notifyLater}
     * doing nothing): the first part passed in both runs (the inline notifications came often enough to start
     * every job), none of the 80 jobs of the second started, and the await timed out.
     */
    @Test
    void J01_jobsEnqueuedFromManyThreadsAtOnceAreAllStartedWithoutWaitingForAPoll() throws Exception {
        AtomicInteger ran = new AtomicInteger();
        Jobs jobs = clientForEightThreads().jobs();
        CountDownLatch release =
                idleNode(fastWorker("a", 8).queue("b", 8).queue("c", 4).queue("d", 4), "a", ran::incrementAndGet, jobs);
        try {
            AtomicInteger enqueued = new AtomicInteger();
            enqueueFromEightThreads(jobs, "a", "b", 100, () -> {
                int n = enqueued.incrementAndGet();
                if (n % 25 == 0) {
                    // Past the window only (the next enqueue carries the pending notification), or past the
                    // carry time too (the notifier's thread and the next enqueue race for it): both, in turn.
                    clientClock.addAndGet(n % 50 == 0 ? EnqueueWakes.NOTIFIER_NANOS : EnqueueWakes.WINDOW_NANOS);
                }
            });
            clientClock.addAndGet(EnqueueWakes.NOTIFIER_NANOS); // the last window ends
            awaitRan(ran, 800, true);

            // Two other queues: one job each, notified in its statement; the clock stands inside that window.
            jobs.enqueue(JobRequest.of("kind.wake", new Item("c")).queue("c"));
            jobs.enqueue(JobRequest.of("kind.wake", new Item("d")).queue("d"));
            awaitRan(ran, 802, false); // the clock stands still: the window of c and d goes on
            enqueueFromEightThreads(jobs, "c", "d", 10, () -> {}); // the node idle: none notified by itself
            clientClock.addAndGet(EnqueueWakes.NOTIFIER_NANOS);
            awaitRan(ran, 882, true);
        } finally {
            release.countDown();
        }
    }

    /**
     * Starts a node whose next poll is an hour away and makes it idle: one job, notified in its statement, blocks a
     * slot of {@code blocked} until the returned latch is counted down, so from then on the node claims
     * only when notified. Every job of kind {@code kind.wake} it runs calls {@code onWake}.
     */
    private CountDownLatch idleNode(WorkerConfig.Builder worker, String blocked, Runnable onWake, Jobs jobs)
            throws Exception {
        CountDownLatch blocking = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        Baton node = start(nodeBuilder("idle", pool) // the test pool: large enough to LISTEN in every CI mode
                .worker(worker.pollInterval(Duration.ofHours(1)).build())
                .handle("kind.block", Item.class, (item, ctx) -> {
                    blocking.countDown();
                    release.await();
                })
                .handle("kind.wake", Item.class, (item, ctx) -> onWake.run()));
        assertThat(node.notificationsActive()).isTrue();
        jobs.enqueue(JobRequest.of("kind.block", new Item("first")).queue(blocked)); // notified in its statement
        assertThat(blocking.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
        return release;
    }

    /** Eight threads, started together, each enqueueing {@code perThread} jobs one per call into two queues in turn. */
    private static void enqueueFromEightThreads(Jobs jobs, String one, String other, int perThread, Runnable afterEach)
            throws Exception {
        int threads = 8;
        CyclicBarrier together = new CyclicBarrier(threads);
        ExecutorService enqueuers = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int thread = t;
                done.add(enqueuers.submit(() -> {
                    together.await();
                    for (int i = 0; i < perThread; i++) {
                        String queue = (thread + i) % 2 == 0 ? one : other;
                        jobs.enqueue(JobRequest.of("kind.wake", new Item(thread + "#" + i))
                                .queue(queue));
                        afterEach.run();
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(WAIT.toMillis(), TimeUnit.MILLISECONDS);
            }
        } finally {
            enqueuers.shutdownNow();
        }
    }

    /** Waits until {@code expected} jobs ran (as {@link #awaitAsTheClockMoves} if {@code clockMoves}), not more. */
    private void awaitRan(AtomicInteger ran, int expected, boolean clockMoves) {
        if (clockMoves) {
            awaitAsTheClockMoves(() -> ran.get() >= expected);
        } else {
            await().atMost(WAIT).until(() -> ran.get() >= expected);
        }
        assertThat(ran.get())
                .as("jobs started, none left for the poll an hour away")
                .isEqualTo(expected);
    }

    /**
     * Waits until {@code done}, moving the client's clock on by the notifier's retry time whenever it is not. A
     * notification the notifier could not send is tried again {@link EnqueueWakes#RETRY_NANOS} later on the client's
     * clock, which would otherwise stand still, and the test would wait for ever for a notification that failed once
     * (seen in CI: the user pool profile's borrow gave up after its 1 s). Only where the windows under test have
     * ended: moving the clock ends a window.
     */
    private void awaitAsTheClockMoves(Callable<Boolean> done) {
        await().atMost(WAIT).until(() -> {
            if (done.call()) {
                return true;
            }
            clientClock.addAndGet(EnqueueWakes.RETRY_NANOS);
            return false;
        });
    }

    /** A client as {@link #client()}, with a connection for each of eight enqueuing threads and its notifier. */
    private Baton clientForEightThreads() {
        return closeLater(Baton.builder(appPoolOf("eight", 9))
                .schema(schema)
                .ticker(clientClock::get)
                .build());
    }

    /** A client Baton on the test pool (never started: it only enqueues), on a clock that the test moves. */
    private Baton client() {
        return closeLater(
                Baton.builder(appPool).schema(schema).ticker(clientClock::get).build());
    }
}
