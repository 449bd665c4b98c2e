package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.baton.internal.db.Identifiers;
import dev.baton.internal.db.Jdbc;
import dev.baton.internal.db.Sql;
import dev.baton.internal.job.JobStore;
import dev.baton.internal.job.JobStore.UnhandledKind;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The unhandled-kind check (statements unhandled_kinds and fail_unhandled) finds the kinds of available jobs by
 * walking job_available_kind only in the gaps between the calling node's own kinds (decision 0041): every other
 * kind is found wherever it sorts, and the entries of the node's own kinds, which its claims leave dead in that
 * index until a vacuum, are never stepped over; nor is the job table scanned to find or fail the jobs of a kind.
 *
 * <p>Protections removed to see it fail: the walk replaced by the loose index scan over every kind that it
 * replaced (one probe per distinct kind, own kinds filtered afterwards): the first test still passed (the same
 * kinds), the second read 907 buffers in unhandled_kinds against a bound of 100 (the walk: 16; fail_unhandled,
 * which also fails the two jobs, 37-40), on embedded PostgreSQL 18 and on 15. The first gap (the one after '')
 * left out: "A" and "a" were not found. The report's per-(kind, queue) probe written as a plain EXISTS: planned as
 * a scan of the job table (the statistics were taken while all 50,000 jobs were available), 867 buffers; and
 * fail_unhandled's pick written as a join of the job table with the unhandled kinds: on PostgreSQL 15 a scan of the
 * table, 1,708 buffers (PostgreSQL 18 kept to the index here; on other statistics it scanned too: RetentionTest
 * E06).
 */
class JobUnhandledKindWalkTest extends DbTest {

    private String table() {
        return Identifiers.schema(schema) + ".job";
    }

    private void insert(Connection c, String queue, String kind, int n) throws Exception {
        Jdbc.execute(
                c,
                "INSERT INTO " + table() + " (queue, kind, payload, priority, state, run_at, max_attempts) "
                        + "SELECT '" + queue + "', '" + kind + "', to_jsonb(g), 50, 'available', "
                        + "now() - interval '1 hour', 25 FROM generate_series(1, " + n + ") g");
    }

    @Test
    void everyKindOutsideTheNodesOwnIsFoundWhereverItSorts() throws Exception {
        // Kinds before, between and after the own kinds, prefixes of them and kinds they are prefixes of; an own
        // kind without jobs ("m"); the own kinds given unsorted and twice.
        List<String> own = List.of("m", "k", "k", "x.y");
        try (Connection c = pool.getConnection()) {
            c.setAutoCommit(true);
            for (String kind : List.of("A", "a", "k", "k.v2", "ka", "l", "x", "x.y", "x.y.z", "zz")) {
                insert(c, "default", kind, 2);
            }
            insert(c, "other", "l", 1);
            insert(c, "other", "k", 1);
        }
        JobStore store = new JobStore(schema);
        try (Connection c = pool.getConnection()) {
            c.setAutoCommit(true);
            assertThat(store.unhandledKinds(c, List.of("default", "other"), own))
                    .containsExactlyInAnyOrder(
                            new UnhandledKind("default", "A"),
                            new UnhandledKind("default", "a"),
                            new UnhandledKind("default", "k.v2"),
                            new UnhandledKind("default", "ka"),
                            new UnhandledKind("default", "l"),
                            new UnhandledKind("other", "l"),
                            new UnhandledKind("default", "x"),
                            new UnhandledKind("default", "x.y.z"),
                            new UnhandledKind("default", "zz"));
            assertThat(store.unhandledKinds(c, List.of("default"), List.of())).hasSize(10);
            assertThat(store.failUnhandled(c, own, 1_000, 100)).isEqualTo(17);
            try (PreparedStatement ps = c.prepareStatement(
                    "SELECT kind, count(*) FILTER (WHERE state = 'available') FROM " + table() + " GROUP BY kind")) {
                List<String> left = new ArrayList<>();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        left.add(rs.getString(1) + "=" + rs.getLong(2));
                    }
                }
                assertThat(left)
                        .containsExactlyInAnyOrder(
                                "A=0", "a=0", "k=3", "k.v2=0", "ka=0", "l=0", "x=0", "x.y=2", "x.y.z=0", "zz=0");
            }
        }
    }

    @Test
    void theDeadEntriesOfTheNodesOwnKindAreNotSteppedOver() throws Exception {
        try (Connection c = pool.getConnection()) {
            c.setAutoCommit(true);
            // No vacuum may remove the dead entries while the test looks.
            Jdbc.execute(c, "ALTER TABLE " + table() + " SET (autovacuum_enabled = false)");
            insert(c, "default", "a", 1);
            insert(c, "default", "k", 50_000);
            insert(c, "default", "z", 1);
            Jdbc.execute(c, "ANALYZE " + table());
            // As claims do: the own kind's jobs leave the available state, their entries stay in the index.
            Jdbc.execute(c, "UPDATE " + table() + " SET state = 'running', attempt = 1 WHERE kind = 'k'");
        }
        Sql job = Sql.load("job.sql", Identifiers.schema(schema));
        String[] own = {"k"};
        for (String mode : List.of("force_custom_plan", "force_generic_plan")) {
            try (Connection c = pool.getConnection()) {
                c.setAutoCommit(false);
                Jdbc.execute(c, "SET LOCAL plan_cache_mode = " + mode);
                PreparedStatement report =
                        c.prepareStatement("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + job.get("unhandled_kinds"));
                report.setArray(1, c.createArrayOf("text", own));
                report.setArray(2, c.createArrayOf("text", new String[] {"default"}));
                PreparedStatement fail =
                        c.prepareStatement("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + job.get("fail_unhandled"));
                fail.setArray(1, c.createArrayOf("text", own));
                fail.setLong(2, 1_000);
                fail.setInt(3, 100);
                fail.setInt(4, 100);
                fail.setLong(5, 1_000);
                for (PreparedStatement ps : List.of(report, fail)) {
                    String statement = ps == report ? "unhandled_kinds" : "fail_unhandled";
                    try (ps;
                            ResultSet rs = ps.executeQuery()) {
                        rs.next();
                        JsonNode top =
                                new ObjectMapper().readTree(rs.getString(1)).get(0);
                        JsonNode plan = top.get("Plan");
                        assertThat(plan.get("Actual Rows").asLong())
                                .as("rows (%s, %s)", statement, mode)
                                .isEqualTo(2);
                        assertThat(plan.get("Shared Hit Blocks").asLong()
                                        + plan.get("Shared Read Blocks").asLong())
                                .as("buffers read by %s (%s): %s", statement, mode, top)
                                .isLessThan(100);
                    }
                }
                c.rollback();
            }
        }
        try (Connection c = pool.getConnection()) {
            c.setAutoCommit(true);
            assertThat(new JobStore(schema).unhandledKinds(c, Set.of("default"), Set.of("k")))
                    .containsExactly(new UnhandledKind("default", "a"), new UnhandledKind("default", "z"));
        }
    }
}
