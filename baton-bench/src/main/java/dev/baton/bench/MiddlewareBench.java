package dev.baton.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.baton.Baton;
import dev.baton.BatonMetrics;
import dev.baton.JobContext;
import dev.baton.JobInterceptor;
import dev.baton.JobRequest;
import dev.baton.Jobs;
import dev.baton.WorkerConfig;
import dev.baton.micrometer.BatonObservation;
import io.micrometer.observation.ObservationHandler;
import io.micrometer.observation.ObservationRegistry;
import io.micrometer.tracing.handler.DefaultTracingObservationHandler;
import io.micrometer.tracing.handler.PropagatingReceiverTracingObservationHandler;
import io.micrometer.tracing.handler.PropagatingSenderTracingObservationHandler;
import io.micrometer.tracing.otel.bridge.OtelBaggageManager;
import io.micrometer.tracing.otel.bridge.OtelCurrentTraceContext;
import io.micrometer.tracing.otel.bridge.OtelPropagator;
import io.micrometer.tracing.otel.bridge.OtelTracer;
import io.opentelemetry.api.trace.propagation.W3CTraceContextPropagator;
import io.opentelemetry.context.propagation.ContextPropagators;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.BatchSpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import io.opentelemetry.sdk.trace.samplers.Sampler;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;

/**
 * {@code java -jar baton-bench.jar middleware [options]}: what interceptors and tracing cost a job, in one
 * run. Three set-ups take turns, round after round, on the same database: no interceptor ({@code off}), a
 * pass-through interceptor ({@code interceptor}: the chain itself, with Baton's MDC keys as always), and
 * Baton's tracing interceptor over Micrometer Tracing and the OpenTelemetry SDK, sampling every job and
 * exporting in batches to an exporter that drops the spans ({@code tracing}: the enqueue, execute and
 * complete spans and the trace context carried in each job's metadata). Each round of each set-up enqueues
 * the jobs (through its own interceptors), then its nodes work them off; reported: the rate of each, median
 * and range over the rounds, and the ratio of the medians to {@code off}.
 */
final class MiddlewareBench {
    static final String USAGE = String.join(
            "\n",
            "java -jar baton-bench.jar middleware [options]",
            "  --jdbc-url URL      a PostgreSQL to use (default: an embedded one, fsync off)",
            "  --jobs N            jobs per round and set-up (default 20000)",
            "  --rounds N          rounds; set-ups interleaved within each (default 3)",
            "  --nodes N           worker nodes (default 2)",
            "  --concurrency N     handler threads per node (default 32)");

    private static final String QUEUE = "bench";
    private static final List<String> SETUPS = List.of("off", "interceptor", "tracing");

    private int jobs = 20_000;
    private int rounds = 3;
    private int nodes = 2;
    private int concurrency = 32;
    private String jdbcUrl;

    static int main(String[] args) {
        MiddlewareBench b = new MiddlewareBench();
        try {
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                switch (a) {
                    case "--jdbc-url" -> b.jdbcUrl = value(args, ++i, a);
                    case "--jobs" -> b.jobs = positive(args, ++i, a);
                    case "--rounds" -> b.rounds = positive(args, ++i, a);
                    case "--nodes" -> b.nodes = positive(args, ++i, a);
                    case "--concurrency" -> b.concurrency = positive(args, ++i, a);
                    case "-h", "--help" -> {
                        System.out.println(USAGE);
                        return 0;
                    }
                    default -> throw new IllegalArgumentException("unknown option '" + a + "'");
                }
            }
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage() + "\n\n" + USAGE);
            return 2;
        }
        try (Database db = Database.open(b.jdbcUrl, null)) {
            System.out.println("Baton middleware benchmark");
            Machine.facts().forEach((k, v) -> System.out.printf("  %-32s %s%n", k, v));
            System.out.printf("  %-32s %s%n", "PostgreSQL", db.serverVersion());
            System.out.printf(
                    "  %,d jobs per round, %d rounds, %d nodes × concurrency %d%n",
                    b.jobs, b.rounds, b.nodes, b.concurrency);
            b.run(db);
            return 0;
        } catch (Exception e) {
            System.err.println("benchmark failed: " + e);
            e.printStackTrace();
            return 1;
        }
    }

    private void run(Database db) throws Exception {
        Map<String, List<double[]>> rates = new LinkedHashMap<>();
        SETUPS.forEach(s -> rates.put(s, new ArrayList<>()));
        for (String setup : SETUPS) {
            runOnce(db, setup, Math.max(1_000, jobs / 4), 0); // warm-up of every set-up's code, not reported
        }
        for (int round = 1; round <= rounds; round++) {
            for (String setup : SETUPS) {
                double[] r = runOnce(db, setup, jobs, round);
                rates.get(setup).add(r);
            }
        }
        double offRun = median(rates.get("off"), 1);
        double offEnqueue = median(rates.get("off"), 0);
        System.out.println();
        System.out.println("| set-up | enqueue jobs/s, median (range) | run jobs/s, median (range) | run vs off |");
        System.out.println("|---|---|---|---|");
        for (String setup : SETUPS) {
            List<double[]> r = rates.get(setup);
            System.out.printf(
                    Locale.ROOT,
                    "| %s | %,.0f (%,.0f–%,.0f) ×%.2f | %,.0f (%,.0f–%,.0f) | ×%.2f |%n",
                    setup,
                    median(r, 0),
                    min(r, 0),
                    max(r, 0),
                    median(r, 0) / offEnqueue,
                    median(r, 1),
                    min(r, 1),
                    max(r, 1),
                    median(r, 1) / offRun);
        }
    }

    /** One set-up's round: {enqueue jobs/s, run jobs/s}. */
    private double[] runOnce(Database db, String setup, int n, int round) throws Exception {
        String schema = "bench_mw_" + setup + "_" + round + "_" + Long.toString(System.nanoTime(), 36);
        List<AutoCloseable> closing = new ArrayList<>();
        List<HikariDataSource> pools = new ArrayList<>();
        List<Baton> started = new ArrayList<>();
        LongAdder handled = new LongAdder();
        try (HikariDataSource client = db.pool("mw-client", 4);
                Connection mon = db.connect()) {
            Baton.migrate(client, schema);
            JobInterceptor clientSide = interceptor(setup, "client", closing);
            Baton.Builder cb = Baton.builder(client).schema(schema);
            if (clientSide != null) {
                cb.interceptor(clientSide);
            }
            Jobs enqueuer = cb.build().jobs();
            enqueuer.pause(QUEUE);
            long e0 = System.nanoTime();
            List<JobRequest> batch = new ArrayList<>(1000);
            for (int i = 0; i < n; i++) {
                batch.add(JobRequest.of("bench.noop", i).queue(QUEUE));
                if (batch.size() == 1000 || i == n - 1) {
                    enqueuer.enqueueAll(batch);
                    batch.clear();
                }
            }
            double enqueueRate = n / ((System.nanoTime() - e0) / 1e9);
            for (int i = 1; i <= nodes; i++) {
                HikariDataSource pool = db.pool("mw-node-" + i, Math.max(4, concurrency / 4));
                pools.add(pool);
                Baton.Builder nb = Baton.builder(pool)
                        .schema(schema)
                        .nodeId("mw-" + setup + "-" + i)
                        .worker(WorkerConfig.builder().queue(QUEUE, concurrency).build())
                        .handle("bench.noop", Integer.class, (p, ctx) -> handled.increment());
                JobInterceptor nodeSide = interceptor(setup, "mw-" + setup + "-" + i, closing);
                if (nodeSide != null) {
                    nb.interceptor(nodeSide);
                }
                started.add(nb.build().start());
            }
            long t0 = System.nanoTime();
            enqueuer.resume(QUEUE);
            try (PreparedStatement ps = mon.prepareStatement("SELECT pg_notify(?, ?)")) {
                ps.setString(1, schema + ".job");
                ps.setString(2, QUEUE);
                ps.execute();
            }
            while (remaining(mon, schema) > 0) {
                Thread.sleep(20); // polling the database for the end of the run, not synchronisation of threads
            }
            double runRate = n / ((System.nanoTime() - t0) / 1e9);
            System.out.printf(
                    Locale.ROOT,
                    "  %-12s round %d: enqueue %,8.0f jobs/s, run %,8.0f jobs/s (handler runs %,d)%n",
                    setup,
                    round,
                    enqueueRate,
                    runRate,
                    handled.sum());
            return new double[] {enqueueRate, runRate};
        } finally {
            for (Baton b : started) {
                b.close();
            }
            pools.forEach(HikariDataSource::close);
            for (AutoCloseable c : closing) {
                c.close();
            }
            db.dropSchema(schema);
        }
    }

    /** The interceptor of one set-up for one process (null for {@code off}). */
    private static JobInterceptor interceptor(String setup, String node, List<AutoCloseable> closing) {
        return switch (setup) {
            case "off" -> null;
            case "interceptor" ->
                new JobInterceptor() {
                    @Override
                    public BatonMetrics.JobOutcome aroundExecution(JobContext job, Execution execution) {
                        return execution.proceed();
                    }
                };
            case "tracing" -> new BatonObservation(tracing(closing), node);
            default -> throw new IllegalArgumentException(setup);
        };
    }

    /** An observation registry traced by the OpenTelemetry SDK: every span sampled, exported in batches, dropped. */
    private static ObservationRegistry tracing(List<AutoCloseable> closing) {
        SdkTracerProvider provider = SdkTracerProvider.builder()
                .setSampler(Sampler.alwaysOn())
                .addSpanProcessor(
                        BatchSpanProcessor.builder(new DroppingExporter()).build())
                .build();
        closing.add(provider::close);
        OtelCurrentTraceContext current = new OtelCurrentTraceContext();
        OtelTracer tracer = new OtelTracer(
                provider.get("dev.baton.bench"),
                current,
                event -> {},
                new OtelBaggageManager(current, List.of(), List.of()));
        OtelPropagator propagator = new OtelPropagator(
                ContextPropagators.create(W3CTraceContextPropagator.getInstance()), provider.get("dev.baton.bench"));
        ObservationRegistry registry = ObservationRegistry.create();
        registry.observationConfig()
                .observationHandler(new ObservationHandler.FirstMatchingCompositeObservationHandler(
                        new PropagatingSenderTracingObservationHandler<>(tracer, propagator),
                        new PropagatingReceiverTracingObservationHandler<>(tracer, propagator),
                        new DefaultTracingObservationHandler(tracer)));
        return registry;
    }

    /** Takes every exported batch and keeps nothing: the cost measured is producing the spans. */
    private static final class DroppingExporter implements SpanExporter {
        @Override
        public CompletableResultCode export(Collection<SpanData> spans) {
            return CompletableResultCode.ofSuccess();
        }

        @Override
        public CompletableResultCode flush() {
            return CompletableResultCode.ofSuccess();
        }

        @Override
        public CompletableResultCode shutdown() {
            return CompletableResultCode.ofSuccess();
        }
    }

    private static long remaining(Connection c, String schema) throws SQLException {
        try (PreparedStatement ps =
                        c.prepareStatement("SELECT count(*) FROM \"" + schema + "\".job WHERE state <> 'succeeded'");
                ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static double median(List<double[]> r, int i) {
        double[] v = r.stream().mapToDouble(x -> x[i]).sorted().toArray();
        return v.length % 2 == 1 ? v[v.length / 2] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
    }

    private static double min(List<double[]> r, int i) {
        return r.stream().mapToDouble(x -> x[i]).min().orElse(Double.NaN);
    }

    private static double max(List<double[]> r, int i) {
        return r.stream().mapToDouble(x -> x[i]).max().orElse(Double.NaN);
    }

    private static String value(String[] args, int i, String option) {
        if (i >= args.length) {
            throw new IllegalArgumentException(option + " needs a value");
        }
        return args[i];
    }

    private static int positive(String[] args, int i, String option) {
        String v = value(args, i, option);
        try {
            int n = Integer.parseInt(v);
            if (n > 0) {
                return n;
            }
        } catch (NumberFormatException e) {
            // below
        }
        throw new IllegalArgumentException(option + " must be a positive integer, but was '" + v + "'");
    }
}
