package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.internal.db.Identifiers;
import dev.baton.internal.db.Jdbc;
import dev.baton.internal.db.Sql;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Idempotency keys under schema version 14's index: unique on idempotency_key only where a key is set, so that
 * a keyless job (most jobs) adds no index entry (decision 0030), with no unique constraint left beside it. A
 * statement saying {@code ON CONFLICT (idempotency_key)} without that predicate fails under such an index, so
 * the statements name it, and this test runs every enqueue path: each still returns the job already holding a
 * key, and the key lookup still reads the index in the plan the server makes for a prepared statement
 * (generic). Nodes of schema version 13 ran these same statements, which is what V14's readable_by 13 rests on.
 *
 * <p>Protection removed and seen failing: the predicate left out of the ON CONFLICT clauses ("there is no unique
 * or exclusion constraint matching the ON CONFLICT specification"). find_by_keys names the predicate as well;
 * PostgreSQL 15 and 18 infer it from {@code = ANY} alone (with it removed, the generic plan still read the
 * index), so there it only makes the plan independent of that inference.
 */
class JobIdempotencyIndexTest extends DbTest {
    record Item(String name) {}

    @Test
    void J10_everyEnqueuePathFindsTheKeyUnderAUniqueIndexOnTheKeysAlone() throws Exception {
        String table = Identifiers.schema(schema) + ".job";
        assertThat(count("SELECT count(*) FROM pg_constraint WHERE conrelid = '" + table + "'::regclass"
                        + " AND contype = 'u'"))
                .as("no unique constraint on the job table")
                .isZero();
        Jobs jobs =
                Baton.builder(appPool).schema(schema).nodeId("client").build().jobs();

        EnqueueResult first = jobs.enqueue(JobRequest.of("k", new Item("a")).idempotencyKey("key-1"));
        assertThat(first.created()).isTrue();
        EnqueueResult again = jobs.enqueue(JobRequest.of("k", new Item("b")).idempotencyKey("key-1"));
        assertThat(again.created()).isFalse();
        assertThat(again.id()).isEqualTo(first.id());

        List<EnqueueResult> batch = jobs.enqueueAll(List.of(
                JobRequest.of("k", new Item("c")).idempotencyKey("key-2"),
                JobRequest.of("k", new Item("d")).idempotencyKey("key-1"),
                JobRequest.of("k", new Item("e"))));
        assertThat(batch).extracting(EnqueueResult::created).containsExactly(true, false, true);
        assertThat(batch.get(1).id()).isEqualTo(first.id());

        try (Connection tx = appPool.getConnection()) {
            tx.setAutoCommit(false);
            EnqueueResult inTx =
                    jobs.enqueue(tx, JobRequest.of("k", new Item("f")).idempotencyKey("key-2"));
            List<EnqueueResult> allInTx = jobs.enqueueAll(
                    tx, List.of(JobRequest.of("k", new Item("g")).idempotencyKey("key-1")));
            tx.commit();
            assertThat(inTx.created()).isFalse();
            assertThat(inTx.id()).isEqualTo(batch.get(0).id());
            assertThat(allInTx).singleElement().satisfies(r -> {
                assertThat(r.created()).isFalse();
                assertThat(r.id()).isEqualTo(first.id());
            });
        }
        assertThat(count("SELECT count(*) FROM " + table)).isEqualTo(3);

        Sql job = Sql.load("job.sql", Identifiers.schema(schema));
        try (Connection c = pool.getConnection()) {
            c.setAutoCommit(false);
            Jdbc.execute(c, "SET LOCAL plan_cache_mode = force_generic_plan");
            Jdbc.execute(c, "SET LOCAL enable_seqscan = off");
            try (PreparedStatement ps = c.prepareStatement("EXPLAIN " + job.get("find_by_keys"))) {
                ps.setArray(1, c.createArrayOf("text", new String[] {"key-1", "key-2"}));
                StringBuilder plan = new StringBuilder();
                try (ResultSet rs = ps.executeQuery()) {
                    while (rs.next()) {
                        plan.append(rs.getString(1)).append('\n');
                    }
                }
                assertThat(plan.toString()).contains("job_idempotency_key").doesNotContain("Seq Scan");
            }
            c.rollback();
        }
    }
}
