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
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
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
            throw new IllegalStateException("the outer transaction fails");
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
        runner().withUserConfiguration(TxConfig.class)
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

    /** A committed {@code @Transactional} method leaves its order and one job, which runs. */
    @Test
    void commitOfTransactionalMethodLeavesOneJobThatRuns() throws SQLException {
        handler = (id, ctx) -> ctx.transaction(
                c -> c.createStatement().executeUpdate("INSERT INTO " + schema + ".shipped VALUES ('" + id + "', 1)"));
        run(ctx -> {
            ctx.getBean(Orders.class).place("o-2", false);
            assertThat(count("orders")).isEqualTo(1);
            assertThat(count("job")).isEqualTo(1);
            await().atMost(WAIT).until(() -> count("shipped") == 1);
        });
    }

    /** Outside a Spring transaction, enqueue commits on its own connection before it returns, as before. */
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

    /** An enqueue in a {@code REQUIRES_NEW} method commits with that method, though the outer rolls back. */
    @Test
    void requiresNewAroundEnqueueCommitsTheJobWhenTheOuterRollsBack() throws SQLException {
        handler = (id, ctx) -> {};
        run(ctx -> {
            assertThatThrownBy(() -> ctx.getBean(Orders.class).placeThroughInner("o-5", true))
                    .hasMessageContaining("outer");
            assertThat(count("orders")).isZero();
            assertThat(count("job")).isEqualTo(1);
        });
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
