package dev.baton.test;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.Baton;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import javax.sql.DataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** The extension gives each test class its own migrated schema, through a parameter. */
@BatonTest
class BatonExtensionTest {
    static BatonTestDatabase outer;

    @BeforeAll
    static void remember(BatonTestDatabase db) {
        outer = db;
    }

    @Test
    void theClassSchemaIsMigrated(BatonTestDatabase db) throws SQLException {
        assertThat(db).isSameAs(outer);
        assertThat(tableExists(db.dataSource(), db.schema() + ".job")).isTrue();
        assertThat(tableExists(db.dataSource(), db.schema() + ".schedule")).isTrue();
    }

    @Nested
    class AnotherClass {
        @Test
        void getsADistinctMigratedSchema(BatonTestDatabase db) throws SQLException {
            assertThat(db.schema()).isNotEqualTo(outer.schema());
            assertThat(tableExists(db.dataSource(), db.schema() + ".job")).isTrue();
        }

        @Test
        void aNodeBuiltOnItUsesItsSchema(BatonTestDatabase db) {
            try (Baton baton = db.batonBuilder().build()) {
                assertThat(baton.schema()).isEqualTo(db.schema());
            }
        }
    }

    static boolean tableExists(DataSource ds, String table) throws SQLException {
        try (Connection c = ds.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT to_regclass(?) IS NOT NULL")) {
            ps.setString(1, table);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                boolean exists = rs.getBoolean(1);
                if (!c.getAutoCommit()) {
                    c.rollback();
                }
                return exists;
            }
        }
    }
}
