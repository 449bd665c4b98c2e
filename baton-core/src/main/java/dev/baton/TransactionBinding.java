package dev.baton;

import java.sql.Connection;
import java.util.Optional;
import java.util.concurrent.Callable;
import javax.sql.DataSource;

/**
 * How Baton meets the transactions a framework keeps per thread (Spring's {@code @Transactional}, for
 * one), without depending on that framework. Set on {@link Baton.Builder#transactionBinding}; the
 * Spring Boot starter sets one for Spring. With {@link #NONE} (the default) Baton sees no such
 * transaction: {@link Jobs#enqueue(JobRequest)} commits on its own connection, and
 * {@link JobContext#transaction} hands its connection to the work and nothing else.
 *
 * <p>Two uses:
 * <ul>
 *   <li>{@link Jobs#enqueue(JobRequest)} and {@link Jobs#enqueueAll(java.util.List)} ask {@link #current} for the
 *       transaction the calling thread has open on Baton's data source and, if there is one, enqueue on its
 *       connection: the job exists only if that transaction commits. Baton then neither commits, rolls back
 *       nor closes that connection.</li>
 *   <li>{@link JobContext#transaction} runs the handler's work through {@link #bind}, so that code the
 *       handler calls (a {@code JdbcTemplate}, a {@code @Transactional} method) joins the job's
 *       completion transaction: that code's writes and the job's completion commit together, or not at
 *       all.</li>
 * </ul>
 * Implementations must be thread-safe: they are called from application and handler threads at once.
 */
public interface TransactionBinding {
    /** Sees no transaction and binds nothing: Baton's behaviour without a framework. */
    TransactionBinding NONE = new TransactionBinding() {
        @Override
        public Optional<Connection> current(DataSource dataSource) {
            return Optional.empty();
        }

        @Override
        public <T> T bind(DataSource dataSource, Connection transaction, Callable<T> work) throws Exception {
            return work.call();
        }

        @Override
        public String toString() {
            return "TransactionBinding.NONE";
        }
    };

    /**
     * The connection of a transaction that the calling thread has open on {@code dataSource}, or empty if
     * it has none (or only a connection in auto-commit mode, which is no transaction). Baton runs its
     * statements on the connection returned and never commits, rolls back or closes it.
     *
     * @param dataSource Baton's data source (the one given to {@link Baton#builder})
     * @return the open transaction's connection, or empty
     */
    Optional<Connection> current(DataSource dataSource);

    /**
     * Runs {@code work} with {@code transaction} bound as the calling thread's current transaction on
     * {@code dataSource}, so that code {@code work} calls joins it; restores what was bound before when
     * it returns, whatever happens. The caller owns the transaction: it commits or rolls back after this
     * returns, and the implementation must not.
     *
     * <p>If code that joined the transaction marked it rollback-only (a participating method failed), this
     * throws after {@code work} returns, saying so: the caller then rolls back instead of committing.
     *
     * @param dataSource  Baton's data source
     * @param transaction a connection in an open transaction on {@code dataSource}
     * @param work        what to run with the transaction bound
     * @param <T>         what {@code work} returns
     * @return what {@code work} returned
     * @throws Exception what {@code work} threw, or an exception saying the transaction was marked
     *                   rollback-only
     */
    <T> T bind(DataSource dataSource, Connection transaction, Callable<T> work) throws Exception;

    /**
     * Registers {@code wake} to run once the transaction that {@link #current} returned on this thread has ended,
     * unless it rolled back: after its commit, or after a commit whose outcome is unknown (it may have committed).
     * Baton wakes the workers of jobs enqueued in that transaction this way, once it has committed and together
     * with other enqueues, instead of by a notification inside it: PostgreSQL commits transactions that notified
     * one at a time across the whole server (decision 0039). {@code wake} only marks queues; it does not block and
     * does not throw. Returns false if this binding cannot (the default): the enqueue then notifies inside the
     * transaction.
     *
     * @param wake what to run after the transaction ended, on the thread that ended it
     * @return true if {@code wake} will run after the transaction (unless it rolls back)
     */
    default boolean afterCommit(Runnable wake) {
        return false;
    }

    /** How a transaction that {@link #bind} bound has ended. */
    enum Outcome {
        /** It committed. */
        COMMITTED,
        /** It rolled back (the work or the completion failed, or the attempt was no longer current). */
        ROLLED_BACK,
        /** The connection failed during COMMIT: it may or may not have committed. */
        UNKNOWN
    }

    /**
     * Called on the thread that called {@link #bind}, once the transaction it bound has ended (after the
     * commit or the rollback, outside the transaction): the place for callbacks that code in the work
     * registered to run after it (Spring's {@code afterCommit} and {@code afterCompletion}). Called whenever
     * a {@link JobContext#transaction} began, also when it ended before {@link #bind} (the attempt was no
     * longer current); an exception it throws
     * is logged, never changes the job's outcome. Does nothing by default.
     *
     * @param outcome how the transaction ended
     */
    default void ended(Outcome outcome) {}
}
