package dev.baton.spring;

import dev.baton.TransactionBinding;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.datasource.ConnectionHolder;
import org.springframework.jdbc.datasource.DataSourceUtils;
import org.springframework.jdbc.datasource.TransactionAwareDataSourceProxy;
import org.springframework.transaction.UnexpectedRollbackException;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionSynchronizationUtils;

/**
 * Baton's {@link TransactionBinding} for Spring: a Spring-managed transaction on Baton's data source
 * ({@code @Transactional}, {@code TransactionTemplate}, through a {@code DataSourceTransactionManager} or
 * a {@code JpaTransactionManager} exposing its JDBC connection) is the one {@code jobs().enqueue} joins,
 * and the job's completion transaction is the thread's Spring transaction while {@code ctx.transaction}'s
 * work runs.
 *
 * <p>Spring keys a transaction's connection by the data source its transaction manager was given; a
 * {@link TransactionAwareDataSourceProxy} given to Baton is unwrapped to its target, as
 * {@code DataSourceTransactionManager} unwraps it.
 */
public final class SpringTransactionBinding implements TransactionBinding {
    private static final Logger log = LoggerFactory.getLogger(SpringTransactionBinding.class);
    /** What the work registered, from the end of {@link #bind} until {@link #ended} on the same thread. */
    private static final ThreadLocal<List<TransactionSynchronization>> PENDING = new ThreadLocal<>();

    /** The current transaction's name while the completion transaction is bound. */
    static final String COMPLETION_TRANSACTION = "baton job completion";

    /** A binding for Spring's per-thread transactions. */
    public SpringTransactionBinding() {}

    /**
     * The connection of the Spring transaction the calling thread has open on {@code dataSource}: a
     * resource bound for it while an actual transaction is active, whose connection is not in auto-commit
     * mode. A connection that a non-transactional scope ({@code SUPPORTS}) bound is no transaction: empty.
     */
    @Override
    public Optional<Connection> current(DataSource dataSource) {
        DataSource key = key(dataSource);
        if (!TransactionSynchronizationManager.isActualTransactionActive()
                || !(TransactionSynchronizationManager.getResource(key) instanceof ConnectionHolder)) {
            return Optional.empty();
        }
        Connection c = DataSourceUtils.getConnection(key);
        // The transaction holds the connection: this only balances the holder's reference count.
        DataSourceUtils.releaseConnection(c, key);
        try {
            return c.getAutoCommit() ? Optional.empty() : Optional.of(c);
        } catch (SQLException e) {
            throw new IllegalStateException(
                    "cannot read the auto-commit mode of the Spring transaction's connection: " + e.getMessage(), e);
        }
    }

    /**
     * Binds {@code transaction} as the thread's Spring transaction on {@code dataSource} (an active
     * transaction in READ COMMITTED, with synchronization) while {@code work} runs, suspending whatever was
     * bound before and restoring it afterwards. Code that joins it ({@code JdbcTemplate},
     * {@code @Transactional(propagation = REQUIRED)}) uses {@code transaction}; {@code REQUIRES_NEW}
     * suspends it and gets a connection of its own.
     *
     * <p>Synchronizations registered while the work runs get {@code beforeCommit} and {@code beforeCompletion}
     * when it returns (still in the transaction), and {@code afterCommit} / {@code afterCompletion} from
     * {@link #ended} once Baton committed or rolled back.
     *
     * @throws UnexpectedRollbackException if a participant marked the transaction rollback-only
     */
    @Override
    public <T> T bind(DataSource dataSource, Connection transaction, Callable<T> work) throws Exception {
        DataSource key = key(dataSource);
        Suspended suspended = Suspended.suspend(key);
        ConnectionHolder holder = new ConnectionHolder(transaction, true);
        holder.setSynchronizedWithTransaction(true);
        TransactionSynchronizationManager.initSynchronization();
        TransactionSynchronizationManager.setActualTransactionActive(true);
        TransactionSynchronizationManager.setCurrentTransactionName(COMPLETION_TRANSACTION);
        TransactionSynchronizationManager.setCurrentTransactionIsolationLevel(Connection.TRANSACTION_READ_COMMITTED);
        TransactionSynchronizationManager.bindResource(key, holder);
        try {
            T result = work.call();
            if (holder.isRollbackOnly()) {
                throw new UnexpectedRollbackException("the job's completion transaction was marked rollback-only by "
                        + "code that joined it (a @Transactional method it called failed); Baton rolled it back: "
                        + "nothing was written and the attempt failed");
            }
            // Still inside the transaction, as a transaction manager does before its commit (JPA flushes here).
            TransactionSynchronizationUtils.triggerBeforeCommit(false);
            TransactionSynchronizationUtils.triggerBeforeCompletion();
            return result;
        } finally {
            TransactionSynchronizationManager.unbindResourceIfPossible(key);
            // Run after the transaction ends, on this thread: ended(outcome).
            PENDING.set(
                    TransactionSynchronizationManager.isSynchronizationActive()
                            ? TransactionSynchronizationManager.getSynchronizations()
                            : List.of());
            TransactionSynchronizationManager.clear();
            suspended.resume(key);
        }
    }

    /**
     * Registers {@code wake} as a synchronization of the thread's Spring transaction, run from its
     * {@code afterCompletion} unless it rolled back (committed, or unknown); false when the thread has no
     * synchronization active, so the enqueue notifies inside the transaction. Also for a job's transaction that
     * {@link #bind} bound: {@link #ended} runs it.
     */
    @Override
    public boolean afterCommit(Runnable wake) {
        if (!TransactionSynchronizationManager.isSynchronizationActive()) {
            return false;
        }
        TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
            @Override
            public void afterCompletion(int status) {
                if (status != STATUS_ROLLED_BACK) {
                    wake.run();
                }
            }
        });
        return true;
    }

    /**
     * Runs what the work registered for after the transaction: {@code afterCommit} once it committed, then
     * {@code afterCompletion} with its status (committed, rolled back, or unknown when the connection failed
     * during COMMIT). A failing {@code afterCommit} is logged; the job's outcome stands.
     */
    @Override
    public void ended(Outcome outcome) {
        List<TransactionSynchronization> registered = PENDING.get();
        PENDING.remove();
        if (registered == null || registered.isEmpty()) {
            return;
        }
        if (outcome == Outcome.COMMITTED) {
            try {
                TransactionSynchronizationUtils.invokeAfterCommit(registered);
            } catch (RuntimeException e) {
                log.warn("an afterCommit callback of a job's transaction failed after it committed", e);
            }
        }
        TransactionSynchronizationUtils.invokeAfterCompletion(
                registered,
                switch (outcome) {
                    case COMMITTED -> TransactionSynchronization.STATUS_COMMITTED;
                    case ROLLED_BACK -> TransactionSynchronization.STATUS_ROLLED_BACK;
                    case UNKNOWN -> TransactionSynchronization.STATUS_UNKNOWN;
                });
    }

    /** The key Spring binds {@code dataSource}'s transactions under. */
    static DataSource key(DataSource dataSource) {
        DataSource ds = dataSource;
        while (ds instanceof TransactionAwareDataSourceProxy proxy && proxy.getTargetDataSource() != null) {
            ds = proxy.getTargetDataSource();
        }
        return ds;
    }

    /** What was bound on the thread before the completion transaction, restored after it. */
    private record Suspended(
            Object resource,
            List<TransactionSynchronization> synchronizations,
            String name,
            boolean readOnly,
            Integer isolation,
            boolean active) {
        static Suspended suspend(DataSource key) {
            Object resource = TransactionSynchronizationManager.unbindResourceIfPossible(key);
            List<TransactionSynchronization> syncs = null;
            if (TransactionSynchronizationManager.isSynchronizationActive()) {
                syncs = TransactionSynchronizationManager.getSynchronizations();
                syncs.forEach(TransactionSynchronization::suspend);
            }
            Suspended s = new Suspended(
                    resource,
                    syncs,
                    TransactionSynchronizationManager.getCurrentTransactionName(),
                    TransactionSynchronizationManager.isCurrentTransactionReadOnly(),
                    TransactionSynchronizationManager.getCurrentTransactionIsolationLevel(),
                    TransactionSynchronizationManager.isActualTransactionActive());
            TransactionSynchronizationManager.clear();
            return s;
        }

        void resume(DataSource key) {
            if (resource != null) {
                TransactionSynchronizationManager.bindResource(key, resource);
            }
            TransactionSynchronizationManager.setCurrentTransactionName(name);
            TransactionSynchronizationManager.setCurrentTransactionReadOnly(readOnly);
            TransactionSynchronizationManager.setCurrentTransactionIsolationLevel(isolation);
            TransactionSynchronizationManager.setActualTransactionActive(active);
            if (synchronizations != null) {
                TransactionSynchronizationManager.initSynchronization();
                for (TransactionSynchronization s : synchronizations) {
                    s.resume();
                    TransactionSynchronizationManager.registerSynchronization(s);
                }
            }
        }
    }
}
