package dev.baton.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;

/**
 * Keeps the comparison machinery working: every system drains a tiny backlog on real PostgreSQL
 * (embedded, or BATON_JDBC_URL). Asserts only that every job ran and finished, never speed.
 */
class CompareSmokeTest {
    @Test
    void everySystemRunsEveryJobOfABacklog() throws Exception {
        // The peers find their tables through a per-connection search_path, which transaction pooling
        // (PgBouncer) does not keep; Baton and the ceiling qualify every table with its schema.
        String systems = "transaction".equals(System.getenv("BATON_POOLED"))
                ? "baton,ceiling"
                : "baton,ceiling,dbs-fetch,dbs-lock,jobrunr,quartz";
        Compare c = Compare.parse(
                new String[] {"--quick", "--phases", "throughput", "--jobs", "300", "--nodes", "2", "--systems", systems
                });
        CompareResults r = run(c);
        int n = systems.split(",").length;
        assertThat(r.throughput).hasSize(n).allSatisfy(t -> {
            assertThat(t.capped()).as(t.system() + " capped").isFalse();
            assertThat(t.done()).as(t.system() + " jobs started").isEqualTo(300);
            assertThat(t.left()).as(t.system() + " jobs left unfinished").isZero();
        });
        assertThat(CompareReport.markdown(r, c)).contains("| Baton |", "| raw-SQL ceiling |");
    }

    @Test
    void eachOfDbSchedulersThreadCountsRunsAsASystemOfItsOwnAndTheTargetUsesTheFastest() throws Exception {
        assertThatThrownBy(() -> Compare.parse(new String[] {"--dbs-threads", "32,0"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--dbs-threads needs a positive integer, but was '0'");
        // db-scheduler finds its table through a per-connection search_path, which PgBouncer does not keep
        org.junit.jupiter.api.Assumptions.assumeFalse("transaction".equals(System.getenv("BATON_POOLED")));
        Compare c = Compare.parse(new String[] {
            "--quick",
            "--phases",
            "throughput",
            "--jobs",
            "300",
            "--nodes",
            "1",
            "--systems",
            "baton,dbs-lock",
            "--threads",
            "8",
            "--dbs-threads",
            "2,4,2"
        });
        CompareResults r = run(c);
        String two = "db-scheduler (lock-and-fetch, 2 threads)";
        String four = "db-scheduler (lock-and-fetch, 4 threads)";
        assertThat(r.throughput).extracting(CompareResults.Throughput::system).containsExactly("Baton", two, four);
        assertThat(r.throughput)
                .allSatisfy(t ->
                        assertThat(t.done()).as(t.system() + " jobs started").isEqualTo(300));
        assertThat(r.systemSettings.get(two)).startsWith("threads 2 per node");
        assertThat(r.systemSettings.get(four)).startsWith("threads 4 per node");
        String fastest = r.bestRate(two) >= r.bestRate(four) ? two : four;
        assertThat(CompareReport.markdown(r, c))
                .contains("8 worker threads per node for every system but db-scheduler, which ran with 2 and 4")
                .contains("vs " + fastest + " best");
    }

    @Test
    void repeatedWindowsAndTheBestBatchCeilingRecordEveryRunAndReportMedianAndRange() throws Exception {
        Compare c = Compare.parse(new String[] {
            "--quick",
            "--phases",
            "throughput",
            "--jobs",
            "300",
            "--nodes",
            "1",
            "--systems",
            "baton,ceiling-best",
            "--repeat",
            "2",
            "--window-seconds",
            "1",
            "--ceiling-batches",
            "10,50"
        });
        c.maxBacklog = 3_000; // a backlog that runs out within the window: the rate counts up to its last start
        CompareResults r = run(c);
        assertThat(r.ceilingSweep).extracting(CompareResults.Sweep::batch).containsExactly(10, 50);
        assertThat(r.throughput).hasSize(4).allSatisfy(t -> {
            assertThat(t.rate()).as(t.system() + " run " + t.rep()).isPositive();
            assertThat(t.done()).as(t.system() + " jobs counted").isPositive().isLessThanOrEqualTo(3_000);
        });
        assertThat(r.throughput).extracting(CompareResults.Throughput::rep).containsExactly(1, 1, 2, 2);
        assertThat(r.repetitions()).isEqualTo(2);
        double[] runs = r.rates("Baton", 1);
        assertThat(r.rate("Baton", 1)).isEqualTo((runs[0] + runs[1]) / 2);
        double[] loads = r.throughput.stream()
                .filter(t -> t.system().equals("Baton"))
                .mapToDouble(CompareResults.Throughput::enqueueRate)
                .sorted()
                .toArray();
        assertThat(CompareReport.markdown(r, c))
                .contains("| raw-SQL ceiling, best batch |", "(median, range of the runs)", "| batch 10 | batch 50 |")
                .as("the enqueue column: the median and range of every backlog load, not the last")
                .contains(String.format(
                        Locale.ROOT, "%,.0f (%,.0f–%,.0f) |%n", (loads[0] + loads[1]) / 2, loads[0], loads[1]));
    }

    @Test
    void growthMeasuresEachLoadedBacklogRepeatedlyAndAgainWithFinishedJobsKept() throws Exception {
        Compare c = Compare.parse(new String[] {
            "--quick",
            "--phases",
            "growth",
            "--systems",
            "baton",
            "--growth-pending",
            "800",
            "--growth-finished",
            "2000",
            "--growth-sample",
            "500",
            "--repeat",
            "2"
        });
        CompareResults r = run(c);
        // Each backlog warmed once, then measured twice, on samples of at most a quarter of it: none runs dry.
        assertThat(r.growth)
                .extracting(CompareResults.Growth::backlog, CompareResults.Growth::sample)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple("800 pending", 200),
                        org.assertj.core.groups.Tuple.tuple("800 pending", 200),
                        org.assertj.core.groups.Tuple.tuple("800 pending + 2,000 finished", 200),
                        org.assertj.core.groups.Tuple.tuple("800 pending + 2,000 finished", 200));
        assertThat(r.growth).allSatisfy(g -> {
            assertThat(g.rate()).as(g.backlog()).isPositive();
            assertThat(g.claimMs()).as(g.backlog()).isPositive();
        });
        assertThat(r.growthPoints())
                .hasSize(2)
                .allSatisfy(p -> assertThat(p.runs()).isEqualTo(2));
        assertThat(CompareReport.markdown(r, c))
                .contains(
                        "| Baton | 800 pending + 2,000 finished | 2 |",
                        "| with 2,000 finished jobs kept: jobs/s and claim latency within 10 % of none kept |");
        assertThatThrownBy(() -> Compare.parse(new String[] {"--growth-pending", "10,-1"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--growth-pending needs a positive integer, but was '-1'");
    }

    @Test
    void growthPairsMeasureTheKeptCaseAlternatingWithTheSameBacklogAlone() throws Exception {
        Compare c = Compare.parse(new String[] {
            "--quick",
            "--phases",
            "growth",
            "--systems",
            "baton",
            "--growth-pending",
            "600",
            "--growth-finished",
            "1000",
            "--growth-sample",
            "100",
            "--growth-pairs",
            "2"
        });
        CompareResults r = run(c);
        // The backlog alone once as before, then two pairs in alternating order: AB, then BA.
        assertThat(r.growth)
                .extracting(CompareResults.Growth::backlog)
                .containsExactly(
                        "600 pending",
                        "600 pending, in pairs",
                        "600 pending + 1,000 finished, in pairs",
                        "600 pending, in pairs",
                        "600 pending + 1,000 finished, in pairs");
        assertThat(r.growthPairs).singleElement().satisfies(p -> {
            assertThat(p.rate()).hasSize(2).doesNotContain(0.0, Double.NaN);
            assertThat(p.claim()).hasSize(2).doesNotContain(0.0, Double.NaN);
            assertThat(p.rate()[0]).isPositive();
            assertThat(p.claim()[0]).isPositive();
        });
        assertThat(CompareReport.markdown(r, c))
                .contains(
                        "| with 1,000 finished jobs kept: jobs/s and claim latency within 10 % of none kept | "
                                + "600 pending with 1,000 finished kept ÷ alone, 2 pairs of 100-job samples in alternating order:");
        assertThatThrownBy(() -> Compare.parse(new String[] {"--growth-pairs", "0"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--growth-pairs needs a positive integer, but was '0'");
    }

    @Test
    void newThroughputOptionsRefuseBadValues() {
        assertThatThrownBy(() -> Compare.parse(new String[] {"--cpu-layout", "spread"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--cpu-layout: unknown 'spread' (allowed: shared,split)");
        assertThatThrownBy(() -> Compare.parse(new String[] {"--ceiling-batches", "10,0"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--ceiling-batches needs a positive integer, but was '0'");
        assertThatThrownBy(() -> Compare.parse(new String[] {"--repeat", "x"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--repeat needs a positive integer, but was 'x'");
    }

    /** The machine's CPU while a latency run's probes were sent, as {@code Machine.Cpu#since} words it. */
    private static final String CPU = "1.35 of 2 cores busy: this JVM 0.33, PostgreSQL 0.94, other processes 0.08";

    @Test
    void latencyTargetsAreJudgedInTheTargetTable() {
        Compare c = Compare.parse(new String[] {"--quick", "--phases", "latency"});
        CompareResults r = new CompareResults();
        r.startedAt = java.time.Instant.now();
        r.mode = "test";
        r.machine = java.util.Map.of();
        r.settings = java.util.Map.of();
        r.latency.add(new CompareResults.Latency("Baton", "idle", 1000, 1000, 1.9, 6.4, 12.0, 0.6, 1.1, 0, CPU));
        r.latency.add(new CompareResults.Latency(
                "Baton", "under load (8000 jobs/s)", 1000, 1000, 2.6, 31.5, 80.0, 0.7, 24.0, 7990, CPU));
        assertThat(CompareReport.markdown(r, c))
                .contains(
                        "| idle enqueue → start p50 ≤ 2 ms and p99 ≤ 10 ms | p50 1.9 ms, p99 6.4 ms (1000/1000 probes"
                                + " started) | yes |",
                        "| enqueue → start p99 ≤ 25 ms under load (8000 jobs/s) | p50 2.6 ms, p99 31.5 ms (1000/1000"
                                + " probes started) | **no** |",
                        "| Baton | idle | 1.9 | 6.4 | 12.0 | 1000/1000 | – | 0.6 / 1.1 | – | " + CPU + " |",
                        "| Baton | under load (8000 jobs/s) | 2.6 | 31.5 | 80.0 | 1000/1000 | – | 0.7 / 24.0 | 7,990 jobs/s | "
                                + CPU
                                + " |");
        r.latency.set(0, new CompareResults.Latency("Baton", "idle", 1000, 999, 1.9, 6.4, 12.0, 0.6, 1.1, 0, CPU));
        assertThat(CompareReport.markdown(r, c))
                .as("a probe that never started misses the target")
                .contains("(999/1000 probes started) | **no** |");
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
        assertThatThrownBy(() -> Compare.parse(new String[] {"--load-rate", "most"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("--load-rate needs a positive integer, 'half' or 'half-stream', but was 'most'");
        Compare half = Compare.parse(new String[] {"--quick", "--load-rate", "half"});
        assertThat(half.loadHalf).isTrue();
        assertThat(half.loadHalfOfStream).isFalse();
        assertThat(half.loadRateOption).isNull();
        Compare stream = Compare.parse(new String[] {"--quick", "--load-rate", "half-stream"});
        assertThat(stream.loadHalf).isTrue();
        assertThat(stream.loadHalfOfStream).isTrue();
    }

    // Mutation: ServerStatements.install with autocommit on -> the extension stayed behind and this test failed.
    @Test
    void serverStatementsWithoutTheModuleLoadedFailClearlyAndLeaveNoExtension() throws Exception {
        try (Database db = Database.open(System.getenv("BATON_JDBC_URL"), null);
                java.sql.Connection c = db.connect();
                java.sql.Statement st = c.createStatement()) {
            org.junit.jupiter.api.Assumptions.assumeFalse(
                    preloaded(st), "this server preloads pg_stat_statements: nothing to refuse");
            boolean before = extensionExists(st);
            assertThatThrownBy(() -> ServerStatements.install(db))
                    .isInstanceOf(java.sql.SQLException.class)
                    .hasMessageStartingWith("--server-statements needs pg_stat_statements loaded by the server");
            assertThat(extensionExists(st)).isEqualTo(before);
        }
    }

    @Test
    void anEmbeddedServerPreloadsTheModuleAndTheCostliestStatementsAreCounted() throws Exception {
        org.junit.jupiter.api.Assumptions.assumeTrue(
                System.getenv("BATON_JDBC_URL") == null, "the module is preloaded only in an embedded server");
        try (Database db = Database.open(null, null, true)) {
            ServerStatements.install(db);
            var before = ServerStatements.snapshot(db);
            db.execute("CREATE TABLE counted AS SELECT g FROM generate_series(1, 1000) g");
            db.execute("UPDATE counted SET g = g + 1");
            List<String> top = ServerStatements.costliest(before, ServerStatements.snapshot(db), 1.0, 5);
            assertThat(top).anySatisfy(l -> assertThat(l).contains("× 1000.0 rows", "UPDATE counted SET g = g + $1"));
            assertThat(top).noneSatisfy(l -> assertThat(l).contains("pg_stat_statements"));
        }
    }

    private static boolean preloaded(java.sql.Statement st) throws java.sql.SQLException {
        try (java.sql.ResultSet rs = st.executeQuery("SELECT current_setting('shared_preload_libraries')")) {
            rs.next();
            return rs.getString(1).contains("pg_stat_statements");
        }
    }

    private static boolean extensionExists(java.sql.Statement st) throws java.sql.SQLException {
        try (java.sql.ResultSet rs =
                st.executeQuery("SELECT count(*) FROM pg_extension WHERE extname = 'pg_stat_statements'")) {
            rs.next();
            return rs.getLong(1) > 0;
        }
    }

    /** One compare run of {@code c} on the test database (BATON_JDBC_URL, or embedded). */
    private static CompareResults run(Compare c) throws Exception {
        CompareResults r = new CompareResults();
        r.startedAt = java.time.Instant.now();
        r.mode = "test";
        try (Database db = Database.open(System.getenv("BATON_JDBC_URL"), null)) {
            c.run(db, r);
        }
        return r;
    }
}
