package dev.baton.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.baton.Admin;
import dev.baton.Baton;
import dev.baton.JobInfo;
import dev.baton.JobQuery;
import dev.baton.JobState;
import dev.baton.Page;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;

/**
 * {@code java -jar baton-bench.jar admin [options]}: how long the admin API's reads take on a large job
 * table. Fills a fresh schema with N jobs in one statement (by default 10^6: 80 % succeeded, 10 % failed
 * with an error, 5 % cancelled, 5 % available; 10 queues and 20 kinds drawn at random, enqueued over 7
 * days), analyzes it, then
 * times typical operator calls one after the other (one client, warm cache): p50, p99 and max of each.
 */
final class AdminBench {
    static final String USAGE = String.join(
            "\n",
            "java -jar baton-bench.jar admin [options]",
            "  --jdbc-url URL      a PostgreSQL to use (default: an embedded one, fsync off)",
            "  --jobs N            jobs in the table (default 1000000)",
            "  --runs N            timed calls per query, after 5 warm-up calls (default 50)",
            "  --keep              keep the filled schema (its name is printed) for EXPLAIN; default: drop it");

    private final int jobs;
    private final int runs;
    private final boolean keep;

    private AdminBench(FilledTableBench o) {
        this.jobs = o.jobs();
        this.runs = o.runs();
        this.keep = o.keep();
    }

    static int main(String[] args) {
        return FilledTableBench.main(
                args, "Baton admin API benchmark", USAGE, 50, (db, o) -> new AdminBench(o).run(db));
    }

    private void run(Database db) throws Exception {
        String schema = "bench_admin_" + Long.toString(System.nanoTime(), 36);
        try (HikariDataSource pool = db.pool("admin-bench", 4)) {
            Baton.migrate(pool, schema);
            long t0 = System.nanoTime();
            fill(db, schema, jobs);
            System.out.printf(
                    Locale.ROOT, "  filled %,d jobs in %.1f s (with ANALYZE)%n", jobs, (System.nanoTime() - t0) / 1e9);
            Admin admin = Baton.builder(pool).schema(schema).build().admin();
            String deepCursor = cursorAfter(admin, JobQuery.all().states(JobState.FAILED), 20);
            Map<String, Supplier<Object>> calls = new LinkedHashMap<>();
            calls.put("first page, every job (50)", () -> admin.searchJobs(JobQuery.all(), null));
            calls.put(
                    "state=failed, newest first (50)",
                    () -> admin.searchJobs(JobQuery.all().states(JobState.FAILED), null));
            calls.put(
                    "state=failed, page 21 (cursor)",
                    () -> admin.searchJobs(JobQuery.all().states(JobState.FAILED), deepCursor));
            calls.put("queue=q3 (50)", () -> admin.searchJobs(JobQuery.all().queue("q3"), null));
            calls.put(
                    "queue=q3, state=failed (50)",
                    () -> admin.searchJobs(JobQuery.all().queue("q3").states(JobState.FAILED), null));
            calls.put(
                    "kind=k7, state=available (50)",
                    () -> admin.searchJobs(JobQuery.all().kind("k7").states(JobState.AVAILABLE), null));
            calls.put(
                    "error text, common ('timed out') (50)",
                    () -> admin.searchJobs(JobQuery.all().errorContains("timed out"), null));
            calls.put(
                    "error text, rare (10 jobs in all)",
                    () -> admin.searchJobs(JobQuery.all().errorContains("needle-4711"), null));
            calls.put(
                    "no match: queue=q3, kind=none (whole table)",
                    () -> admin.searchJobs(JobQuery.all().queue("q3").kind("none"), null));
            calls.put("idempotency key", () -> admin.searchJobs(JobQuery.all().idempotencyKey("key-123407"), null));
            calls.put(
                    "page of 1000, state=failed",
                    () -> admin.searchJobs(
                            JobQuery.all().states(JobState.FAILED).pageSize(1000), null));
            calls.put("queues()", admin::queues);
            calls.put("throughput(24 h, 1 h)", () -> admin.throughput(Duration.ofHours(24), Duration.ofHours(1)));
            calls.put(
                    "throughput q3 (7 d, 1 h)", () -> admin.throughput("q3", Duration.ofDays(7), Duration.ofHours(1)));
            System.out.println();
            System.out.printf("%,d jobs; %d timed calls each after 5 warm-up calls; one client%n%n", jobs, runs);
            System.out.println("| call | p50 ms | p99 ms | max ms |");
            System.out.println("|---|---:|---:|---:|");
            for (Map.Entry<String, Supplier<Object>> e : calls.entrySet()) {
                for (int i = 0; i < 5; i++) {
                    e.getValue().get();
                }
                long[] ns = new long[runs];
                for (int i = 0; i < runs; i++) {
                    long s = System.nanoTime();
                    e.getValue().get();
                    ns[i] = System.nanoTime() - s;
                }
                Arrays.sort(ns);
                System.out.printf(
                        Locale.ROOT,
                        "| %s | %.2f | %.2f | %.2f |%n",
                        e.getKey(),
                        ns[(runs - 1) / 2] / 1e6,
                        ns[Math.min(runs - 1, (int) Math.ceil(runs * 0.99) - 1)] / 1e6,
                        ns[runs - 1] / 1e6);
            }
        } finally {
            if (keep) {
                System.out.println("schema kept: " + schema);
            } else {
                db.dropSchema(schema);
            }
        }
    }

    /** The cursor after {@code pages} pages of {@code q}. */
    private static String cursorAfter(Admin admin, JobQuery q, int pages) {
        String cursor = null;
        for (int i = 0; i < pages; i++) {
            Page<JobInfo> p = admin.searchJobs(q, cursor);
            if (p.next().isEmpty()) {
                break; // a small table: the deepest page there is
            }
            cursor = p.next().get();
        }
        return cursor;
    }

    /**
     * One INSERT … SELECT over generate_series, then ANALYZE: {@code jobs} jobs as described above (the console
     * benchmark fills its table the same way).
     */
    static void fill(Database db, String schema, int jobs) throws Exception {
        String s = "\"" + schema + "\"";
        try (Connection c = db.connect();
                Statement st = c.createStatement()) {
            st.execute("SET synchronous_commit = off");
            st.execute("SELECT setseed(0.42)"); // queues and kinds drawn at random, independent of the state
            st.execute(
                    "INSERT INTO " + s + ".job (queue, kind, payload, priority, state, run_at, max_attempts, attempt,"
                            + " idempotency_key, errors, created_at, finished_at)"
                            + " SELECT 'q' || floor(r1 * 10)::int, 'k' || floor(r2 * 20)::int, jsonb_build_object('n', g), 50, st,"
                            + "        created, 25, CASE WHEN st = 'available' THEN 0 ELSE 1 END,"
                            + "        CASE WHEN g % 100 = 7 THEN 'key-' || g END,"
                            + "        CASE WHEN st = 'failed' THEN jsonb_build_array(jsonb_build_object('attempt', 1,"
                            + "             'node', 'node-' || (g % 3), 'at', created, 'class', 'java.io.IOException',"
                            + "             'message', CASE WHEN g % 100000 = 16 THEN 'needle-4711 in the haystack'"
                            + "                             WHEN g % 3 = 0 THEN 'read timed out after 30 s'"
                            + "                             ELSE 'connection refused by upstream ' || (g % 50) END,"
                            + "             'stack', repeat('at app.Handler.handle(Handler.java:42)' || chr(10), 20)))"
                            + "             ELSE '[]'::jsonb END,"
                            + "        created, CASE WHEN st = 'available' THEN NULL ELSE created + interval '2 seconds' END"
                            + "   FROM (SELECT g, random() AS r1, random() AS r2,"
                            + "                clock_timestamp() - interval '7 days' * (1 - g::float8 / " + jobs
                            + ") AS created,"
                            + "                CASE WHEN g % 20 < 16 THEN 'succeeded' WHEN g % 20 < 18 THEN 'failed'"
                            + "                     WHEN g % 20 = 18 THEN 'cancelled' ELSE 'available' END AS st"
                            + "           FROM generate_series(1, " + jobs + ") AS g) x");
            st.execute("ANALYZE " + s + ".job");
        }
    }
}
