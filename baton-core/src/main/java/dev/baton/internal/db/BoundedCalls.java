package dev.baton.internal.db;

import dev.baton.BatonException;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.sql.DataSource;

/**
 * Database calls with a hard upper bound on how long the caller waits.
 *
 * <p>JDBC calls can block indefinitely on a black-holed socket, and a query timeout's cancel
 * request travels over a new connection that a partition blocks as well. So each call runs on a
 * helper thread; if it does not answer in time, the connection is aborted (its socket closed) and
 * the helper thread replaced. Each call borrows a connection for its duration only (waiting for the
 * pool counts against the bound), runs through {@link Db} (committed whatever the pool's auto-commit
 * and default isolation) and returns it: Baton holds no pool connection between calls, so a small
 * application pool is not drained by idle leadership candidates or heartbeats. Renewals that must
 * survive an exhausted application pool get a pool of their own ({@code coordinationDataSource}).
 * Used by one thread at a time.
 */
public final class BoundedCalls implements AutoCloseable {
    /** A call on the held connection. */
    public interface SqlCall<T> {
        T call(Connection c) throws SQLException;
    }

    /**
     * The server-side bound for a call the client waits {@code clientNanos} for: half of it. A
     * statement the server lets finish then finishes while the client still waits for the answer
     * (unless delivering the answer takes longer than the other half), and one the client gave up on
     * has already been cancelled by the server: it cannot commit later, when a lock it queued for
     * frees. Answers lost in the network remain possible; same-owner re-grants recover from those.
     */
    public static long serverMillis(long clientNanos) {
        return Math.max(1, clientNanos / 2 / 1_000_000);
    }

    private final Db db;
    private final String threadName;
    private ExecutorService executor;
    /** The connection of the call in flight, if any (aborted when the call is abandoned). */
    private volatile Connection connection;

    public BoundedCalls(DataSource dataSource, String threadName) {
        this.db = Db.of(dataSource);
        this.threadName = threadName;
        this.executor = newExecutor();
    }

    /**
     * Runs {@code call} and waits at most {@code nanos} for it.
     *
     * @throws TimeoutException if it did not answer in time (the connection was aborted), or the
     *                          waiting thread was interrupted (its flag is kept)
     */
    public <T> T call(SqlCall<T> call, long nanos) throws TimeoutException, SQLException {
        Future<T> f = executor.submit((Callable<T>) () -> {
            try (Connection c = db.dataSource().getConnection()) {
                connection = c;
                try {
                    return db.callOn(c, threadName, call::call);
                } finally {
                    connection = null;
                }
            }
        });
        try {
            return f.get(Math.max(nanos, 1), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            abandon(f);
            throw e;
        } catch (InterruptedException e) {
            abandon(f);
            Thread.currentThread().interrupt();
            throw new TimeoutException("interrupted while waiting");
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof SQLException s) {
                throw s;
            }
            if (cause instanceof RuntimeException r) {
                throw r;
            }
            if (cause instanceof Error err) {
                throw err;
            }
            throw new BatonException("bounded database call failed", cause);
        }
    }

    private void abandon(Future<?> f) {
        f.cancel(true);
        abortConnection();
        executor.shutdownNow();
        executor = newExecutor();
    }

    private void abortConnection() {
        Connection c = connection;
        connection = null;
        if (c != null) {
            try {
                c.abort(Runnable::run);
            } catch (SQLException | RuntimeException e) {
                Jdbc.closeQuietly(c);
            }
        }
    }

    private ExecutorService newExecutor() {
        return Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, threadName);
            t.setDaemon(true);
            return t;
        });
    }

    @Override
    public void close() {
        executor.shutdownNow();
    }
}
