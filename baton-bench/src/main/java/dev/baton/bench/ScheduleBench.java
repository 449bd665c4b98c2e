package dev.baton.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.baton.Baton;
import dev.baton.Schedule;
import dev.baton.WorkerConfig;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Firing delay of recurring schedules: three Baton nodes in one JVM, default settings except one
 * schedule firing every second, over at least 60 due instants. For each job the handler reads, in
 * one statement at its start, the database clock and the job's idempotency key
 * ({@code schedule:<name>:<due instant>}); the firing delay is handler start − due instant, both on
 * the database clock (no application clock is used). Also split into enqueue (job created − due)
 * and pickup (handler start − job created). Prints a Markdown table of p50 / p95 / max in ms.
 *
 * <pre>
 * java -cp baton-bench/target/baton-bench.jar dev.baton.bench.ScheduleBench [--url JDBC_URL] [--instants N]
 * </pre>
 * Without {@code --url} (or {@code BATON_JDBC_URL}) an embedded PostgreSQL is started.
 */
public final class ScheduleBench {
    private static final String NAME = "bench.tick";

    private ScheduleBench() {}

    private record Sample(Instant due, Instant created, Instant handlerStart, String node) {}

    public static void main(String[] args) throws Exception {
        String url = System.getenv("BATON_JDBC_URL");
        int instants = 60;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--url" -> url = args[++i];
                case "--instants" -> instants = Integer.parseInt(args[++i]);
                default ->
                    throw new IllegalArgumentException(
                            "unknown argument " + args[i] + "; usage: ScheduleBench [--url JDBC_URL] [--instants N]");
            }
        }
        if (instants < 1) {
            throw new IllegalArgumentException("--instants must be at least 1");
        }
        EmbeddedPostgres embedded = null;
        if (url == null || url.isBlank()) {
            embedded = EmbeddedPostgres.builder()
                    .setPGStartupWait(Duration.ofSeconds(60))
                    .setServerConfig("max_connections", "200")
                    .setServerConfig("timezone", "UTC")
                    .start();
            url = embedded.getJdbcUrl("postgres", "postgres");
        }
        String schema = "baton_sched_bench_" + Long.toString(System.nanoTime() & 0xffffff, 36);
        try {
            run(url, schema, instants, embedded != null);
        } finally {
            try (Connection c = DriverManager.getConnection(url);
                    Statement s = c.createStatement()) {
                s.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
            }
            if (embedded != null) {
                embedded.close();
            }
        }
    }

    private static void run(String url, String schema, int instants, boolean embedded) throws Exception {
        Map<Long, Sample> samples = new ConcurrentHashMap<>();
        List<HikariDataSource> pools = new ArrayList<>();
        List<Baton> nodes = new ArrayList<>();
        CountDownLatch enough = new CountDownLatch(1);
        Instant[] measureFrom = new Instant[1];
        int wanted = instants;
        try {
            for (int n = 1; n <= 3; n++) {
                String nodeId = "bench-node-" + n;
                HikariConfig cfg = new HikariConfig();
                cfg.setJdbcUrl(url);
                cfg.setPoolName(nodeId);
                HikariDataSource ds = new HikariDataSource(cfg);
                pools.add(ds);
                String query =
                        "SELECT clock_timestamp(), idempotency_key, created_at FROM " + schema + ".job WHERE id = ?";
                nodes.add(Baton.builder(ds)
                        .schema(schema)
                        .nodeId(nodeId)
                        .application("bench", "1")
                        .worker(WorkerConfig.builder().queue("default", 10).build())
                        .schedule(Schedule.every(NAME, Duration.ofSeconds(1)).job(NAME, null))
                        .handle(NAME, Object.class, (p, ctx) -> {
                            try (Connection c = ds.getConnection();
                                    PreparedStatement ps = c.prepareStatement(query)) {
                                ps.setLong(1, ctx.jobId());
                                try (ResultSet rs = ps.executeQuery()) {
                                    rs.next();
                                    Instant start = rs.getTimestamp(1).toInstant();
                                    String key = rs.getString(2);
                                    Instant due = Instant.parse(key.substring(("schedule:" + NAME + ":").length()));
                                    samples.putIfAbsent(
                                            ctx.jobId(),
                                            new Sample(due, rs.getTimestamp(3).toInstant(), start, nodeId));
                                }
                            }
                            synchronized (measureFrom) {
                                if (measureFrom[0] != null
                                        && samples.values().stream()
                                                        .filter(s -> !s.due().isBefore(measureFrom[0]))
                                                        .count()
                                                >= wanted) {
                                    enough.countDown();
                                }
                            }
                        })
                        .build()
                        .start());
            }
            // Measure only instants due after all three nodes are up.
            try (Connection c = DriverManager.getConnection(url);
                    ResultSet rs = c.createStatement().executeQuery("SELECT clock_timestamp()")) {
                rs.next();
                synchronized (measureFrom) {
                    measureFrom[0] = rs.getTimestamp(1).toInstant().plusSeconds(1);
                }
            }
            System.err.printf(
                    "ScheduleBench: 3 nodes up (notifications: %s); measuring %d due instants…%n",
                    nodes.get(0).notificationsActive() ? "LISTEN" : "polling", instants);
            if (!enough.await(instants * 2L + 60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("fewer than " + instants + " jobs ran in time");
            }
        } finally {
            for (Baton node : nodes) {
                try {
                    node.close();
                } catch (RuntimeException e) {
                    System.err.println("ScheduleBench: closing node " + node.nodeId() + " failed: " + e);
                }
            }
            pools.forEach(HikariDataSource::close);
        }

        List<Sample> measured = samples.values().stream()
                .filter(s -> !s.due().isBefore(measureFrom[0]))
                .sorted((a, b) -> a.due().compareTo(b.due()))
                .limit(instants)
                .toList();
        long distinctDue = measured.stream().map(Sample::due).distinct().count();
        List<Double> firing = new ArrayList<>();
        List<Double> enqueue = new ArrayList<>();
        List<Double> pickup = new ArrayList<>();
        for (Sample s : measured) {
            firing.add(ms(s.due(), s.handlerStart()));
            enqueue.add(ms(s.due(), s.created()));
            pickup.add(ms(s.created(), s.handlerStart()));
        }
        String pgVersion;
        try (Connection c = DriverManager.getConnection(url);
                ResultSet rs = c.createStatement().executeQuery("SHOW server_version")) {
            rs.next();
            pgVersion = rs.getString(1);
        }
        System.out.println();
        System.out.printf(
                "### Schedule firing delay (3 nodes, every 1 s, default settings; PostgreSQL %s, %s)%n%n",
                pgVersion, embedded ? "embedded" : "external server");
        System.out.printf(
                "%d due instants measured, %d distinct (one job each); handled by %s%n%n",
                measured.size(),
                distinctDue,
                measured.stream().map(Sample::node).distinct().sorted().toList());
        System.out.println("| delay (database clock) | p50 ms | p95 ms | max ms |");
        System.out.println("|---|---:|---:|---:|");
        row("firing: handler start − due instant", firing);
        row("enqueue: job created − due instant", enqueue);
        row("pickup: handler start − job created", pickup);
        System.out.println();
        System.out.printf(
                "Target: due jobs start within 1 s of the due instant: %s (max %.1f ms)%n",
                percentile(firing, 100) <= 1000 ? "met" : "NOT met", percentile(firing, 100));
    }

    private static double ms(Instant from, Instant to) {
        return Duration.between(from, to).toNanos() / 1e6;
    }

    private static void row(String label, List<Double> values) {
        System.out.printf(
                Locale.ROOT,
                "| %s | %.1f | %.1f | %.1f |%n",
                label,
                percentile(values, 50),
                percentile(values, 95),
                percentile(values, 100));
    }

    /** Nearest-rank percentile. */
    private static double percentile(List<Double> values, double p) {
        List<Double> sorted = new ArrayList<>(values);
        sorted.sort(Double::compare);
        int rank = (int) Math.ceil(p / 100.0 * sorted.size());
        return sorted.get(Math.max(0, Math.min(sorted.size() - 1, rank - 1)));
    }
}
