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

    /**
     * A fragment is written once and put word for word into the statements that include it; it is not a statement
     * itself, and a statement may include only a fragment defined above it (job.sql's fail_unhandled and
     * unhandled_kinds share one this way).
     */
    @Test
    void aFragmentIsIncludedWhereAStatementNamesIt() throws Exception {
        Sql sql = Sql.load("test/fragments.sql", "ignored");
        assertThat(sql.names()).containsExactlyInAnyOrder("count_evens", "sum_evens_above");
        assertThat(sql.get("sum_evens_above"))
                .isEqualTo("WITH evens AS (\n    SELECT g FROM generate_series(1, ?) g WHERE g % 2 = 0\n)\n"
                        + "SELECT sum(g) FROM evens WHERE g > ?");
        try (Connection c = appPool.getConnection()) {
            try (SqlCall q = sql.prepare(c, "count_evens").setInt("n", 10)) {
                ResultSet rs = q.query();
                assertThat(rs.next()).isTrue();
                assertThat(rs.getLong(1)).isEqualTo(5);
            }
            try (SqlCall q = sql.prepare(c, "sum_evens_above").setInt("n", 10).setInt("above", 4)) {
                ResultSet rs = q.query();
                assertThat(rs.next()).isTrue();
                assertThat(rs.getLong(1)).isEqualTo(6 + 8 + 10);
            }
        }
        assertThatThrownBy(() -> Sql.load("test/unknown-fragment.sql", "ignored"))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("sql/test/unknown-fragment.sql#early includes 'late', which no fragment above it defines");
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
