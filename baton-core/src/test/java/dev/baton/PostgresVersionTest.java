package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.internal.db.Db;
import java.sql.Connection;
import java.sql.ResultSet;
import org.junit.jupiter.api.Test;

/**
 * E02: Baton supports PostgreSQL 13 to 18. CI runs the whole suite on the oldest and the newest
 * (embedded 13 with {@code -Dpostgres.version=13.23.0}, embedded 18 by default) and on the machine's 15;
 * this test says which one a run used, and fails on a server outside the range, so that a green run
 * on an untested version cannot be mistaken for support.
 */
class PostgresVersionTest extends DbTest {

    @Test
    void E02_theServerUnderTestIsAVersionBatonSupports() throws Exception {
        int version;
        try (Connection c = pool.getConnection();
                ResultSet rs = c.createStatement().executeQuery("SELECT current_setting('server_version_num')::int")) {
            rs.next();
            version = rs.getInt(1);
        }
        System.out.println("E02: this run's PostgreSQL is " + version / 10000 + " (" + version + ")");
        assertThat(version).isBetween(Db.OLDEST_SUPPORTED_SERVER, Db.NEWEST_TESTED_SERVER + 9999);
        try (Connection c = appPool.getConnection()) {
            assertThat(Db.of(appPool).defaults(c).serverVersion()).isEqualTo(version);
        }
    }
}
