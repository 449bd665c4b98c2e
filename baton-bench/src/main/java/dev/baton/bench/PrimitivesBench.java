package dev.baton.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.baton.Baton;
import dev.baton.ConcurrencyCap;
import dev.baton.Coordination;
import dev.baton.NotificationMode;
import dev.baton.RateDecision;
import dev.baton.RateLimiter;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Decisions per second of two coordination primitives on one Baton node: the rate limiter
 * ({@code tryAcquire}, one statement per decision) and the concurrency cap (acquire + release pairs,
 * two transactions per pair). Standalone, not wired into {@code Main}:
 *
 * <pre>
 * java -cp baton-bench/target/baton-bench.jar dev.baton.bench.PrimitivesBench [--jdbc-url URL]
 *      [--seconds 10] [--threads 8] [--limiter-keys 1000] [--cap-keys 100] [--fsync on|off]
 * </pre>
 *
 * Without {@code --jdbc-url} an embedded PostgreSQL is started (shared_buffers=256MB,
 * synchronous_commit=on, fsync as zonky starts it, i.e. off, unless {@code --fsync on}). Each run
 * uses a fresh schema, dropped afterwards. Prints a Markdown table.
 */
public final class PrimitivesBench {
    private PrimitivesBench() {}

    private static final String USAGE = "usage: PrimitivesBench [--jdbc-url URL] [--seconds N] [--threads N] "
            + "[--limiter-keys N] [--cap-keys N] [--fsync on|off]";

    /** One measured phase. */
    private record Result(
            String name,
            int threads,
            int keys,
            Duration duration,
            long ops,
            long allowed,
            long refused,
            double p50Ms,
            double p99Ms) {
        double perSecond() {
            return ops / (duration.toNanos() / 1e9);
        }
    }

    /** One operation under test; returns true if it was allowed / got a slot. */
    @FunctionalInterface
    private interface Op {
        boolean run(ThreadLocalRandom rnd);
    }

    public static void main(String[] args) throws Exception {
        String url = null;
        String fsync = null;
        int seconds = 10;
        int threads = 8;
        int limiterKeys = 1000;
        int capKeys = 100;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("-h") || a.equals("--help")) {
                System.out.println(USAGE);
                return;
            }
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException("missing value after " + a + "\n" + USAGE);
            }
            String v = args[++i];
            switch (a) {
                case "--jdbc-url" -> url = v;
                case "--seconds" -> seconds = positive(a, v);
                case "--threads" -> threads = positive(a, v);
                case "--limiter-keys" -> limiterKeys = positive(a, v);
                case "--cap-keys" -> capKeys = positive(a, v);
                case "--fsync" -> fsync = v;
                default -> throw new IllegalArgumentException("unknown option " + a + "\n" + USAGE);
            }
        }

        EmbeddedPostgres embedded = null;
        if (url == null) {
            EmbeddedPostgres.Builder b = EmbeddedPostgres.builder()
                    .setPGStartupWait(Duration.ofSeconds(60))
                    .setServerConfig("shared_buffers", "256MB")
                    .setServerConfig("synchronous_commit", "on")
                    .setServerConfig("max_connections", "200")
                    .setServerConfig("timezone", "UTC");
            if (fsync != null) {
                b.setServerConfig("fsync", fsync);
            }
            embedded = b.start();
            url = embedded.getJdbcUrl("postgres", "postgres");
        }
        String schema = "bench_prims_" + Long.toString(System.nanoTime() & 0xffffffffL, 36);
        HikariDataSource pool = pool(url, "prims-app", threads + 2);
        HikariDataSource heartbeat = pool(url, "prims-heartbeat", 2);
        Baton node = null;
        try {
            Baton.migrate(pool, schema);
            node = Baton.builder(pool)
                    .coordinationDataSource(heartbeat)
                    .schema(schema)
                    .nodeId("bench-node")
                    .notifications(NotificationMode.POLL)
                    .migrateOnStart(false)
                    .build()
                    .start();
            Coordination coord = node.coordination();
            Duration run = Duration.ofSeconds(seconds);
            Duration warmup = Duration.ofSeconds(Math.min(2, seconds));

            // A limit high enough that most decisions are allowed (each allowed decision writes), with
            // some keys hot enough to be refused now and then: 1000 keys at 8 threads rarely collide.
            RateLimiter limiter = coord.rateLimiter("bench-limiter", 50, Duration.ofSeconds(1), 5);
            int limiterKeyCount = limiterKeys;
            Op limit = rnd -> {
                RateDecision d = limiter.tryAcquire("ip-" + rnd.nextInt(limiterKeyCount));
                if (d.fallback()) {
                    throw new IllegalStateException("the rate limiter fell back: the database was unreachable");
                }
                return d.allowed();
            };
            int capKeyCount = capKeys;
            ConcurrencyCap cap = coord.concurrencyCap("bench-cap", 4, Duration.ofSeconds(30), 1);
            Op acquireRelease = rnd -> {
                Optional<ConcurrencyCap.Permit> p = cap.tryAcquire("acct-" + rnd.nextInt(capKeyCount));
                if (p.isEmpty()) {
                    return false;
                }
                if (p.get().local()) {
                    throw new IllegalStateException("the cap fell back: the database was unreachable");
                }
                p.get().close();
                return true;
            };

            measure("warm-up", threads, limiterKeys, warmup, limit);
            Result rl = measure("rate limiter: tryAcquire", threads, limiterKeys, run, limit);
            measure("warm-up", threads, capKeys, warmup, acquireRelease);
            Result cp = measure("concurrency cap: acquire + release", threads, capKeys, run, acquireRelease);

            System.out.println();
            System.out.println("Coordination primitives, one node, " + threads + " threads, pool of "
                    + (threads + 2) + " connections; " + (embedded != null ? "embedded PostgreSQL" : "external server")
                    + " (" + settings(url) + ")");
            System.out.println();
            System.out.println("| primitive | threads | keys | seconds | operations | per second | allowed | refused "
                    + "| p50 ms | p99 ms |");
            System.out.println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
            for (Result r : List.of(rl, cp)) {
                System.out.printf(
                        Locale.ROOT,
                        "| %s | %d | %d | %.1f | %d | %.0f | %d | %d | %.2f | %.2f |%n",
                        r.name(),
                        r.threads(),
                        r.keys(),
                        r.duration().toNanos() / 1e9,
                        r.ops(),
                        r.perSecond(),
                        r.allowed(),
                        r.refused(),
                        r.p50Ms(),
                        r.p99Ms());
            }
            System.out.println();
            System.out.println("Rate limiter: 50 per key per second; an operation is one decision (allowed or not). "
                    + "Cap: 4 per key; an operation is one tryAcquire, followed by close() when a slot was granted "
                    + "(\"allowed\" = acquire+release pairs). Fallback decisions: " + coord.fallbacks() + ".");
        } finally {
            if (node != null) {
                node.close();
            }
            try (Connection c = pool.getConnection();
                    Statement s = c.createStatement()) {
                s.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
            } finally {
                pool.close();
                heartbeat.close();
                if (embedded != null) {
                    embedded.close();
                }
            }
        }
    }

    private static Result measure(String name, int threads, int keys, Duration duration, Op op) throws Exception {
        AtomicBoolean stop = new AtomicBoolean();
        CountDownLatch ready = new CountDownLatch(threads);
        CountDownLatch go = new CountDownLatch(1);
        long[][] latencies = new long[threads][];
        long[] ops = new long[threads];
        long[] allowed = new long[threads];
        Throwable[] failures = new Throwable[threads];
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int me = t;
            Thread th = new Thread(
                    () -> {
                        ThreadLocalRandom rnd = ThreadLocalRandom.current();
                        long[] lat = new long[1 << 16];
                        int n = 0;
                        long ok = 0;
                        ready.countDown();
                        try {
                            go.await();
                            while (!stop.get()) {
                                long t0 = System.nanoTime();
                                boolean granted = op.run(rnd);
                                long dt = System.nanoTime() - t0;
                                if (n == lat.length) {
                                    lat = Arrays.copyOf(lat, lat.length * 2);
                                }
                                lat[n++] = dt;
                                if (granted) {
                                    ok++;
                                }
                            }
                        } catch (Throwable e) {
                            failures[me] = e;
                        }
                        latencies[me] = Arrays.copyOf(lat, n);
                        ops[me] = n;
                        allowed[me] = ok;
                    },
                    "bench-" + t);
            th.start();
            workers.add(th);
        }
        ready.await();
        long start = System.nanoTime();
        go.countDown();
        long deadline = start + duration.toNanos();
        // The main thread only times the phase; the workers are told to stop at the deadline.
        while (System.nanoTime() < deadline) {
            java.util.concurrent.locks.LockSupport.parkNanos(Math.min(deadline - System.nanoTime(), 100_000_000L));
        }
        stop.set(true);
        for (Thread th : workers) {
            th.join();
        }
        long elapsed = System.nanoTime() - start;
        for (Throwable f : failures) {
            if (f != null) {
                throw new IllegalStateException(name + " failed: " + f, f);
            }
        }
        long total = Arrays.stream(ops).sum();
        long ok = Arrays.stream(allowed).sum();
        long[] all =
                Arrays.stream(latencies).flatMapToLong(Arrays::stream).sorted().toArray();
        return new Result(
                name,
                threads,
                keys,
                Duration.ofNanos(elapsed),
                total,
                ok,
                total - ok,
                percentile(all, 0.50),
                percentile(all, 0.99));
    }

    private static double percentile(long[] sorted, double q) {
        if (sorted.length == 0) {
            return Double.NaN;
        }
        int i = (int) Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1);
        return sorted[Math.max(0, i)] / 1e6;
    }

    private static HikariDataSource pool(String url, String name, int size) {
        HikariConfig cfg = new HikariConfig();
        cfg.setJdbcUrl(url);
        cfg.setPoolName(name);
        cfg.setMaximumPoolSize(size);
        cfg.setMinimumIdle(size);
        return new HikariDataSource(cfg);
    }

    private static String settings(String url) {
        List<String> out = new ArrayList<>();
        try (Connection c = DriverManager.getConnection(url);
                Statement s = c.createStatement()) {
            for (String name : List.of("server_version", "synchronous_commit", "fsync", "shared_buffers")) {
                try (ResultSet rs = s.executeQuery("SHOW " + name)) {
                    rs.next();
                    out.add(name + "=" + rs.getString(1));
                }
            }
        } catch (Exception e) {
            out.add("settings unavailable: " + e.getMessage());
        }
        return String.join(", ", out);
    }

    private static int positive(String option, String value) {
        int n;
        try {
            n = Integer.parseInt(value);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(option + " needs a positive integer, was '" + value + "'");
        }
        if (n < 1) {
            throw new IllegalArgumentException(option + " needs a positive integer, was '" + value + "'");
        }
        return n;
    }
}
