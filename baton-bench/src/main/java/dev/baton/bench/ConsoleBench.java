package dev.baton.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.baton.Admin;
import dev.baton.Baton;
import dev.baton.BulkResult;
import dev.baton.JobInfo;
import dev.baton.JobQuery;
import dev.baton.JobState;
import dev.baton.Page;
import dev.baton.console.BatonConsoleServlet;
import dev.baton.console.ConsoleAccess;
import dev.baton.console.ConsoleSettings;
import java.net.CookieManager;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

/**
 * {@code java -jar baton-bench.jar console [options]}: the operator console's pages on a large job table, as a
 * browser loads them (HTTP through Jetty, templates rendered, one client), and a bulk retry of every failed job
 * through {@link Admin#retryJobs(JobQuery)} in batches of {@link Admin#MAX_BULK}. Fills the table as the
 * {@code admin} benchmark does (10^6 jobs by default, of which 10 % failed).
 */
final class ConsoleBench {
    static final String USAGE = String.join(
            "\n",
            "java -jar baton-bench.jar console [options]",
            "  --jdbc-url URL      a PostgreSQL to use (default: an embedded one, fsync off)",
            "  --jobs N            jobs in the table (default 1000000; 10 % failed)",
            "  --runs N            timed requests per page, after 5 warm-up requests (default 200)",
            "  --keep              keep the filled schema (its name is printed); default: drop it");

    private final int jobs;
    private final int runs;
    private final boolean keep;

    private ConsoleBench(FilledTableBench o) {
        this.jobs = o.jobs();
        this.runs = o.runs();
        this.keep = o.keep();
    }

    static int main(String[] args) {
        return FilledTableBench.main(
                args, "Baton console benchmark", USAGE, 200, (db, o) -> new ConsoleBench(o).run(db));
    }

    private void run(Database db) throws Exception {
        String schema = "bench_console_" + Long.toString(System.nanoTime(), 36);
        Server server = null;
        try (HikariDataSource pool = db.pool("console-bench", 4)) {
            Baton.migrate(pool, schema);
            long t0 = System.nanoTime();
            AdminBench.fill(db, schema, jobs);
            System.out.printf(
                    Locale.ROOT, "  filled %,d jobs in %.1f s (with ANALYZE)%n", jobs, (System.nanoTime() - t0) / 1e9);
            Baton tool = Baton.builder(pool).schema(schema).build();
            Admin admin = tool.admin();
            String token = ConsoleAccess.newToken();
            server = jetty(new BatonConsoleServlet(tool, ConsoleSettings.readOnly(ConsoleAccess.token(token))));
            int port = ((ServerConnector) server.getConnectors()[0]).getLocalPort();
            String base = "http://127.0.0.1:" + port;
            HttpClient http = HttpClient.newBuilder()
                    .cookieHandler(new CookieManager())
                    .followRedirects(HttpClient.Redirect.NORMAL)
                    .build();
            get(http, base + "/?token=" + token); // signs the client's session in

            String deep = cursorAfter(admin, JobQuery.all().states(JobState.FAILED), 20);
            Map<String, String> pages = new LinkedHashMap<>();
            pages.put("overview (queues, 2 charts of 60 buckets, nodes, leases)", "/");
            pages.put("jobs, first page (50)", "/jobs");
            pages.put("jobs, state=failed & queue=q3 (50)", "/jobs?state=failed&queue=q3");
            pages.put("jobs, state=failed, page 21 by cursor", "/jobs?state=failed&cursor=" + deep);
            pages.put("job detail (a failed job, 20-line stack)", "/jobs/" + firstFailed(admin));
            System.out.println();
            System.out.printf(
                    Locale.ROOT,
                    "%,d jobs; %d timed requests per page after 5 warm-up requests; one client, HTTP/1.1 keep-alive%n%n",
                    jobs,
                    runs);
            System.out.println("| page | p50 ms | p99 ms | max ms | bytes |");
            System.out.println("|---|---:|---:|---:|---:|");
            for (Map.Entry<String, String> e : pages.entrySet()) {
                String url = base + e.getValue();
                int bytes = 0;
                for (int i = 0; i < 5; i++) {
                    bytes = get(http, url).length();
                }
                long[] ns = new long[runs];
                for (int i = 0; i < runs; i++) {
                    long s = System.nanoTime();
                    get(http, url);
                    ns[i] = System.nanoTime() - s;
                }
                Arrays.sort(ns);
                System.out.printf(
                        Locale.ROOT,
                        "| %s | %.1f | %.1f | %.1f | %,d |%n",
                        e.getKey(),
                        ns[(runs - 1) / 2] / 1e6,
                        ns[Math.min(runs - 1, (int) Math.ceil(runs * 0.99) - 1)] / 1e6,
                        ns[runs - 1] / 1e6,
                        bytes);
            }

            // The console's "retry all matching", repeated until no failed job is left: bounded batches.
            JobQuery failed = JobQuery.all().states(JobState.FAILED);
            List<long[]> batches = new ArrayList<>(); // {rows changed, ns}
            long start = System.nanoTime();
            BulkResult r;
            do {
                long s = System.nanoTime();
                r = admin.retryJobs(failed);
                batches.add(new long[] {r.changed(), System.nanoTime() - s});
            } while (r.more());
            long total = System.nanoTime() - start;
            long rows = batches.stream().mapToLong(b -> b[0]).sum();
            long maxRows = batches.stream().mapToLong(b -> b[0]).max().orElse(0);
            long[] times = batches.stream().mapToLong(b -> b[1]).sorted().toArray();
            System.out.println();
            System.out.printf(
                    Locale.ROOT,
                    "bulk retry of every failed job: %,d jobs retried in %d calls of at most %,d (largest batch %,d rows),"
                            + " %.1f s in all; per call: min %.0f ms, median %.0f ms, max %.0f ms%n",
                    rows,
                    batches.size(),
                    Admin.MAX_BULK,
                    maxRows,
                    total / 1e9,
                    times[0] / 1e6,
                    times[(times.length - 1) / 2] / 1e6,
                    times[times.length - 1] / 1e6);
            for (int i = 0; i < batches.size(); i++) {
                System.out.printf(
                        Locale.ROOT,
                        "  call %2d: %,6d rows in %6.0f ms%n",
                        i + 1,
                        batches.get(i)[0],
                        batches.get(i)[1] / 1e6);
            }
        } finally {
            if (server != null) {
                server.stop();
            }
            if (keep) {
                System.out.println("schema kept: " + schema);
            } else {
                db.dropSchema(schema);
            }
        }
    }

    private static Server jetty(BatonConsoleServlet servlet) throws Exception {
        Server server = new Server();
        ServerConnector connector = new ServerConnector(server);
        connector.setHost("127.0.0.1");
        connector.setPort(0);
        server.addConnector(connector);
        ServletContextHandler context = new ServletContextHandler(ServletContextHandler.SESSIONS);
        context.setContextPath("/");
        context.addServlet(new ServletHolder(servlet), "/*");
        server.setHandler(context);
        server.start();
        return server;
    }

    private static String get(HttpClient http, String url) throws Exception {
        HttpResponse<String> r =
                http.send(HttpRequest.newBuilder(URI.create(url)).build(), HttpResponse.BodyHandlers.ofString());
        if (r.statusCode() != 200) {
            throw new IllegalStateException("GET " + url + " answered " + r.statusCode());
        }
        return r.body();
    }

    private static long firstFailed(Admin admin) {
        return admin.searchJobs(JobQuery.all().states(JobState.FAILED).pageSize(1), null)
                .items()
                .get(0)
                .id();
    }

    /** The cursor after {@code pages} pages of {@code q}. */
    private static String cursorAfter(Admin admin, JobQuery q, int pages) {
        String cursor = null;
        for (int i = 0; i < pages; i++) {
            Page<JobInfo> p = admin.searchJobs(q, cursor);
            if (p.next().isEmpty()) {
                break;
            }
            cursor = p.next().get();
        }
        return cursor == null ? "" : cursor;
    }
}
