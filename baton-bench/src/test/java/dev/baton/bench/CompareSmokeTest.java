package dev.baton.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/**
 * Keeps the comparison machinery working: every system drains a tiny backlog on real PostgreSQL
 * (embedded, or BATON_JDBC_URL). Asserts only that every job ran and finished, never speed.
 */
class CompareSmokeTest {
    @Test
    void everySystemRunsEveryJobOfABacklog() throws Exception {
        String url = System.getenv("BATON_JDBC_URL");
        // The peers find their tables through a per-connection search_path, which transaction pooling
        // (PgBouncer) does not keep; Baton and the ceiling qualify every table with its schema.
        String systems = "transaction".equals(System.getenv("BATON_POOLED"))
                ? "baton,ceiling"
                : "baton,ceiling,dbs-fetch,dbs-lock,jobrunr,quartz";
        Compare c = Compare.parse(
                new String[] {"--quick", "--phases", "throughput", "--jobs", "300", "--nodes", "2", "--systems", systems
                });
        CompareResults r = new CompareResults();
        r.startedAt = java.time.Instant.now();
        r.mode = "test";
        try (Database db = Database.open(url, null)) {
            c.run(db, r);
        }
        int n = systems.split(",").length;
        assertThat(r.throughput).hasSize(n).allSatisfy(t -> {
            assertThat(t.capped()).as(t.system() + " capped").isFalse();
            assertThat(t.done()).as(t.system() + " jobs started").isEqualTo(300);
            assertThat(t.left()).as(t.system() + " jobs left unfinished").isZero();
        });
        assertThat(CompareReport.markdown(r, c)).contains("| Baton |", "| raw-SQL ceiling |");
    }

    @Test
    void latencyProbesAndLoadRateOverrideTheModeAndRefuseNonPositiveValues() {
        Compare c = Compare.parse(new String[] {"--quick", "--latency-probes", "1000", "--load-rate", "4000"});
        assertThat(c.latencyProbes).isEqualTo(1000);
        assertThat(c.loadRate).isEqualTo(4000);
        assertThat(Compare.parse(new String[] {"--quick"}).latencyProbes).isEqualTo(30);
        assertThatThrownBy(() -> Compare.parse(new String[] {"--load-rate", "0"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--load-rate needs a positive integer, but was '0'");
    }
}
