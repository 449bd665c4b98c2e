package dev.baton.internal.notify;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import com.zaxxer.hikari.HikariDataSource;
import dev.baton.DbTest;
import dev.baton.NotificationMode;
import dev.baton.internal.db.Identifiers;
import dev.baton.testkit.Lending;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import javax.sql.DataSource;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The notifier as a service, on a real database: a started one delivers notifications and gives its
 * connection back when stopped, POLL never borrows a connection, and one pass called directly ends with
 * the reconnect backoff when its connection is killed (the next session wakes every subscriber).
 */
class NotifierTest extends DbTest {
    private static final String THREAD = "baton-lease-listener";

    @BeforeEach
    void notThroughAPooler() {
        Assumptions.assumeFalse(PG.pooled(), "LISTEN through a transaction pooler loses notifications");
    }

    /** Its own pool of {@code size}: what the notifier borrows is all that is in it. */
    private HikariDataSource listenPool(int size) {
        return closeLater(PG.newPool("notifier-" + schema, size));
    }

    @Test
    void aStartedNotifierDeliversANotificationAndAfterCloseNoThreadOrRegistrationRemains() throws Exception {
        // LISTEN mode sends no probe: one connection is enough, and it is the one checked at the end.
        HikariDataSource listenPool = listenPool(1);
        Notifier notifier = new Notifier(listenPool, schema, NotificationMode.LISTEN, true);
        Set<Thread> before = listenerThreads();
        Thread thread;
        try {
            notifier.listen();
            assertThat(notifier.listening()).isTrue();
            Set<Thread> started = listenerThreads();
            started.removeAll(before);
            assertThat(started).hasSize(1);
            thread = started.iterator().next();

            String channel = Identifiers.channel(schema, "job");
            Notifier.Subscription wake = notifier.subscribe(channel, "default");
            pgNotify(channel, "default");
            // Returns when signalled (await has no other way out but an interrupt, which a timeout here sends).
            assertThat(assertTimeoutPreemptively(WAIT, () -> wake.await(Long.MAX_VALUE)))
                    .isTrue();
        } finally {
            notifier.close();
        }
        assertThat(notifier.listening()).isFalse();
        assertThat(notifier.isRunning()).isFalse();
        assertThat(thread.isAlive()).as("the listener thread ended").isFalse();
        try (Connection c = listenPool.getConnection();
                ResultSet rs = c.createStatement().executeQuery("SELECT count(*) FROM pg_listening_channels()")) {
            rs.next();
            assertThat(rs.getInt(1)).as("registrations left on the connection").isZero();
            assertThat(c.getAutoCommit()).isTrue();
            // Seen failing with NotificationReads' undo left out of the session's end: the pool got the
            // connection back with its reads still shortened.
            assertThat(NotificationReads.nextCheck(c))
                    .as("the listening connection's reads are restored")
                    .isNotEqualTo(Long.MAX_VALUE);
        }
        notifier.listen();
        assertThat(notifier.listening())
                .as("a closed notifier does not listen again")
                .isFalse();
    }

    @Test
    void pollModeNeverBorrowsAConnectionNorStartsAThread() {
        AtomicInteger borrowed = new AtomicInteger();
        DataSource counting = Lending.dataSource(pool, () -> {
            borrowed.incrementAndGet();
            return pool.getConnection();
        });
        Notifier notifier = new Notifier(counting, schema, NotificationMode.POLL, true);
        Set<Thread> before = listenerThreads();
        try {
            notifier.listen();
            assertThat(notifier.listening()).isFalse();
            assertThat(notifier.isRunning()).isFalse();
            Set<Thread> after = listenerThreads();
            after.removeAll(before);
            assertThat(after).isEmpty();
            // Even a pass run by hand: it waits until stopped, without a connection.
            assertThat(notifier.runOnce()).isEqualTo(Notifier.UNTIL_STOPPED);
            assertThat(borrowed).hasValue(0);
        } finally {
            notifier.close();
        }
    }

    @Test
    void aPassWhoseConnectionIsKilledReturnsTheReconnectBackoffAndTheNextSessionWakesEverySubscriber()
            throws Exception {
        Notifier notifier = new Notifier(listenPool(3), schema, NotificationMode.AUTO, true);
        Notifier.Subscription wake = notifier.subscribe(Identifiers.channel(schema, "lease"), "some-lease");
        try {
            CompletableFuture<Integer> killed = CompletableFuture.supplyAsync(() -> killOnceListening(notifier));
            assertThat(notifier.runOnce()).isEqualTo(Notifier.RECONNECT_BACKOFF.toNanos());
            assertThat(killed.get()).as("backends terminated").isEqualTo(1);
            assertThat(notifier.listening()).isFalse();

            // The second session listens again and, having listened before, wakes every subscriber: a
            // release may have been missed in between.
            killed = CompletableFuture.supplyAsync(() -> killOnceListening(notifier));
            assertThat(notifier.runOnce()).isEqualTo(Notifier.RECONNECT_BACKOFF.toNanos());
            assertThat(killed.get()).isEqualTo(1);
            assertThat(assertTimeoutPreemptively(WAIT, () -> wake.await(Long.MAX_VALUE)))
                    .isTrue();
        } finally {
            wake.close();
            notifier.close();
        }
    }

    /**
     * A pool that shuts down while the notifier listens (as at the end of a benchmark, or in a JVM shutdown
     * hook) closes the listening connection under it: the session ends without sending UNLISTEN on it,
     * which would only fail and have HikariCP log the connection as broken with a stack trace.
     *
     * <p>Protection removed to see it fail: the check of the driver's connection in
     * {@code Notifier.unlisten}; the UNLISTEN was then sent on the closed connection (and HikariCP logged
     * "marked as broken because of SQLSTATE(08003)" at WARN, with the stack trace).
     */
    @Test
    void aPoolClosedUnderTheListenerGetsNoUnlistenOnItsClosedConnection() {
        HikariDataSource listenPool = listenPool(1);
        AtomicBoolean poolClosed = new AtomicBoolean();
        AtomicInteger statementsAfter = new AtomicInteger();
        DataSource watched = Lending.dataSource(
                listenPool,
                () -> Lending.intercept(listenPool.getConnection(), (m, args, proceed) -> {
                    if (poolClosed.get() && m.getName().equals("createStatement")) {
                        statementsAfter.incrementAndGet();
                    }
                    return proceed.call();
                }));
        Notifier notifier = new Notifier(watched, schema, NotificationMode.LISTEN, true);
        try {
            notifier.listen();
            assertThat(notifier.listening()).isTrue();
            poolClosed.set(true);
            listenPool.close();
            await().atMost(WAIT).until(() -> !notifier.listening());
        } finally {
            notifier.close(); // waits for the session to end
        }
        assertThat(statementsAfter)
                .as("statements sent on the closed connection")
                .hasValue(0);
    }

    /** Waits until {@code notifier} listens (probed), then terminates the backend of its session. */
    private int killOnceListening(Notifier notifier) {
        await().atMost(WAIT).until(notifier::listening);
        String sql = "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
                + "WHERE pid <> pg_backend_pid() AND query LIKE 'LISTEN%' AND query LIKE ?";
        return await().atMost(WAIT)
                .until(
                        () -> {
                            try (Connection c = pool.getConnection();
                                    PreparedStatement ps = c.prepareStatement(sql)) {
                                ps.setString(1, "%\"" + schema + ".%");
                                try (ResultSet rs = ps.executeQuery()) {
                                    rs.next();
                                    return rs.getInt(1);
                                }
                            }
                        },
                        n -> n > 0);
    }

    private void pgNotify(String channel, String payload) throws SQLException {
        try (Connection c = pool.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT pg_notify(?, ?)")) {
            ps.setString(1, channel);
            ps.setString(2, payload);
            ps.execute();
        }
    }

    private static Set<Thread> listenerThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().equals(THREAD))
                .collect(Collectors.toCollection(HashSet::new));
    }
}
