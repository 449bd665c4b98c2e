package dev.baton;

import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.baton.testkit.TestTimeouts;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.LongSupplier;
import java.util.stream.Collectors;
import javax.sql.DataSource;

/**
 * Shared helpers of the leadership fault tests (LeadershipFaultTest, ConnectionLossTest, LeaderKillTest,
 * HandoffTest, NodesTest, LeadershipLifecycleTest): nodes with their own pools, a recording listener,
 * a ticker that can be suspended, and small database reads. Everything here only reads or drives the
 * public or package-private API; nothing in src/main is touched.
 */
abstract class LeadershipDbTest extends DbTest {

    /** A Baton builder on this test's schema; POLL when pooled (the LISTEN probe would only cost 2 s). */
    protected Baton.Builder nodeBuilder(String id, DataSource main) {
        return Baton.builder(main)
                .schema(schema)
                .nodeId(id)
                .nodeHeartbeat(Duration.ofMillis(200))
                .testHooks(points::reach)
                .notifications(PG.pooled() ? NotificationMode.POLL : NotificationMode.AUTO);
    }

    /**
     * A pool of the node's own, as each instance of a service has one; configured as applications
     * configure theirs in the CI mode {@code BATON_POOL_PROFILE=user} (FAULTS.md E04). Closed after the test.
     */
    protected HikariDataSource nodePool(String id) {
        return closeLater(PG.newApplicationPool(id + "-" + schema, 6));
    }

    protected Baton nodeWithTicker(Baton.Builder builder, LongSupplier ticker) {
        return closeLater(builder.ticker(ticker).build()).start();
    }

    /** Builds, registers for closing and starts. */
    protected Baton start(Baton.Builder builder) {
        return closeLater(builder.build()).start();
    }

    /** A Hikari pool on {@code url}, closed after the test (after the nodes registered later). */
    protected HikariDataSource pool(String name, String url, int maxSize) {
        return pool(name, url, maxSize, TestTimeouts.scaled(Duration.ofSeconds(5)));
    }

    protected HikariDataSource pool(String name, String url, int maxSize, Duration connectionTimeout) {
        HikariConfig c = new HikariConfig();
        c.setJdbcUrl(url);
        c.setPoolName(name);
        c.setMaximumPoolSize(maxSize);
        c.setMinimumIdle(0);
        c.setConnectionTimeout(connectionTimeout.toMillis());
        if (connectionTimeout.compareTo(Duration.ofSeconds(2)) < 0) {
            // A validation ping swallowed by a black hole would otherwise hold a borrow for 5 s.
            c.setValidationTimeout(250);
        }
        c.setInitializationFailTimeout(
                TestTimeouts.scaled(Duration.ofSeconds(5)).toMillis());
        return closeLater(new HikariDataSource(c));
    }

    /** {@code url} with one more query parameter. */
    protected static String withParam(String url, String keyValue) {
        return url + (url.contains("?") ? "&" : "?") + keyValue;
    }

    protected LeaseInfo lease(String name) {
        return leases.inspect(name).orElseThrow(() -> new AssertionError("lease '" + name + "' does not exist"));
    }

    protected Instant dbNow() throws SQLException {
        try (Connection c = pool.getConnection();
                ResultSet rs = c.createStatement().executeQuery("SELECT clock_timestamp()")) {
            rs.next();
            return rs.getTimestamp(1).toInstant();
        }
    }

    protected LeaseHistoryEntry historyOf(String name, long generation) {
        return leases.history(name, 1000).stream()
                .filter(h -> h.generation() == generation)
                .findFirst()
                .orElseThrow(() -> new AssertionError("no history of '" + name + "' generation " + generation));
    }

    /** Ledger rows as (seq, generation, owner). */
    protected List<Object[]> ledgerRows() throws SQLException {
        List<Object[]> out = new ArrayList<>();
        try (Connection c = pool.getConnection();
                ResultSet rs = c.createStatement()
                        .executeQuery("SELECT seq, lease_name, generation, owner_id FROM " + schema
                                + ".ledger ORDER BY seq")) {
            while (rs.next()) {
                out.add(new Object[] {rs.getLong(1), rs.getString(2), rs.getLong(3), rs.getString(4)});
            }
        }
        return out;
    }

    protected long ledgerCount(long generation) throws SQLException {
        try (Connection c = pool.getConnection();
                PreparedStatement ps =
                        c.prepareStatement("SELECT count(*) FROM " + schema + ".ledger WHERE generation = ?")) {
            ps.setLong(1, generation);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getLong(1);
            }
        }
    }

    /** Live threads whose names start with one of the prefixes. */
    static List<Thread> liveThreads(String... prefixes) {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(Thread::isAlive)
                .filter(t -> {
                    for (String p : prefixes) {
                        if (t.getName().startsWith(p)) {
                            return true;
                        }
                    }
                    return false;
                })
                .collect(Collectors.toList());
    }

    /** The threads a runner for {@code lease} starts: control, term (task) and coordination-call threads. */
    static List<Thread> leadershipThreads(String lease) {
        return liveThreads("baton-leadership-" + lease, "baton-leader-" + lease + "-g", "baton-lease-calls-" + lease);
    }

    static double ms(long nanos) {
        return nanos / 1_000_000.0;
    }

    /** A task that does nothing but wait for the end of its term. */
    static LeaderTask idleTask() {
        return ctx -> {
            while (!ctx.awaitCancellation(Duration.ofSeconds(60))) {
                // keep leading
            }
        };
    }

    /** Records a runner's callbacks with the monotonic time they ran at. */
    static final class Recorder implements LeadershipListener {
        record Event(boolean elected, LeaseGrant grant, RevocationReason reason, long nanos) {}

        private final List<Event> events = new CopyOnWriteArrayList<>();
        private final List<Runnable> onRevoke = new CopyOnWriteArrayList<>();

        @Override
        public void onElected(LeaseGrant grant) {
            events.add(new Event(true, grant, null, System.nanoTime()));
        }

        @Override
        public void onRevoked(LeaseGrant grant, RevocationReason reason) {
            long at = System.nanoTime();
            onRevoke.forEach(Runnable::run);
            events.add(new Event(false, grant, reason, at));
        }

        /** Runs {@code r} on the runner's thread inside each onRevoked, before the event is recorded. */
        void alsoOnRevoke(Runnable r) {
            onRevoke.add(r);
        }

        List<Event> elections() {
            return events.stream().filter(Event::elected).collect(Collectors.toList());
        }

        List<Event> revocations() {
            return events.stream().filter(e -> !e.elected()).collect(Collectors.toList());
        }

        /** The {@code n}-th election (1-based), waiting for it. */
        Event awaitElected(int n) {
            await().atMost(WAIT)
                    .pollInterval(Duration.ofMillis(2))
                    .until(() -> elections().size() >= n);
            return elections().get(n - 1);
        }

        Event awaitElected() {
            return awaitElected(1);
        }

        Event awaitRevoked(int n) {
            await().atMost(WAIT)
                    .pollInterval(Duration.ofMillis(2))
                    .until(() -> revocations().size() >= n);
            return revocations().get(n - 1);
        }

        Event awaitRevoked() {
            return awaitRevoked(1);
        }

        Optional<Event> lastElection() {
            List<Event> e = elections();
            return e.isEmpty() ? Optional.empty() : Optional.of(e.get(e.size() - 1));
        }
    }

    /**
     * A monotonic clock that can be suspended, like CLOCK_MONOTONIC across a suspended VM: while
     * suspended it stands still, and after {@link #resume()} it continues from where it stopped.
     */
    static final class SuspendableTicker implements LongSupplier {
        private long offset;
        private long suspendedAt = -1;

        @Override
        public synchronized long getAsLong() {
            long now = suspendedAt >= 0 ? suspendedAt : System.nanoTime();
            return now - offset;
        }

        synchronized void suspend() {
            if (suspendedAt < 0) {
                suspendedAt = System.nanoTime();
            }
        }

        synchronized void resume() {
            if (suspendedAt >= 0) {
                offset += System.nanoTime() - suspendedAt;
                suspendedAt = -1;
            }
        }
    }
}
