package dev.baton.internal.db;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.baton.DbTest;
import java.sql.Connection;
import java.sql.ResultSet;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Named parameters: what the parser takes for a parameter, and how a call refuses a wrong binding. */
class SqlTest extends DbTest {
    @Test
    void namesBecomePositionsButCastsQuotesAndCommentsStayAsTheyAre() {
        Sql.Parsed p = Sql.parse(
                "t", "SELECT :a::bigint, ':not' || \":nor\", x::text -- :neither\n FROM t WHERE y = :b AND z = :a");

        assertThat(p.jdbc())
                .isEqualTo("SELECT ?::bigint, ':not' || \":nor\", x::text -- :neither\n FROM t WHERE y = ? AND z = ?");
        assertThat(p.params()).containsExactly("a", "b", "a");
    }

    @Test
    void aStatementMixingPositionalAndNamedParametersIsRefused() {
        assertThatThrownBy(() -> Sql.parse("sql/x.sql#mixed", "SELECT ? WHERE a = :a"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("sql/x.sql#mixed mixes positional ? and named :parameters");
        assertThat(Sql.parse("t", "SELECT ?, ?").params()).isEqualTo(List.of());
    }

    @Test
    void aNameUsedTwiceIsBoundOnceAndAnUnboundOrUnknownNameFailsBeforeTheDatabaseSeesIt() throws Exception {
        Sql.Parsed p = Sql.parse("t", "SELECT :a::bigint + :b::bigint + :a::bigint");
        try (Connection c = appPool.getConnection()) {
            try (SqlCall q = new SqlCall("t", c.prepareStatement(p.jdbc()), p.positions(), 0, 0)) {
                ResultSet rs = q.setLong("a", 1).setLong("b", 10).query();
                assertThat(rs.next()).isTrue();
                assertThat(rs.getLong(1)).isEqualTo(12);
            }
            try (SqlCall q = new SqlCall("t", c.prepareStatement(p.jdbc()), p.positions(), 0, 0)) {
                q.setLong("a", 1);
                assertThatThrownBy(q::query)
                        .isInstanceOf(IllegalStateException.class)
                        .hasMessage("t: parameter :b is not bound");
                assertThatThrownBy(() -> q.setLong("c", 1))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessage("t has no parameter :c (it has [a, b])");
            }
        }
    }

    @Test
    void executeRunsSeveralStatementsInOneRoundTripAndRefusesAnUnboundName() throws Exception {
        Sql.Parsed p = Sql.parse(
                "t", "SELECT set_config('application_name', :a, true);\nSELECT set_config('search_path', :b, true)");
        try (Connection c = appPool.getConnection()) {
            c.setAutoCommit(false);
            try {
                try (SqlCall q = new SqlCall("t", c.prepareStatement(p.jdbc()), p.positions(), 0, 0)) {
                    q.setString("a", "sql-test");
                    assertThatThrownBy(q::execute)
                            .isInstanceOf(IllegalStateException.class)
                            .hasMessage("t: parameter :b is not bound");
                    q.setString("b", "pg_catalog").execute();
                }
                try (ResultSet rs = c.createStatement()
                        .executeQuery("SELECT current_setting('application_name'), current_setting('search_path')")) {
                    assertThat(rs.next()).isTrue();
                    assertThat(rs.getString(1)).isEqualTo("sql-test");
                    assertThat(rs.getString(2)).isEqualTo("pg_catalog");
                }
            } finally {
                c.rollback();
                c.setAutoCommit(true);
            }
        }
    }
}
