package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * {@link TransactionBinding} in the core, with a hand-written binding that keeps one connection per thread
 * (as a framework's transaction manager does): {@link Jobs#enqueue(JobRequest)} and
 * {@link Jobs#enqueueAll} join the bound transaction and leave it to its owner, and the work of
 * {@link JobContext#transaction} runs with the completion transaction bound.
 */
class JobsTransactionBindingTest extends JobBehaviourTestBase {

    /** A thread's "current transaction", as Spring's TransactionSynchronizationManager keeps it. */
    static final class ThreadBinding implements TransactionBinding {
        final ThreadLocal<Connection> bound = new ThreadLocal<>();
        volatile boolean markRollbackOnly;

        @Override
        public Optional<Connection> current(DataSource dataSource) {
            return Optional.ofNullable(bound.get());
        }

        @Override
        public <T> T bind(DataSource dataSource, Connection transaction, Callable<T> work) throws Exception {
            Connection before = bound.get();
            bound.set(transaction);
            try {
                T result = work.call();
                if (markRollbackOnly) {
                    throw new IllegalStateException("the transaction was marked rollback-only");
                }
                return result;
            } finally {
                bound.set(before);
            }
        }
    }

    /**
     * Inside a bound transaction, enqueue runs on its connection and neither commits nor closes it: the
     * job is invisible to others until the owner commits, and gone if the owner rolls back.
     *
     * <p>Protection removed and seen failing: {@code Jobs.enqueue} asking the binding for the current
     * transaction (it committed on its own connection): the job was visible before the owner committed and
     * survived the rollback.
     */
    @Test
    void enqueueJoinsTheBoundTransactionAndLeavesItToItsOwner() throws Exception {
        ThreadBinding binding = new ThreadBinding();
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
                jobs.enqueue(JobRequest.of("send", new Item("rolled back")));
                assertThat(jobCount()).as("not committed yet").isZero();
                assertThat(tx.isClosed()).isFalse();
                assertThat(tx.getAutoCommit())
                        .as("Baton left the owner's transaction open")
                        .isFalse();
                assertThat(count(tx, "SELECT count(*) FROM " + schema + ".job"))
                        .as("the job is in the owner's transaction")
                        .isEqualTo(1);
                tx.rollback();
                assertThat(jobCount()).as("the owner rolled back: no job").isZero();

                long id = jobs.enqueue(JobRequest.of("send", new Item("committed")))
                        .id();
                jobs.enqueueAll(List.of(JobRequest.of("send", new Item("b1")), JobRequest.of("send", new Item("b2"))));
                assertThat(jobCount()).isZero();
                tx.commit();
                assertThat(jobCount()).as("the owner committed: three jobs").isEqualTo(3);
                assertThat(jobs.get(id)).isPresent();
            } finally {
                binding.bound.remove();
            }
        }
    }

    /** Without a bound transaction, enqueue commits on its own connection before it returns, as without a binding. */
    @Test
    void enqueueOutsideABoundTransactionCommitsOnItsOwn() throws Exception {
        ThreadBinding binding = new ThreadBinding();
        Jobs jobs = closeLater(Baton.builder(appPool)
                        .schema(schema)
                        .migrateOnStart(false)
                        .transactionBinding(binding)
                        .build())
                .jobs();
        jobs.enqueue(JobRequest.of("send", new Item("alone")));
        jobs.enqueueAll(List.of(JobRequest.of("send", new Item("batch"))));
        assertThat(jobCount()).isEqualTo(2);
    }

    @Test
    void builderRefusesANullTransactionBinding() {
        assertThatThrownBy(() -> Baton.builder(appPool).transactionBinding(null))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("transactionBinding must not be null")
                .hasMessageContaining("TransactionBinding.NONE");
    }

    /**
     * The work of {@code ctx.transaction} runs with the completion transaction bound: a job enqueued inside
     * it joins the completion and commits with it.
     *
     * <p>Protection removed and seen failing: {@code RunningAttempt.transaction} running the work through
     * the binding (the work ran with nothing bound, so the follow-up enqueue committed on its own
     * connection).
     */
    @Test
    void completionTransactionIsBoundWhileTheWorkRuns() throws Exception {
        ThreadBinding binding = new ThreadBinding();
        AtomicReference<Boolean> sameConnection = new AtomicReference<>();
        AtomicReference<Jobs> jobsRef = new AtomicReference<>();
        Baton node = start(nodeBuilder("bound")
                .transactionBinding(binding)
                .worker(fastWorker("default", 1).build())
                .handle(
                        "first",
                        Item.class,
                        (item, ctx) -> ctx.transaction(c -> {
                            sameConnection.set(binding.current(null).orElse(null) == c);
                            return jobsRef.get().enqueue(JobRequest.of("second", new Item("follow-up")));
                        }))
                .handle("second", Item.class, (item, ctx) -> {}));
        jobsRef.set(node.jobs());
        long id = node.jobs().enqueue(JobRequest.of("first", new Item("x"))).id();
        awaitState(node.jobs(), id, JobState.SUCCEEDED);
        assertThat(sameConnection.get())
                .as("the work saw its own connection bound")
                .isTrue();
        assertThat(binding.bound.get())
                .as("nothing left bound on the test thread")
                .isNull();
    }

    /**
     * A binding that reports the transaction rollback-only (a participant failed) makes the completion roll
     * back: the handler's row is not written, the attempt fails with the binding's error, and the job is
     * retried.
     *
     * <p>Protection removed and seen failing: {@code RunningAttempt.transaction} running the work through
     * the binding: the first attempt's row and its completion committed, no error was recorded.
     */
    @Test
    void rollbackOnlyReportedByTheBindingRollsTheCompletionBack() throws Exception {
        try (Connection c = pool.getConnection();
                Statement s = c.createStatement()) {
            s.execute("CREATE TABLE " + schema + ".effect (job_id bigint, attempt int)");
        }
        ThreadBinding binding = new ThreadBinding();
        binding.markRollbackOnly = true;
        Baton node = start(nodeBuilder("rollback-only")
                .transactionBinding(binding)
                .worker(fastWorker("default", 1).build())
                .handle(
                        "write",
                        Item.class,
                        (item, ctx) -> {
                            if (ctx.attempt() == 2) {
                                binding.markRollbackOnly = false;
                            }
                            ctx.transaction(c -> {
                                try (Statement s = c.createStatement()) {
                                    return s.executeUpdate("INSERT INTO " + schema + ".effect VALUES (" + ctx.jobId()
                                            + ", " + ctx.attempt() + ")");
                                }
                            });
                        },
                        RetryPolicy.immediate()));
        long id = node.jobs()
                .enqueue(JobRequest.of("write", new Item("x")).maxAttempts(3))
                .id();
        JobInfo done = awaitState(node.jobs(), id, JobState.SUCCEEDED);
        assertThat(done.errors()).hasSize(1);
        assertThat(done.errors().get(0).message()).contains("rollback-only");
        assertThat(count("SELECT count(*) FROM " + schema + ".effect WHERE attempt = 1"))
                .as("the first attempt's row rolled back")
                .isZero();
        assertThat(count("SELECT count(*) FROM " + schema + ".effect WHERE attempt = 2"))
                .isEqualTo(1);
    }

    private static long count(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement();
                java.sql.ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
