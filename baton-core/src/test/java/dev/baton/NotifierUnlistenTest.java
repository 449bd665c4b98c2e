package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import java.io.PrintWriter;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.logging.Logger;
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
        DataSource ds = new DataSource() {
            @Override
            public Connection getConnection() throws SQLException {
                if (borrowed.getAndIncrement() == 0) {
                    return listenerPool.getConnection();
                }
                Connection c = senderPool.getConnection();
                c.setAutoCommit(false);
                return (Connection) Proxy.newProxyInstance(Connection.class.getClassLoader(),
                        new Class<?>[] {Connection.class}, (proxy, m, args) -> switch (m.getName()) {
                            case "commit" -> null; // dropped: the notification is rolled back on close
                            default -> {
                                try {
                                    yield m.invoke(c, args);
                                } catch (InvocationTargetException e) {
                                    throw e.getCause();
                                }
                            }
                        });
            }

            @Override
            public Connection getConnection(String u, String p) throws SQLException {
                throw new SQLFeatureNotSupportedException();
            }

            @Override
            public PrintWriter getLogWriter() {
                return null;
            }

            @Override
            public void setLogWriter(PrintWriter out) {}

            @Override
            public void setLoginTimeout(int seconds) {}

            @Override
            public int getLoginTimeout() {
                return 0;
            }

            @Override
            public Logger getParentLogger() {
                return Logger.getLogger("unlisten");
            }

            @Override
            public <T> T unwrap(Class<T> iface) throws SQLException {
                throw new SQLException("not a wrapper");
            }

            @Override
            public boolean isWrapperFor(Class<?> iface) {
                return false;
            }
        };
        Notifier notifier = new Notifier(ds, schema, NotificationMode.AUTO, true);
        try {
            notifier.start();
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
