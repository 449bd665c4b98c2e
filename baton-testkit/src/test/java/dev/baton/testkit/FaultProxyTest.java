package dev.baton.testkit;

import static dev.baton.testkit.BatonPostgresTest.queryInt;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.Properties;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;

@Timeout(120)
class FaultProxyTest {

    @RegisterExtension
    static final BatonPostgres PG = new BatonPostgres();

    /** Short enough to keep the suite quick; only ever used as "the query must give up". */
    private static final int NETWORK_TIMEOUT_MILLIS = 1_000;

    private static final Duration WAIT = TestTimeouts.scaled(Duration.ofSeconds(20));

    private FaultProxy proxy;

    @BeforeEach
    void startProxy() throws IOException {
        proxy = FaultProxy.start(PG.host(), PG.port());
    }

    @AfterEach
    void stopProxy() {
        proxy.close();
    }

    private Connection connectViaProxy() throws SQLException {
        return DriverManager.getConnection(PG.jdbcUrlVia("127.0.0.1", proxy.port()));
    }

    @Test
    void forwardsQueriesAndCountsConnectionsAndBytes() throws SQLException {
        try (Connection c = connectViaProxy()) {
            assertThat(queryInt(c, "SELECT 6 * 7")).isEqualTo(42);
            assertThat(proxy.openConnections()).isEqualTo(1);
            assertThat(proxy.bytesForwarded()).isPositive();
        }
        // The client's close travels to the server, whose close travels back: then the link is gone.
        await().atMost(WAIT).until(() -> proxy.openConnections() == 0);
    }

    @Test
    void latencyDelaysEachDirection() throws SQLException {
        try (Connection c = connectViaProxy()) {
            queryInt(c, "SELECT 1"); // warm up outside the measurement
            Duration latency = Duration.ofMillis(150);
            proxy.latency(latency);

            long start = System.nanoTime();
            assertThat(queryInt(c, "SELECT 2")).isEqualTo(2);
            Duration took = Duration.ofNanos(System.nanoTime() - start);

            // Request and response are each held at least `latency`; only the lower bound is asserted,
            // an upper bound would be flaky on a loaded machine.
            assertThat(took).isGreaterThanOrEqualTo(latency.multipliedBy(2));

            proxy.latency(Duration.ZERO);
            assertThat(queryInt(c, "SELECT 3")).isEqualTo(3);
        }
    }

    @Test
    void blackHoleTimesOutQueriesAndHealLetsNewConnectionsWork() throws SQLException {
        try (Connection c = connectViaProxy()) {
            assertThat(queryInt(c, "SELECT 1")).isEqualTo(1);
            c.setNetworkTimeout(Runnable::run, NETWORK_TIMEOUT_MILLIS);
            int openBefore = proxy.openConnections();

            proxy.blackHole();
            assertThatThrownBy(() -> queryInt(c, "SELECT 2"))
                    .isInstanceOf(SQLException.class)
                    .satisfies(e -> assertThat(((SQLException) e).getSQLState()).startsWith("08"));
            // A partition sends no FIN or RST: the proxy still holds the connection.
            assertThat(proxy.openConnections()).isEqualTo(openBefore);
        }

        proxy.heal();
        try (Connection fresh = connectViaProxy()) {
            assertThat(queryInt(fresh, "SELECT 3")).isEqualTo(3);
        }
    }

    @Test
    void blackHoleAcceptsNewConnectionsButForwardsNothing() {
        proxy.blackHole();
        long before = proxy.bytesForwarded();
        Properties props = new Properties();
        props.setProperty("socketTimeout", "1");
        props.setProperty("connectTimeout", "1");

        assertThatThrownBy(() -> DriverManager.getConnection(PG.jdbcUrlVia("127.0.0.1", proxy.port()), props)
                        .close())
                .isInstanceOf(SQLException.class);
        assertThat(proxy.bytesForwarded()).isEqualTo(before);
    }

    @Test
    void blackHoleDropsBytesRatherThanDeliveringThemOnHeal() throws SQLException {
        String schema = PG.freshSchemaName();
        try (Connection direct = PG.connect();
                Statement s = direct.createStatement()) {
            s.execute("CREATE SCHEMA " + schema);
            s.execute("CREATE TABLE " + schema + ".marks (id int PRIMARY KEY)");
            try (Connection c = connectViaProxy()) {
                c.setNetworkTimeout(Runnable::run, NETWORK_TIMEOUT_MILLIS);
                proxy.blackHole();
                assertThatThrownBy(
                                () -> c.createStatement().executeUpdate("INSERT INTO " + schema + ".marks VALUES (1)"))
                        .isInstanceOf(SQLException.class);
                proxy.heal();
            }
            // Give any (wrongly) held bytes a chance to arrive: a fresh round trip through the healed
            // proxy happens strictly after heal(), so a buffered INSERT would have been flushed first.
            try (Connection again = connectViaProxy()) {
                queryInt(again, "SELECT 1");
            }
            assertThat(queryInt(direct, "SELECT count(*)::int FROM " + schema + ".marks"))
                    .isZero();
        } finally {
            PG.dropSchema(schema);
        }
    }

    @Test
    void blackHoleServerToClientLosesTheAcknowledgementNotTheCommit() throws SQLException {
        String schema = PG.freshSchemaName();
        try (Connection direct = PG.connect();
                Statement s = direct.createStatement()) {
            s.execute("CREATE SCHEMA " + schema);
            s.execute("CREATE TABLE " + schema + ".marks (id int PRIMARY KEY)");
            try (Connection c = connectViaProxy()) {
                assertThat(queryInt(c, "SELECT 1")).isEqualTo(1);
                c.setNetworkTimeout(Runnable::run, NETWORK_TIMEOUT_MILLIS);

                proxy.blackHoleServerToClient();
                assertThatThrownBy(
                                () -> c.createStatement().executeUpdate("INSERT INTO " + schema + ".marks VALUES (1)"))
                        .isInstanceOf(SQLException.class);
            }
            // The client gave up, yet the server received and committed the autocommit INSERT.
            await().atMost(WAIT).until(() -> queryInt(direct, "SELECT count(*)::int FROM " + schema + ".marks") == 1);
        } finally {
            PG.dropSchema(schema);
        }
    }

    @Test
    void resetAllBreaksExistingConnectionsWithAConnectionError() throws SQLException {
        try (Connection c = connectViaProxy()) {
            assertThat(queryInt(c, "SELECT 1")).isEqualTo(1);

            proxy.resetAll();
            assertThat(proxy.openConnections()).isZero();

            assertThatThrownBy(() -> queryInt(c, "SELECT 2"))
                    .isInstanceOf(SQLException.class)
                    .satisfies(e -> assertThat(((SQLException) e).getSQLState()).startsWith("08"));
        }
        try (Connection fresh = connectViaProxy()) {
            assertThat(queryInt(fresh, "SELECT 3")).isEqualTo(3);
        }
    }

    @Test
    void closeStopsListeningAndClosesConnections() throws SQLException {
        Connection c = connectViaProxy();
        try {
            proxy.close();
            assertThat(proxy.openConnections()).isZero();
            assertThatThrownBy(() -> queryInt(c, "SELECT 1")).isInstanceOf(SQLException.class);
            assertThatThrownBy(this::connectViaProxy).isInstanceOf(SQLException.class);
        } finally {
            c.close();
        }
    }

    @Test
    void passesHalfCloseThroughAndHoldsItDuringABlackHole() throws Exception {
        // A raw echo-until-EOF server shows the byte-level contract without PostgreSQL in the way.
        try (ServerSocket echo = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
                FaultProxy raw = FaultProxy.start("127.0.0.1", echo.getLocalPort())) {
            Thread server = new Thread(
                    () -> {
                        try (Socket s = echo.accept()) {
                            s.getInputStream().transferTo(s.getOutputStream());
                            s.shutdownOutput();
                        } catch (IOException e) {
                            // the test fails on its own assertions
                        }
                    },
                    "echo-server");
            server.setDaemon(true);
            server.start();

            try (Socket client = new Socket(InetAddress.getLoopbackAddress(), raw.port())) {
                client.setSoTimeout((int) WAIT.toMillis());
                OutputStream out = client.getOutputStream();
                InputStream in = client.getInputStream();
                out.write("hello".getBytes(StandardCharsets.US_ASCII));
                out.flush();
                assertThat(new String(in.readNBytes(5), StandardCharsets.US_ASCII))
                        .isEqualTo("hello");

                raw.blackHoleServerToClient();
                client.shutdownOutput(); // FIN flows to the server, which echoes EOF back
                await().atMost(WAIT).until(() -> !server.isAlive());
                // ...but the server's FIN is held while server-to-client is black-holed.
                assertThat(raw.openConnections()).isEqualTo(1);

                raw.heal();
                assertThat(in.read()).isEqualTo(-1);
                await().atMost(WAIT).until(() -> raw.openConnections() == 0);
            }
        }
    }

    @Test
    void rejectsBadTargetNamingIt() {
        assertThatThrownBy(() -> FaultProxy.start("127.0.0.1", 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("was 0");
        assertThatThrownBy(() -> proxy.latency(Duration.ofMillis(-5)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("PT-0.005S");
    }
}
