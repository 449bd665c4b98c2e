package dev.baton.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.HashSet;
import java.util.Set;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class BatonPostgresTest {

    @RegisterExtension
    static final BatonPostgres PG = new BatonPostgres();

    @Test
    void connectsToAWorkingServer() throws SQLException {
        try (Connection c = PG.connect()) {
            assertThat(queryInt(c, "SELECT 41 + 1")).isEqualTo(42);
        }
        try (Connection c = PG.dataSource().getConnection()) {
            assertThat(c.isValid(5)).isTrue();
        }
    }

    @Test
    void usesTheEnvironmentUrlVerbatimWhenSet() {
        String env = System.getenv(BatonPostgres.JDBC_URL_ENV);
        if (env != null && !env.isBlank()) {
            assertThat(PG.jdbcUrl()).isEqualTo(env.trim());
        } else {
            assertThat(PG.jdbcUrl()).startsWith("jdbc:postgresql://").contains("user=postgres");
        }
    }

    @Test
    void embeddedServerHasTestSettings() throws SQLException {
        Assumptions.assumeTrue(
                System.getenv(BatonPostgres.JDBC_URL_ENV) == null,
                "settings are only ours to choose for the embedded server");
        try (Connection c = PG.connect()) {
            assertThat(queryString(c, "SHOW fsync")).isEqualTo("off");
            assertThat(queryString(c, "SHOW synchronous_commit")).isEqualTo("off");
            assertThat(queryString(c, "SHOW full_page_writes")).isEqualTo("off");
            assertThat(queryInt(c, "SELECT current_setting('max_connections')::int"))
                    .isEqualTo(300);
        }
    }

    @Test
    void poolWorksAndIsBounded() throws SQLException {
        try (HikariDataSource pool = PG.newPool("testkit-pool", 2)) {
            assertThat(pool.getMaximumPoolSize()).isEqualTo(2);
            try (Connection c = pool.getConnection()) {
                assertThat(queryInt(c, "SELECT 1")).isEqualTo(1);
            }
        }
    }

    @Test
    void poolRejectsBadSizeNamingIt() {
        assertThatThrownBy(() -> PG.newPool("p", 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("0");
    }

    @Test
    void freshSchemaNamesAreUniqueValidAndUsable() throws SQLException {
        Set<String> names = new HashSet<>();
        for (int i = 0; i < 1000; i++) {
            String name = PG.freshSchemaName();
            assertThat(name).matches("[a-z_][a-z0-9_]{0,62}");
            names.add(name);
        }
        assertThat(names).hasSize(1000);

        String schema = PG.freshSchemaName();
        try (Connection c = PG.connect();
                Statement s = c.createStatement()) {
            s.execute("CREATE SCHEMA " + schema);
            s.execute("CREATE TABLE " + schema + ".t (x int)");
            PG.dropSchema(schema);
            assertThat(queryInt(c, "SELECT count(*)::int FROM pg_namespace WHERE nspname = '" + schema + "'"))
                    .isZero();
        }
        PG.dropSchema(schema); // dropping again is fine
    }

    @Test
    void dropSchemaRejectsNonIdentifiersNamingThem() {
        assertThatThrownBy(() -> PG.dropSchema("x; DROP TABLE y"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'x; DROP TABLE y'");
        assertThatThrownBy(() -> PG.dropSchema("Upper"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'Upper'");
    }

    @Test
    void hostAndPortDescribeTheServer() throws SQLException {
        String url = PG.jdbcUrlVia(PG.host(), PG.port());
        try (Connection c = DriverManager.getConnection(url)) {
            assertThat(queryInt(c, "SELECT 1")).isEqualTo(1);
        }
        assertThat(PG.jdbcUrlVia("127.0.0.1", 1)).contains("//127.0.0.1:1/");
    }

    @Test
    void pooledFollowsTheEnvironment() {
        assertThat(PG.pooled())
                .isEqualTo("transaction"
                        .equalsIgnoreCase(String.valueOf(System.getenv(BatonPostgres.POOLED_ENV))
                                .trim()));
    }

    static int queryInt(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getInt(1);
        }
    }

    static String queryString(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getString(1);
        }
    }
}
