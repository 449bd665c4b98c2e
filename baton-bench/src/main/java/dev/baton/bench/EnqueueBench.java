package dev.baton.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.baton.Baton;
import dev.baton.JobRequest;
import dev.baton.Jobs;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntFunction;

/**
 * {@code baton-bench enqueue}: batch enqueue from one client thread ({@code Jobs.enqueueAll}), in variants:
 * keyless jobs at two batch sizes, jobs with an idempotency key each, jobs with a concurrency key (1,000
 * keys); one job per call from 32 threads, on their own or in a framework's transaction. The requests are built
 * before the clock starts (that is the caller's work); each run starts on an emptied table after a checkpoint.
 * Variants are interleaved run by run, so drift hits all alike; the median and the range of the runs are reported.
 */
final class EnqueueBench {
    static final String USAGE = """
            usage: java -jar baton-bench.jar enqueue [options]

            Batch enqueue from one client thread, in variants (keyless at batch 1,000 and 10,000; an idempotency key
            per job; a concurrency key of 1,000), interleaved run by run; median and range of jobs/s. Then one job per
            call (Jobs.enqueue) from 32 threads, a tenth of the jobs per run: many small enqueues at once; and the same
            in a transaction per call that a framework keeps (as Spring's), its enqueue notified inside it or, as
            Baton does with a binding that can say when a transaction committed, after the commit.
              --jdbc-url URL   an existing database; default: embedded PostgreSQL
              --jobs N         jobs per run (default 1000000)
              --runs N         runs per variant (default 3)
              --keep           keep the schema afterwards
            """;

    /**
     * {@code threads} callers share the run's jobs, each call enqueuing {@code batch} (1: Jobs.enqueue); with a
     * {@code framework}, each call in a transaction of the caller's thread that the framework keeps.
     */
    private record Variant(
            String name, int batch, int threads, IntFunction<JobRequest> request, FrameworkTransactions framework) {
        Variant(String name, int batch, IntFunction<JobRequest> request) {
            this(name, batch, 1, request, null);
        }

        /** The jobs of a run: one-job calls are far slower than batches, so they get a tenth. */
        int jobs(int perRun) {
            return batch == 1 ? Math.max(threads, perRun / 10) : perRun;
        }
    }

    /** Callers of the one-job variant: about as many as a busy service's request threads. */
    private static final int CALLERS = 32;

    /** One run: jobs/s, and the CPU each job cost the client JVM and the PostgreSQL server (µs). */
    private record Run(double rate, double jvmMicros, double pgMicros) {}

    private static final List<Variant> VARIANTS = List.of(
            new Variant("keyless, batch 1,000", 1_000, i -> JobRequest.of("bench.noop", i)),
            new Variant("keyless, batch 10,000", 10_000, i -> JobRequest.of("bench.noop", i)),
            new Variant(
                    "idempotency key each, batch 10,000",
                    10_000,
                    i -> JobRequest.of("bench.noop", i).idempotencyKey("order-" + i)),
            new Variant(
                    "concurrency key of 1,000, batch 10,000",
                    10_000,
                    i -> JobRequest.of("bench.noop", i).concurrencyKey("tenant-" + (i % 1000))),
            new Variant(
                    "one job per call, " + CALLERS + " threads", 1, CALLERS, i -> JobRequest.of("bench.noop", i), null),
            new Variant(
                    "one per call in a framework's transaction, " + CALLERS + " threads, notified in it",
                    1,
                    CALLERS,
                    i -> JobRequest.of("bench.noop", i),
                    new FrameworkTransactions(false)),
            new Variant(
                    "one per call in a framework's transaction, " + CALLERS + " threads, woken after commit",
                    1,
                    CALLERS,
                    i -> JobRequest.of("bench.noop", i),
                    new FrameworkTransactions(true)));

    private EnqueueBench() {}

    static int main(String[] args) {
        return FilledTableBench.main(args, "Baton batch enqueue benchmark", USAGE, 3, EnqueueBench::run);
    }

    private static void run(Database db, FilledTableBench o) throws Exception {
        int jobs = o.jobs();
        String schema = "bench_enqueue_" + Long.toString(System.nanoTime(), 36);
        Map<Variant, List<Run>> rates = new LinkedHashMap<>();
        try (HikariDataSource pool = db.pool("enqueue-bench", CALLERS + 1)) { // one more: the enqueue notifier's
            Baton.migrate(pool, schema);
            // Client-only instances (never started): closed before the pool, so that no notifier outlives it.
            List<Baton> built = new ArrayList<>();
            try {
                Map<Variant, Jobs> clients = new LinkedHashMap<>();
                Baton plainBaton = Baton.builder(pool).schema(schema).build();
                built.add(plainBaton);
                Jobs plain = plainBaton.jobs();
                for (Variant v : VARIANTS) {
                    if (v.framework() == null) {
                        clients.put(v, plain);
                    } else {
                        Baton b = Baton.builder(pool)
                                .schema(schema)
                                .transactionBinding(v.framework())
                                .build();
                        built.add(b);
                        clients.put(v, b.jobs());
                    }
                }
                // Warm-up: the JIT and the statement's plan, then the table emptied again.
                once(db, pool, schema, plain, VARIANTS.get(1), Math.min(jobs, 100_000));
                for (int run = 1; run <= o.runs(); run++) {
                    for (Variant v : VARIANTS) {
                        Run r = once(db, pool, schema, clients.get(v), v, v.jobs(jobs));
                        rates.computeIfAbsent(v, k -> new ArrayList<>()).add(r);
                        System.out.printf(
                                Locale.ROOT,
                                "  run %d  %-40s %,10.0f jobs/s  CPU per job: JVM %.1f µs, PostgreSQL %.1f µs%n",
                                run,
                                v.name(),
                                r.rate(),
                                r.jvmMicros(),
                                r.pgMicros());
                    }
                }
            } finally {
                built.forEach(Baton::close);
            }
        } finally {
            if (!o.keep()) {
                db.dropSchema(schema);
            }
        }
        System.out.printf(
                Locale.ROOT,
                "%n| variant (%,d jobs per run, a tenth one per call; %d runs) | jobs/s, median | range "
                        + "| CPU µs per job, JVM / PostgreSQL (median) |%n",
                jobs,
                o.runs());
        System.out.println("|---|---:|---|---|");
        for (Map.Entry<Variant, List<Run>> e : rates.entrySet()) {
            double[] r = e.getValue().stream().mapToDouble(Run::rate).sorted().toArray();
            System.out.printf(
                    Locale.ROOT,
                    "| %s | %,.0f | %,.0f – %,.0f | %.1f / %.1f |%n",
                    e.getKey().name(),
                    r[r.length / 2],
                    r[0],
                    r[r.length - 1],
                    median(e.getValue(), Run::jvmMicros),
                    median(e.getValue(), Run::pgMicros));
        }
    }

    private static double median(List<Run> runs, java.util.function.ToDoubleFunction<Run> f) {
        double[] v = runs.stream().mapToDouble(f).sorted().toArray();
        return v[v.length / 2];
    }

    /**
     * Empties the table, checkpoints, builds the requests, then times enqueueAll batch by batch (Jobs.enqueue for
     * batches of one), the batches shared out among the variant's threads.
     */
    private static Run once(Database db, HikariDataSource pool, String schema, Jobs client, Variant v, int jobs)
            throws Exception {
        try (Connection c = pool.getConnection();
                Statement s = c.createStatement()) {
            s.execute("TRUNCATE " + schema + ".job, " + schema + ".job_unique RESTART IDENTITY");
            s.execute("CHECKPOINT");
        }
        List<List<JobRequest>> batches = new ArrayList<>();
        for (int from = 0; from < jobs; from += v.batch()) {
            JobRequest[] b = new JobRequest[Math.min(v.batch(), jobs - from)];
            for (int i = 0; i < b.length; i++) {
                b[i] = v.request().apply(from + i);
            }
            batches.add(Arrays.asList(b));
        }
        Machine.Cpu c0 = Machine.Cpu.sample();
        long t0 = System.nanoTime();
        if (v.threads() == 1) {
            for (List<JobRequest> b : batches) {
                client.enqueueAll(b);
            }
        } else {
            AtomicInteger next = new AtomicInteger();
            List<Thread> callers = new ArrayList<>();
            List<Throwable> failed = new CopyOnWriteArrayList<>();
            for (int t = 0; t < v.threads(); t++) {
                Thread caller = new Thread(() -> {
                    try {
                        for (int i; (i = next.getAndIncrement()) < batches.size(); ) {
                            List<JobRequest> b = batches.get(i);
                            if (v.framework() != null) {
                                v.framework().run(pool, () -> client.enqueueAll(b));
                            } else if (b.size() == 1) {
                                client.enqueue(b.get(0));
                            } else {
                                client.enqueueAll(b);
                            }
                        }
                    } catch (RuntimeException | SQLException e) {
                        failed.add(e);
                    }
                });
                caller.start();
                callers.add(caller);
            }
            for (Thread caller : callers) {
                caller.join();
            }
            if (!failed.isEmpty()) {
                throw new IllegalStateException("an enqueue of variant '" + v.name() + "' failed", failed.get(0));
            }
        }
        double rate = jobs / ((System.nanoTime() - t0) / 1e9);
        double[] micros = Results.microsPerJob(c0, Machine.Cpu.sample(), jobs);
        return new Run(rate, micros[0], micros[1]);
    }
}
