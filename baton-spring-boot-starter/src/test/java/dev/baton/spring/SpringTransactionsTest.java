package dev.baton.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.baton.Baton;
import dev.baton.JobHandler;
import dev.baton.JobInfo;
import dev.baton.JobRequest;
import dev.baton.JobState;
import dev.baton.RetryPolicy;
import dev.baton.TransactionBinding;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.annotation.EnableTransactionManagement;
import org.springframework.transaction.annotation.Propagation;
import org.springframework.transaction.annotation.Transactional;

/**
 * Spring transactions through the starter's {@link SpringTransactionBinding}, on a real database: enqueue
 * joins the caller's {@code @Transactional} method, and a handler's {@code ctx.transaction} is the Spring
 * transaction that {@code JdbcTemplate} and {@code @Transactional} code join.
 */
class SpringTransactionsTest extends StarterTestSupport {
    /** What the "ship" handler does; set by each test before it enqueues. */
    static volatile JobHandler<String> handler = (id, ctx) -> {};
    /**
     * Called by the business methods at named points ("enqueued", "inner returned"), still inside their
     * transactions; a test sets it to look at the database from a connection of its own.
     */
    static volatile java.util.function.Consumer<String> probe = where -> {};

    /** A business service: the order row and its job in one Spring transaction. */
    public static class Orders {
        private final JdbcTemplate jdbc;
        private final Baton baton;
        private final Inner inner;
        private final String schema;

        public Orders(JdbcTemplate jdbc, Baton baton, Inner inner, String schema) {
            this.jdbc = jdbc;
            this.baton = baton;
            this.inner = inner;
            this.schema = schema;
        }

        @Transactional
        public void place(String id, boolean fail) {
            jdbc.update("INSERT INTO " + schema + ".orders VALUES (?)", id);
            baton.jobs().enqueue(JobRequest.of("ship", id));
            probe.accept("enqueued");
            if (fail) {
                throw new IllegalStateException("the order was refused after its job was enqueued");
            }
        }

        @Transactional
        public void placeThroughInner(String id, boolean requiresNew) {
            jdbc.update("INSERT INTO " + schema + ".orders VALUES (?)", id);
            if (requiresNew) {
                inner.enqueueInNewTransaction(id);
            } else {
                inner.enqueueJoined(id);
            }
            probe.accept("inner returned");
            throw new IllegalStateException("the outer transaction fails");
        }

        /** The order commits; the job, enqueued in a NESTED method that then fails, goes with its savepoint. */
        @Transactional
        public void placeWithNestedEnqueueThatFails(String id) {
            jdbc.update("INSERT INTO " + schema + ".orders VALUES (?)", id);
            try {
                inner.enqueueNestedThenFail(id);
            } catch (IllegalStateException expected) {
                // the outer carries on and commits
            }
        }
    }

    /** Nested transactional methods, on a bean of their own so that the proxy applies. */
    public static class Inner {
        private final JdbcTemplate jdbc;
        private final Baton baton;
        private final String schema;

        public Inner(JdbcTemplate jdbc, Baton baton, String schema) {
            this.jdbc = jdbc;
            this.baton = baton;
            this.schema = schema;
        }

        @Transactional
        public void enqueueJoined(String id) {
            baton.jobs().enqueue(JobRequest.of("ship", id));
        }

        @Transactional(propagation = Propagation.REQUIRES_NEW)
        public void enqueueInNewTransaction(String id) {
            baton.jobs().enqueue(JobRequest.of("ship", id));
            probe.accept("enqueued");
        }

        @Transactional(propagation = Propagation.NESTED)
        public void enqueueNestedThenFail(String id) {
            baton.jobs().enqueue(JobRequest.of("ship", id));
            throw new IllegalStateException("the nested method fails after its enqueue");
        }

        /**
         * A SUPPORTS scope without a transaction: JdbcTemplate's connection is bound to the thread for the
         * scope, but no transaction is active (with an auto-commit=false pool nobody commits that connection).
         */
        @Transactional(propagation = Propagation.SUPPORTS)
        public long insertAndEnqueueWithoutTransaction(String id) {
            jdbc.update("INSERT INTO " + schema + ".orders VALUES (?)", id);
            return baton.jobs().enqueue(JobRequest.of("ship", id)).id();
        }

        @Transactional
        public void recordThenFail(String id) {
            jdbc.update("INSERT INTO " + schema + ".shipped VALUES (?, 0)", id);
            throw new IllegalStateException("the inner method fails");
        }

        @Transactional(propagation = Propagation.REQUIRES_NEW)
        public void auditInNewTransaction(String id) {
            jdbc.update("INSERT INTO " + schema + ".audit VALUES (?)", id);
        }
    }

    @Configuration(proxyBeanMethods = false)
    @EnableTransactionManagement
    static class TxConfig {
        @Bean
        PlatformTransactionManager transactionManager(DataSource ds) {
            return new DataSourceTransactionManager(ds);
        }

        @Bean
        JdbcTemplate jdbcTemplate(DataSource ds) {
            return new JdbcTemplate(ds);
        }

        @Bean
        Inner inner(JdbcTemplate jdbc, Baton baton, @Value("${baton.schema}") String schema) {
            return new Inner(jdbc, baton, schema);
        }

        @Bean
        Orders orders(JdbcTemplate jdbc, Baton baton, Inner inner, @Value("${baton.schema}") String schema) {
            return new Orders(jdbc, baton, inner, schema);
        }

        @Bean
        BatonCustomizer shipHandler() {
            return b -> b.handle("ship", String.class, (id, ctx) -> handler.handle(id, ctx), RetryPolicy.immediate());
        }
    }

    /** Runs {@code test} in a started context; the business tables are created in Baton's schema once it exists. */
    private void run(ContextTest test) {
        run(runner(), test);
    }

    /** As {@link #run(ContextTest)}, on {@code runner}. */
    private void run(ApplicationContextRunner runner, ContextTest test) {
        probe = where -> {};
        runner.withUserConfiguration(TxConfig.class)
                .withPropertyValues("baton.worker.queues.default=2")
                .run(ctx -> {
                    assertThat(ctx).hasNotFailed();
                    try (Connection c = pool.getConnection();
                            Statement s = c.createStatement()) {
                        s.execute("CREATE TABLE " + schema + ".orders (id text PRIMARY KEY)");
                        s.execute("CREATE TABLE " + schema + ".shipped (id text, attempt int)");
                        s.execute("CREATE TABLE " + schema + ".audit (id text)");
                    }
                    test.run(ctx);
                });
    }

    @FunctionalInterface
    interface ContextTest {
        void run(AssertableApplicationContext ctx) throws Exception;
    }

    /**
     * A {@code @Transactional} method that inserts its order, enqueues its job and then throws leaves
     * neither: the job was enqueued in the method's transaction.
     *
     * <p>Protection removed and seen failing: the starter's binding ({@code batonTransactionBinding} bean
     * not set on the builder): the job was committed on its own connection and survived the rollback.
     */
    @Test
    void rollbackOfTransactionalMethodLeavesNoJob() throws SQLException {
        run(ctx -> {
            assertThatThrownBy(() -> ctx.getBean(Orders.class).place("o-1", true))
                    .hasMessageContaining("refused");
            assertThat(count("orders")).isZero();
            assertThat(count("job"))
                    .as("no job for an order that does not exist")
                    .isZero();
        });
    }

    /**
     * A committed {@code @Transactional} method leaves its order and one job, which runs; while the method
     * is still inside its transaction, after the enqueue, another connection sees no job yet: the job
     * commits with the order, not before it.
     *
     * <p>Protection removed and seen failing: the starter's binding ({@code batonTransactionBinding} bean
     * not set on the builder): another connection saw the job before the method returned.
     */
    @Test
    void commitOfTransactionalMethodLeavesOneJobThatRuns() throws SQLException {
        handler = (id, ctx) -> ctx.transaction(
                c -> c.createStatement().executeUpdate("INSERT INTO " + schema + ".shipped VALUES ('" + id + "', 1)"));
        List<Long> seenBeforeCommit = new CopyOnWriteArrayList<>();
        run(ctx -> {
            probe = where -> seenBeforeCommit.add(uncheckedCount("job"));
            ctx.getBean(Orders.class).place("o-2", false);
            assertThat(seenBeforeCommit)
                    .as("jobs another connection saw after the enqueue, before the commit")
                    .containsExactly(0L);
            assertThat(count("orders")).isEqualTo(1);
            assertThat(count("job")).isEqualTo(1);
            await().atMost(WAIT).until(() -> count("shipped") == 1);
        });
    }

    /**
     * J01 (pick-up side): a job enqueued in a {@code @Transactional} method does not notify inside the method's
     * transaction; once it has committed, the binding runs Baton's wake-up, and a node whose next poll is an hour
     * away starts the job (decision 0039).
     *
     * <p>Protection removed and seen failing: the binding's synchronization ({@code
     * SpringTransactionBinding.afterCommit} returning true without registering it): the job stayed available
     * and the await timed out.
     */
    @Test
    void J01_aJobEnqueuedInATransactionalMethodIsStartedAfterTheCommitWithoutWaitingForAPoll() {
        Assumptions.assumeFalse(PG.pooled(), "LISTEN through a transaction pooler");
        handler = (id, ctx) -> ctx.transaction(
                c -> c.createStatement().executeUpdate("INSERT INTO " + schema + ".shipped VALUES ('" + id + "', 1)"));
        run(runner().withPropertyValues("baton.worker.poll-interval=1h"), ctx -> {
            Baton baton = ctx.getBean(Baton.class);
            await().atMost(WAIT).until(baton::notificationsActive);
            ctx.getBean(Orders.class).place("o-wake", false);
            await().atMost(WAIT).until(() -> count("shipped") == 1);
        });
    }

    /**
     * Outside a Spring transaction, enqueue commits on its own connection before it returns, as before.
     * (The unchanged path: this test passes without the binding too; the case where Spring bound a
     * connection with no transaction is {@link #supportsScopeWithoutTransactionEnqueuesOnItsOwnConnection}.)
     */
    @Test
    void enqueueOutsideTransactionCommitsAtOnce() throws SQLException {
        handler = (id, ctx) -> {};
        run(ctx -> {
            long id = ctx.getBean(Baton.class)
                    .jobs()
                    .enqueue(JobRequest.of("ship", "o-3"))
                    .id();
            assertThat(count("job")).isEqualTo(1);
            awaitState(ctx, id, JobState.SUCCEEDED);
        });
    }

    /**
     * An inner {@code REQUIRED} method's enqueue joins the outer transaction: the outer rolls back, no job.
     *
     * <p>Protection removed and seen failing: the starter's binding (the inner enqueue committed).
     */
    @Test
    void nestedRequiredEnqueueJoinsTheOuterTransaction() throws SQLException {
        run(ctx -> {
            assertThatThrownBy(() -> ctx.getBean(Orders.class).placeThroughInner("o-4", false))
                    .hasMessageContaining("outer");
            assertThat(count("orders")).isZero();
            assertThat(count("job")).isZero();
        });
    }

    /**
     * An enqueue in a {@code REQUIRES_NEW} method commits with that method, though the outer rolls back:
     * not visible to another connection inside the inner method, visible once it returned (the outer still
     * open), and still there after the outer rolled back.
     *
     * <p>Protection removed and seen failing: the starter's binding: the job was visible inside the
     * {@code REQUIRES_NEW} method, before its commit.
     */
    @Test
    void requiresNewAroundEnqueueCommitsTheJobWhenTheOuterRollsBack() throws SQLException {
        handler = (id, ctx) -> {};
        Map<String, Long> seen = new ConcurrentHashMap<>();
        run(ctx -> {
            probe = where -> seen.put(where, uncheckedCount("job"));
            assertThatThrownBy(() -> ctx.getBean(Orders.class).placeThroughInner("o-5", true))
                    .hasMessageContaining("outer");
            assertThat(seen)
                    .as("jobs another connection saw inside the REQUIRES_NEW method and after it returned")
                    .containsExactlyInAnyOrderEntriesOf(Map.of("enqueued", 0L, "inner returned", 1L));
            assertThat(count("orders")).isZero();
            assertThat(count("job")).isEqualTo(1);
        });
    }

    /**
     * A {@code NESTED} method (a savepoint in the outer transaction) that enqueues and then fails takes its
     * job back with the savepoint; the outer method catches the failure and commits its order.
     *
     * <p>Protection removed and seen failing: the starter's binding: the job had committed on its own
     * connection and outlived the savepoint's rollback.
     */
    @Test
    void nestedSavepointRollbackTakesItsJobBack() throws SQLException {
        run(ctx -> {
            ctx.getBean(Orders.class).placeWithNestedEnqueueThatFails("o-10");
            assertThat(count("orders")).as("the outer committed").isEqualTo(1);
            assertThat(count("job")).as("the job went with the savepoint").isZero();
        });
    }

    /**
     * A {@code SUPPORTS} scope with no transaction is not a transaction to join, even though Spring bound
     * JdbcTemplate's connection to the thread for the scope: on a pool with {@code autoCommit=false} (the
     * usual JPA tuning, FAULTS E04) nobody commits that connection, so the job is enqueued and committed on
     * a connection of Baton's, and runs.
     *
     * <p>Protection removed and seen failing: the active-transaction condition of
     * {@code SpringTransactionBinding.current} ({@code isActualTransactionActive()}): the enqueue joined the
     * bound connection, which was never committed, and the job was lost.
     */
    @Test
    void supportsScopeWithoutTransactionEnqueuesOnItsOwnConnection() throws SQLException {
        handler = (id, ctx) -> {};
        run(runner(SpringTransactionsTest::autoCommitOffPool), ctx -> {
            long id = ctx.getBean(Inner.class).insertAndEnqueueWithoutTransaction("o-11");
            assertThat(count("orders"))
                    .as("the insert on the scope's connection was never committed")
                    .isZero();
            assertThat(count("job")).isEqualTo(1);
            awaitState(ctx, id, JobState.SUCCEEDED);
        });
    }

    /** The application's pool as JPA services tune it: {@code autoCommit=false}. */
    private static DataSource autoCommitOffPool() {
        com.zaxxer.hikari.HikariConfig config = new com.zaxxer.hikari.HikariConfig();
        config.setJdbcUrl(PG.jdbcUrl());
        config.setPoolName("starter-app-no-autocommit");
        config.setMaximumPoolSize(10);
        config.setAutoCommit(false);
        return new com.zaxxer.hikari.HikariDataSource(config);
    }

    /**
     * A handler's JdbcTemplate insert inside {@code ctx.transaction} is in the completion transaction: not
     * visible to others before the work returns, committed with the completion after.
     *
     * <p>Protection removed and seen failing: the starter's binding (not set on the builder, so the work ran
     * with nothing bound): JdbcTemplate auto-committed on a connection of its own, and the row was visible
     * at once.
     */
    @Test
    void handlerJdbcTemplateInsertCommitsWithTheCompletion() throws SQLException {
        AtomicReference<Long> seenOutsideBeforeCommit = new AtomicReference<>();
        run(ctx -> {
            JdbcTemplate jdbc = ctx.getBean(JdbcTemplate.class);
            handler = (id, jc) -> jc.transaction(c -> {
                jdbc.update("INSERT INTO " + schema + ".shipped VALUES (?, ?)", id, jc.attempt());
                seenOutsideBeforeCommit.set(count("shipped"));
                return null;
            });
            long id = ctx.getBean(Baton.class)
                    .jobs()
                    .enqueue(JobRequest.of("ship", "o-6"))
                    .id();
            awaitState(ctx, id, JobState.SUCCEEDED);
            assertThat(seenOutsideBeforeCommit.get())
                    .as("the insert was not committed before the completion")
                    .isZero();
            assertThat(count("shipped")).isEqualTo(1);
        });
    }

    /**
     * Synchronizations registered inside {@code ctx.transaction} (what {@code @TransactionalEventListener}
     * and caches use) run as under a transaction manager: {@code beforeCommit} and {@code beforeCompletion}
     * in the transaction, {@code afterCommit} and {@code afterCompletion(COMMITTED)} once Baton committed;
     * after a failed attempt only {@code afterCompletion(ROLLED_BACK)}.
     *
     * <p>Protection removed and seen failing: {@code SpringTransactionBinding.ended} doing nothing (the callbacks
     * of the earlier design): no {@code afterCommit}, and {@code afterCompletion} never called.
     */
    @Test
    void synchronizationsRegisteredInTheWorkRunAfterBatonCommitsOrRollsBack() throws SQLException {
        java.util.List<String> events = new java.util.concurrent.CopyOnWriteArrayList<>();
        run(ctx -> {
            handler = (id, jc) -> jc.transaction(c -> {
                org.springframework.transaction.support.TransactionSynchronizationManager.registerSynchronization(
                        new org.springframework.transaction.support.TransactionSynchronization() {
                            @Override
                            public void beforeCommit(boolean readOnly) {
                                events.add(jc.attempt() + ":beforeCommit");
                            }

                            @Override
                            public void afterCommit() {
                                // Seen from another connection: the completion has committed.
                                events.add(jc.attempt() + ":afterCommit:" + succeeded());
                            }

                            @Override
                            public void afterCompletion(int status) {
                                events.add(jc.attempt() + ":afterCompletion:" + status);
                            }
                        });
                if (jc.attempt() == 1) {
                    throw new IllegalStateException("the first attempt fails after registering");
                }
                return null;
            });
            long id = ctx.getBean(Baton.class)
                    .jobs()
                    .enqueue(JobRequest.of("ship", "o-sync").maxAttempts(2))
                    .id();
            awaitState(ctx, id, JobState.SUCCEEDED);
            org.awaitility.Awaitility.await().atMost(WAIT).until(() -> events.size() >= 4);
            assertThat(events)
                    .containsExactly(
                            "1:afterCompletion:"
                                    + org.springframework.transaction.support.TransactionSynchronization
                                            .STATUS_ROLLED_BACK,
                            "2:beforeCommit",
                            "2:afterCommit:1",
                            "2:afterCompletion:"
                                    + org.springframework.transaction.support.TransactionSynchronization
                                            .STATUS_COMMITTED);
        });
    }

    /**
     * FAULTS J03 through Spring: a handler that throws after its JdbcTemplate insert inside
     * {@code ctx.transaction} leaves no row; the job is retried, and the retry's row and completion commit.
     *
     * <p>Protection removed and seen failing: the starter's binding (not set on the builder, so the work ran
     * with nothing bound): the first attempt's row was committed by JdbcTemplate on its own connection.
     */
    @Test
    void handlerThrowingAfterJdbcTemplateInsertLeavesNoRowAndRetries() throws SQLException {
        run(ctx -> {
            JdbcTemplate jdbc = ctx.getBean(JdbcTemplate.class);
            handler = (id, jc) -> jc.transaction(c -> {
                jdbc.update("INSERT INTO " + schema + ".shipped VALUES (?, ?)", id, jc.attempt());
                if (jc.attempt() == 1) {
                    throw new IllegalStateException("the handler fails after its insert");
                }
                return null;
            });
            long id = ctx.getBean(Baton.class)
                    .jobs()
                    .enqueue(JobRequest.of("ship", "o-7").maxAttempts(3))
                    .id();
            JobInfo done = awaitState(ctx, id, JobState.SUCCEEDED);
            assertThat(done.errors()).hasSize(1);
            assertThat(count("shipped")).as("only the second attempt's row").isEqualTo(1);
            assertThat(countWhere("shipped", "attempt = 2")).isEqualTo(1);
        });
    }

    /**
     * An inner {@code @Transactional} method that fails marks the completion transaction rollback-only;
     * though the handler swallows its exception, the completion rolls back (no row of that attempt) and
     * the attempt fails with UnexpectedRollbackException.
     *
     * <p>Protection removed and seen failing: the rollback-only check in {@code SpringTransactionBinding.bind}:
     * the handler's row of attempt 1 and the inner method's row committed with the completion.
     */
    @Test
    void innerTransactionalMarkingRollbackOnlyFailsTheAttempt() throws SQLException {
        run(ctx -> {
            JdbcTemplate jdbc = ctx.getBean(JdbcTemplate.class);
            Inner inner = ctx.getBean(Inner.class);
            handler = (id, jc) -> jc.transaction(c -> {
                jdbc.update("INSERT INTO " + schema + ".shipped VALUES (?, ?)", id, jc.attempt());
                if (jc.attempt() == 1) {
                    try {
                        inner.recordThenFail(id);
                    } catch (IllegalStateException swallowed) {
                        // the handler carries on: the transaction is rollback-only all the same
                    }
                }
                return null;
            });
            long id = ctx.getBean(Baton.class)
                    .jobs()
                    .enqueue(JobRequest.of("ship", "o-8").maxAttempts(3))
                    .id();
            JobInfo done = awaitState(ctx, id, JobState.SUCCEEDED);
            assertThat(done.errors()).hasSize(1);
            assertThat(done.errors().get(0).errorClass()).contains("UnexpectedRollbackException");
            assertThat(done.errors().get(0).message()).contains("rollback-only");
            assertThat(countWhere("shipped", "attempt = 1")).isZero();
            assertThat(countWhere("shipped", "attempt = 0"))
                    .as("the inner method's row")
                    .isZero();
            assertThat(countWhere("shipped", "attempt = 2")).isEqualTo(1);
        });
    }

    /**
     * A {@code REQUIRES_NEW} method called inside {@code ctx.transaction} gets its own connection and
     * commits on its own, though the completion then rolls back.
     *
     * <p>This passes without the binding too (the method then has no transaction to suspend); it checks
     * that the bound completion transaction is one Spring can suspend. Protection removed and seen failing:
     * the holder's transaction-active flag in {@code SpringTransactionBinding.bind}
     * ({@code new ConnectionHolder(transaction, false)}): Spring saw no transaction to suspend, tried to bind a
     * second connection and failed every attempt.
     */
    @Test
    void requiresNewInsideHandlerCommitsIndependently() throws SQLException {
        run(ctx -> {
            Inner inner = ctx.getBean(Inner.class);
            handler = (id, jc) -> jc.transaction(c -> {
                inner.auditInNewTransaction(id + "-" + jc.attempt());
                if (jc.attempt() == 1) {
                    throw new IllegalStateException("the completion rolls back");
                }
                return null;
            });
            long id = ctx.getBean(Baton.class)
                    .jobs()
                    .enqueue(JobRequest.of("ship", "o-9").maxAttempts(3))
                    .id();
            awaitState(ctx, id, JobState.SUCCEEDED);
            assertThat(count("audit"))
                    .as("both attempts' audit rows, each committed on its own")
                    .isEqualTo(2);
        });
    }

    /** The starter sets its Spring binding on the builder, and Baton's key for a proxy is its target. */
    @Test
    void starterProvidesTheSpringBindingAndUnwrapsTransactionAwareProxies() throws SQLException {
        run(ctx -> assertThat(ctx.getBean(TransactionBinding.class)).isInstanceOf(SpringTransactionBinding.class));
        assertThat(SpringTransactionBinding.key(new TransactionAwareDataSourceProxy(pool)))
                .isSameAs(pool);
    }

    private JobInfo awaitState(AssertableApplicationContext ctx, long id, JobState state) {
        Baton baton = ctx.getBean(Baton.class);
        await().atMost(WAIT)
                .pollInterval(Duration.ofMillis(20))
                .until(() -> baton.jobs().get(id).map(JobInfo::state).orElse(null) == state);
        return baton.jobs().get(id).orElseThrow();
    }

    private long succeeded() {
        try {
            return countWhere("job", "state = 'succeeded'");
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    /** {@link #count} from inside a probe, which cannot throw a checked exception. */
    private long uncheckedCount(String table) {
        try {
            return count(table);
        } catch (SQLException e) {
            throw new IllegalStateException(e);
        }
    }

    private long count(String table) throws SQLException {
        return countWhere(table, "true");
    }

    private long countWhere(String table, String where) throws SQLException {
        try (Connection c = pool.getConnection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT count(*) FROM " + schema + "." + table + " WHERE " + where)) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
