package dev.baton.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Keeps {@code baton-bench prune} working on real PostgreSQL (embedded, or BATON_JDBC_URL): a small table of
 * finished jobs over ten days, one day pruned in the pruner's batches, and the partitioned alternative. Asserts
 * what was pruned and that every step reported, never speed.
 */
class PruneBenchTest {
    @Test
    void prunesTheOldestDayInBatchesAndDropsThePartitionedTablesOldestDay() {
        List<String> args = new ArrayList<>(List.of("--jobs", "2000", "--runs", "2"));
        String url = System.getenv("BATON_JDBC_URL");
        if (url != null) {
            args.addAll(List.of("--jdbc-url", url));
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        PrintStream was = System.out;
        int rc;
        System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
        try {
            rc = PruneBench.main(args.toArray(new String[0]));
        } finally {
            System.setOut(was);
        }
        String printed = out.toString(StandardCharsets.UTF_8);
        System.out.print(printed);
        assertThat(rc).as("exit code").isZero();
        // 200 jobs a day: each run prunes one day's 200 in one short batch (the pruner's batch is 1,000).
        assertThat(printed)
                .contains("filled 2,000 finished jobs over 10 days")
                .contains("| 1 | 200 | 1 |", "| 2 | 200 | 1 |")
                .contains("the oldest day (200 rows) detached");
    }

    @Test
    void refusesMoreRunsThanDaysToPruneBeforeOpeningADatabase() {
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        PrintStream was = System.err;
        System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
        try {
            assertThat(PruneBench.main(new String[] {"--jobs", "100", "--runs", "10"}))
                    .isEqualTo(2);
        } finally {
            System.setErr(was);
        }
        assertThat(err.toString(StandardCharsets.UTF_8)).contains("--runs must be at most 9, but was 10");
    }
}
