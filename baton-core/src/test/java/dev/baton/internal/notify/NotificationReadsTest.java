package dev.baton.internal.notify;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.DbTest;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;
import org.postgresql.PGNotification;

/**
 * The listener's shortened notification reads (decision 0025) on the pgjdbc this build ships, on a real server:
 * the change applies, is undone on close, and loses no notification of a burst.
 */
class NotificationReadsTest extends DbTest {
    @BeforeEach
    void notThroughAPooler() {
        Assumptions.assumeFalse(PG.pooled(), "LISTEN through a transaction pooler loses notifications");
    }

    /** Fails when a pgjdbc upgrade renames what {@link NotificationReads} changes: the listener would read as before. */
    @Test
    void theShippedPgjdbcIsTightenedAndRestored() throws Exception {
        try (Connection c = pool.getConnection()) {
            assertThat(NotificationReads.supported())
                    .as("pgjdbc's QueryExecutorBase.pgStream and PGStream.nextStreamAvailableCheckTime are there")
                    .isTrue();
            long before = NotificationReads.nextCheck(c);
            try (NotificationReads.Undo reads = NotificationReads.tighten(c)) {
                assertThat(reads.active()).isTrue();
                assertThat(NotificationReads.nextCheck(c)).isEqualTo(Long.MAX_VALUE);
            }
            assertThat(NotificationReads.nextCheck(c)).isEqualTo(before);
        }
    }

    /**
     * Notifications sent in one transaction (they arrive back to back) and one by one all arrive: a read returns
     * once the buffered messages are read, and the next read picks up whatever came later.
     */
    @Test
    void everyNotificationOfABurstArrives() throws Exception {
        String channel = schema + ".burst";
        Set<String> expected = new HashSet<>();
        Set<String> got = new HashSet<>();
        try (Connection listener = PG.connect();
                NotificationReads.Undo reads = NotificationReads.tighten(listener);
                Connection sender = PG.connect()) {
            assertThat(reads.active()).isTrue();
            listener.setAutoCommit(true); // LISTEN takes effect at commit
            try (Statement s = listener.createStatement()) {
                s.execute("LISTEN \"" + channel + "\"");
            }
            try (PreparedStatement ps = sender.prepareStatement("SELECT pg_notify(?, ?)")) {
                sender.setAutoCommit(false);
                for (int i = 0; i < 300; i++) {
                    ps.setString(1, channel);
                    ps.setString(2, "tx-" + i);
                    ps.execute();
                    expected.add("tx-" + i);
                }
                sender.commit();
                sender.setAutoCommit(true);
                for (int i = 0; i < 100; i++) {
                    ps.setString(1, channel);
                    ps.setString(2, "one-" + i);
                    ps.execute();
                    expected.add("one-" + i);
                }
            }
            PGConnection pg = listener.unwrap(PGConnection.class);
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (got.size() < expected.size() && System.nanoTime() - deadline < 0) {
                PGNotification[] batch = pg.getNotifications(100);
                if (batch != null) {
                    for (PGNotification n : batch) {
                        got.add(n.getParameter());
                    }
                }
            }
        }
        assertThat(got).isEqualTo(expected);
    }
}
