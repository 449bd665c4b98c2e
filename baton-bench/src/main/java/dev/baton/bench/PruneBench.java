package dev.baton.bench;

import dev.baton.Baton;
import dev.baton.internal.maintenance.Maintenance;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * {@code baton-bench prune}: what keeping and pruning finished jobs costs at scale. A job table holds
 * {@code --jobs} finished jobs spread evenly over {@code --days} days; each run prunes the oldest day with
 * Baton's own statement in the pruner's batches ({@value Maintenance#BATCH} rows, each its own transaction),
 * vacuums as autovacuum would, and adds a new day, so the table cycles as it does in production. Reported per
 * run: each batch's time (the only time its row locks are held), dead tuples after the prune, and the table's
 * size before, after pruning, after the vacuum and after the new day. For comparison the same rows go into a
 * table partitioned by day, whose oldest day is detached and dropped.
 */
final class PruneBench {
    static final String USAGE = """
            usage: java -jar baton-bench.jar prune [options]

            Keeps --jobs finished jobs over 10 days; each run prunes the oldest day in the pruner's batches, vacuums
            and adds a new day: batch times, dead tuples, table size. Then the same days in a table partitioned by
            day, whose oldest partition is dropped.
              --jdbc-url URL   an existing database; default: embedded PostgreSQL
              --jobs N         finished jobs kept (default 1000000; the issue's scale is 10000000)
              --runs N         days pruned, one per run (default 3, at most 9)
              --keep           keep the schema afterwards
            """;

    static final int DAYS = 10;

    private PruneBench() {}

    static int main(String[] args) {
        return FilledTableBench.main(
                args, "Baton retention and pruning benchmark", USAGE, 3, DAYS - 1, PruneBench::run);
    }

    private static void run(Database db, FilledTableBench o) throws Exception {
        String schema = "bench_prune_" + Long.toString(System.nanoTime(), 36);
        String job = "\"" + schema + "\".job";
        long perDay = o.jobs() / DAYS;
        try (Connection c = db.connect();
                Statement st = c.createStatement()) {
            try (var pool = db.pool("prune-bench", 1)) {
                Baton.migrate(pool, schema);
            }
            // The filling commits without waiting for its flush; the pruning below commits as the pruner does.
            st.execute("SET synchronous_commit = off");
            long t0 = System.nanoTime();
            // Day d (0 = the oldest) ends DAYS - 1 - d days ago: finished_at spread evenly over each day.
            for (int d = 0; d < DAYS; d++) {
                st.execute(fillDay(job, d * perDay, perDay, DAYS - 1 - d));
            }
            st.execute("VACUUM ANALYZE " + job);
            System.out.printf(
                    Locale.ROOT,
                    "  filled %,d finished jobs over %d days in %.0f s; table %s MB, indexes %s MB%n",
                    perDay * DAYS,
                    DAYS,
                    (System.nanoTime() - t0) / 1e9,
                    mb(size(st, "pg_table_size", job)),
                    mb(size(st, "pg_indexes_size", job)));
            String prune = BatonSql.load("job", schema).get("prune");
            System.out.println("\n| run | pruned | batches | seconds | batch ms p50 / p99 / max | dead tuples after | "
                    + "table + indexes MB: before / pruned / vacuumed (s) / new day added |");
            System.out.println("|---|---:|---:|---:|---|---:|---|");
            for (int run = 1; run <= o.runs(); run++) {
                db.checkpoint();
                long before = size(st, "pg_total_relation_size", job);
                // Keep DAYS - run days: the oldest day left is pruned.
                long retentionMs = (DAYS - run) * 86_400_000L;
                List<Double> batchMs = new ArrayList<>();
                long pruned = 0;
                st.execute("RESET synchronous_commit");
                long p0 = System.nanoTime();
                try (PreparedStatement ps = c.prepareStatement(prune)) {
                    ps.setLong(1, retentionMs);
                    ps.setInt(2, Maintenance.BATCH);
                    int n;
                    do {
                        long b0 = System.nanoTime();
                        n = ps.executeUpdate();
                        batchMs.add((System.nanoTime() - b0) / 1e6);
                        pruned += n;
                    } while (n == Maintenance.BATCH);
                }
                double pruneSecs = (System.nanoTime() - p0) / 1e9;
                long dead = deadTuples(st, schema);
                long afterPrune = size(st, "pg_total_relation_size", job);
                long v0 = System.nanoTime();
                st.execute("VACUUM " + job);
                double vacuumSecs = (System.nanoTime() - v0) / 1e9;
                long afterVacuum = size(st, "pg_total_relation_size", job);
                // A new day, finished now: the space the vacuum freed is used again.
                st.execute("SET synchronous_commit = off");
                st.execute(fillDay(job, (DAYS + run - 1) * perDay, perDay, 0));
                long afterFill = size(st, "pg_total_relation_size", job);
                double[] ms = batchMs.stream()
                        .mapToDouble(Double::doubleValue)
                        .sorted()
                        .toArray();
                System.out.printf(
                        Locale.ROOT,
                        "| %d | %,d | %,d | %.1f | %.1f / %.1f / %.1f | %,d | %s / %s / %s (%.1f s) / %s |%n",
                        run,
                        pruned,
                        ms.length,
                        pruneSecs,
                        ms[ms.length / 2],
                        ms[(int) Math.min(ms.length - 1, Math.ceil(ms.length * 0.99) - 1)],
                        ms[ms.length - 1],
                        dead,
                        mb(before),
                        mb(afterPrune),
                        mb(afterVacuum),
                        vacuumSecs,
                        mb(afterFill));
            }
            partitioned(st, schema, perDay);
        } finally {
            if (!o.keep()) {
                db.dropSchema(schema);
            }
        }
    }

    /**
     * The alternative: the same finished rows in a table partitioned by day of finished_at; the oldest day is
     * detached (concurrently, so writers are not blocked) and dropped.
     */
    private static void partitioned(Statement st, String schema, long perDay) throws SQLException {
        String s = "\"" + schema + "\"";
        st.execute("CREATE TABLE " + s + ".job_by_day (LIKE " + s + ".job INCLUDING DEFAULTS) "
                + "PARTITION BY RANGE (finished_at)");
        st.execute("ALTER TABLE " + s + ".job_by_day ADD PRIMARY KEY (id, finished_at)");
        st.execute("CREATE INDEX ON " + s + ".job_by_day (finished_at)");
        long t0 = System.nanoTime();
        for (int d = 0; d < DAYS; d++) {
            st.execute("CREATE TABLE " + s + ".job_day_" + d + " PARTITION OF " + s + ".job_by_day FOR VALUES FROM "
                    + "(date_trunc('day', now()) - interval '" + (DAYS - d) + " days') TO "
                    + "(date_trunc('day', now()) - interval '" + (DAYS - d - 1) + " days')");
        }
        // Whole days, so each day's rows land in one partition.
        st.execute("INSERT INTO " + s + ".job_by_day (id, queue, kind, payload, priority, state, run_at, "
                + "max_attempts, attempt, created_at, attempted_at, finished_at) "
                + "SELECT g, 'bench', 'bench.noop', to_jsonb(g), 50, 'succeeded', t, 25, 1, t, t, t FROM ("
                + "SELECT g, date_trunc('day', now()) - interval '" + DAYS + " days' + interval '1 day' * "
                + "(g::float8 / " + perDay + ") AS t FROM generate_series(0, " + (perDay * DAYS - 1) + ") g) x");
        st.execute("VACUUM ANALYZE " + s + ".job_by_day");
        double fillSecs = (System.nanoTime() - t0) / 1e9;
        long before = partitionedSize(st, schema);
        long d0 = System.nanoTime();
        String detach = "ALTER TABLE " + s + ".job_by_day DETACH PARTITION " + s + ".job_day_0";
        try {
            st.execute(detach + " CONCURRENTLY");
        } catch (SQLException e) {
            st.execute(detach); // PostgreSQL 13 has no concurrent detach
        }
        double detachSecs = (System.nanoTime() - d0) / 1e9;
        long x0 = System.nanoTime();
        st.execute("DROP TABLE " + s + ".job_day_0");
        double dropSecs = (System.nanoTime() - x0) / 1e9;
        System.out.printf(
                Locale.ROOT,
                "%npartitioned by day (filled in %.0f s): the oldest day (%,d rows) detached concurrently in %.3f s, "
                        + "dropped in %.3f s; table + indexes %s MB before, %s MB after; no dead tuples%n",
                fillSecs,
                perDay,
                detachSecs,
                dropSecs,
                mb(before),
                mb(partitionedSize(st, schema)));
    }

    /** {@code n} finished jobs from id {@code from + 1}, their finish times spread over the day ending {@code daysAgo} days ago. */
    private static String fillDay(String job, long from, long n, int daysAgo) {
        return "INSERT INTO " + job + " (queue, kind, payload, priority, state, run_at, max_attempts, attempt, "
                + "created_at, attempted_at, finished_at) SELECT 'bench', 'bench.noop', to_jsonb(g), 50, 'succeeded', "
                + "t, 25, 1, t, t, t FROM (SELECT g, now() - interval '1 day' * (" + daysAgo + " + 1 - (g - " + from
                + ")::float8 / " + n + ") AS t FROM generate_series(" + (from + 1) + ", " + (from + n) + ") g) x";
    }

    private static long partitionedSize(Statement st, String schema) throws SQLException {
        try (ResultSet rs = st.executeQuery("SELECT coalesce(sum(pg_total_relation_size(inhrelid)), 0) FROM "
                + "pg_inherits WHERE inhparent = '\"" + schema + "\".job_by_day'::regclass")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static long size(Statement st, String function, String table) throws SQLException {
        try (ResultSet rs = st.executeQuery("SELECT " + function + "('" + table + "'::regclass)")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /** The job table's dead tuples as the statistics see them, flushed first where the server can (15+). */
    private static long deadTuples(Statement st, String schema) throws SQLException {
        try {
            st.execute("SELECT pg_stat_force_next_flush()");
        } catch (SQLException e) {
            // before PostgreSQL 15 the statistics arrive within about half a second
        }
        st.execute("SELECT 1");
        try (ResultSet rs = st.executeQuery(
                "SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = '\"" + schema + "\".job'::regclass")) {
            return rs.next() ? rs.getLong(1) : -1;
        }
    }

    private static String mb(long bytes) {
        return String.format(Locale.ROOT, "%,.0f", bytes / 1048576.0);
    }
}
