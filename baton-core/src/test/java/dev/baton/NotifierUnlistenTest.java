package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import dev.baton.internal.notify.Notifier;
import dev.baton.testkit.Lending;
import java.sql.Connection;
import java.sql.ResultSet;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * A failed LISTEN probe (what a transaction-pooling PgBouncer produces) leaves no registrations behind
 * on the connection it gives back: a pooler would keep them on a server session shared with other
 * clients, which would then receive this schema's notifications.
 */
class NotifierUnlistenTest extends DbTest {

    /**
     * Protection removed and seen failing: the {@code UNLISTEN *} before the connection goes back
     * ({@code Notifier.unlisten}): the connection came back still listening on the schema's three channels.
     */
    @Test
    void E01_aFailedProbeGivesItsConnectionBackWithoutRegistrations() throws Exception {
        Assumptions.assumeFalse(PG.pooled(), "the test reads the registrations of one server session");
        HikariDataSource listenerPool = closeLater(PG.newPool("unlisten-" + schema, 1));
        HikariDataSource senderPool = closeLater(PG.newPool("unlisten-sender-" + schema, 2));
        // The first connection listens; the probe's sender never commits, so its notification never arrives.
        AtomicInteger borrowed = new AtomicInteger();
        DataSource ds = Lending.dataSource(senderPool, () -> {
            if (borrowed.getAndIncrement() == 0) {
                return listenerPool.getConnection();
            }
            Connection c = senderPool.getConnection();
            c.setAutoCommit(false);
            // commit dropped: the notification is rolled back on close
            return Lending.intercept(c, (m, args, proceed) -> m.getName().equals("commit") ? null : proceed.call());
        });
        Notifier notifier = new Notifier(ds, schema, NotificationMode.AUTO, true);
        try {
            notifier.listen();
            assertThat(notifier.listening()).as("the probe failed: polling").isFalse();
        } finally {
            notifier.close();
        }
        try (Connection c = listenerPool.getConnection();
                ResultSet rs = c.createStatement().executeQuery("SELECT count(*) FROM pg_listening_channels()")) {
            rs.next();
            assertThat(rs.getInt(1)).as("registrations left on the connection").isZero();
            assertThat(c.getAutoCommit()).isTrue();
        }
    }
}
