package dev.baton;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorCompletionService;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.awaitility.Awaitility;

/**
 * Shared plumbing of the coordination-primitive fault tests (FAULTS.md, section P): several Baton
 * nodes on the test's schema, each with a pool of its own, and waits on the database clock.
 */
abstract class CoordinationFaultSupport extends DbTest {

    /**
     * {@code n} started Baton nodes on this test's schema, {@code <prefix>-0 … <prefix>-(n-1)}, each
     * with its own pool of {@code poolSize} connections (closed after the test, node before pool).
     * Polling notifications: the primitives need none, and the LISTEN probe would only slow start-up
     * through PgBouncer. The node heartbeat keeps a connection of its own checked out, so it gets a
     * separate one-connection coordination pool: {@code poolSize} is all the primitives' own.
     */
    protected List<Baton> nodes(String prefix, int n, int poolSize) {
        List<Baton> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            HikariDataSource p = closeLater(PG.newPool(prefix + "-" + i, poolSize));
            HikariDataSource heartbeat = closeLater(PG.newPool(prefix + "-" + i + "-hb", 1));
            out.add(closeLater(Baton.builder(p)
                            .coordinationDataSource(heartbeat)
                            .schema(schema)
                            .nodeId(prefix + "-" + i)
                            .nodeHeartbeat(Duration.ofSeconds(1))
                            .notifications(NotificationMode.POLL)
                            .migrateOnStart(false)
                            .build())
                    .start());
        }
        return out;
    }

    /** A fixed thread pool shut down (interrupting its threads) after the test. */
    protected ExecutorService threads(int n) {
        ExecutorService exec = Executors.newFixedThreadPool(n);
        closeLater(() -> {
            exec.shutdownNow();
            exec.awaitTermination(WAIT.toMillis(), TimeUnit.MILLISECONDS);
        });
        return exec;
    }

    /**
     * Runs every task on its own thread and returns their results in order. The first task to fail
     * fails the call at once (the others are interrupted, so none is left waiting at a barrier).
     */
    protected <T> List<T> runAll(List<Callable<T>> tasks) throws Exception {
        ExecutorService exec = threads(tasks.size());
        ExecutorCompletionService<T> done = new ExecutorCompletionService<>(exec);
        List<Future<T>> futures = new ArrayList<>();
        for (Callable<T> t : tasks) {
            futures.add(done.submit(t));
        }
        long deadline = System.nanoTime() + WAIT.toNanos();
        try {
            for (int i = 0; i < tasks.size(); i++) {
                Future<T> f = done.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                if (f == null) {
                    throw new TimeoutException(
                            tasks.size() - i + " of " + tasks.size() + " tasks still running after " + WAIT);
                }
                f.get();
            }
        } finally {
            exec.shutdownNow();
        }
        List<T> out = new ArrayList<>();
        for (Future<T> f : futures) {
            out.add(f.get());
        }
        return out;
    }

    /** Runs {@code task} on another thread, so that a call that never returns fails the test instead of hanging it. */
    protected <T> T call(Callable<T> task) throws Exception {
        return runAll(List.of(task)).get(0);
    }

    /** Waits (polling the database, never sleeping blindly) until {@code booleanSql} answers true. */
    protected void awaitDb(String booleanSql) {
        Awaitility.await().atMost(WAIT).pollInterval(Duration.ofMillis(10)).until(() -> queryBoolean(booleanSql));
    }

    protected boolean queryBoolean(String booleanSql) throws SQLException {
        try (Connection c = pool.getConnection();
                PreparedStatement ps = c.prepareStatement(booleanSql);
                ResultSet rs = ps.executeQuery()) {
            return rs.next() && rs.getBoolean(1);
        }
    }
}
