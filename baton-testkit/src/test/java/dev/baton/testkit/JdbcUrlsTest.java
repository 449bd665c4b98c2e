package dev.baton.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

class JdbcUrlsTest {

    @Test
    void parsesHostAndPort() {
        assertThat(JdbcUrls.hostPort("jdbc:postgresql://127.0.0.1:6432/test?user=postgres"))
                .isEqualTo(new JdbcUrls.HostPort("127.0.0.1", 6432));
    }

    @Test
    void defaultsLikeTheDriver() {
        assertThat(JdbcUrls.hostPort("jdbc:postgresql://db.example/test"))
                .isEqualTo(new JdbcUrls.HostPort("db.example", 5432));
        assertThat(JdbcUrls.hostPort("jdbc:postgresql:test")).isEqualTo(new JdbcUrls.HostPort("localhost", 5432));
    }

    @Test
    void ipv6LiteralComesWithoutBrackets() {
        assertThat(JdbcUrls.hostPort("jdbc:postgresql://[::1]:5433/x")).isEqualTo(new JdbcUrls.HostPort("::1", 5433));
    }

    @Test
    void multiHostUsesTheFirst() {
        assertThat(JdbcUrls.hostPort("jdbc:postgresql://h1:1111,h2:2222/db"))
                .isEqualTo(new JdbcUrls.HostPort("h1", 1111));
    }

    @Test
    void rejectsNonPostgresUrlNamingItWithoutPassword() {
        assertThatThrownBy(() -> JdbcUrls.hostPort("jdbc:mysql://h/db?password=secret"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("jdbc:mysql://h/db?password=***")
                .hasMessageNotContaining("secret");
    }

    @Test
    void viaKeepsDatabaseAndQueryString() {
        assertThat(JdbcUrls.via(
                        "jdbc:postgresql://127.0.0.1:6432/test?user=postgres&prepareThreshold=0", "127.0.0.1", 40000))
                .isEqualTo("jdbc:postgresql://127.0.0.1:40000/test?user=postgres&prepareThreshold=0");
    }

    @Test
    void viaWorksWithoutQueryStringOrUser() {
        assertThat(JdbcUrls.via("jdbc:postgresql://localhost:5432/postgres", "127.0.0.1", 1))
                .isEqualTo("jdbc:postgresql://127.0.0.1:1/postgres");
        assertThat(JdbcUrls.hasUser("jdbc:postgresql://localhost:5432/postgres"))
                .isFalse();
        assertThat(JdbcUrls.hasUser("jdbc:postgresql://localhost:5432/postgres?user=x"))
                .isTrue();
    }

    @Test
    void viaReplacesAllHostsAndHandlesHostlessUrls() {
        assertThat(JdbcUrls.via("jdbc:postgresql://h1:1,h2:2/db?user=u", "127.0.0.1", 9))
                .isEqualTo("jdbc:postgresql://127.0.0.1:9/db?user=u");
        assertThat(JdbcUrls.via("jdbc:postgresql:db?user=u", "127.0.0.1", 9))
                .isEqualTo("jdbc:postgresql://127.0.0.1:9/db?user=u");
        assertThat(JdbcUrls.via("jdbc:postgresql://h/db", "::1", 9)).isEqualTo("jdbc:postgresql://[::1]:9/db");
    }

    @Test
    void viaRejectsBadPortNamingIt() {
        assertThatThrownBy(() -> JdbcUrls.via("jdbc:postgresql://h/db", "127.0.0.1", 70000))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("70000");
    }
}
