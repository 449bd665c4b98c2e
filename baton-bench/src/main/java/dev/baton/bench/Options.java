package dev.baton.bench;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/** Command-line options of {@code baton-bench jobs}. */
final class Options {
    static final String USAGE = String.join(
            "\n",
            "usage: java -jar baton-bench.jar jobs [options]",
            "",
            "Benchmarks Baton's durable jobs on one PostgreSQL database (embedded unless --jdbc-url):",
            "  latency   idle enqueue-to-start latency, one job at a time, one idle node",
            "  idle      transactions/s caused by that idle node (pg_stat_database) and its statements/s",
            "  e2e       enqueueAll throughput, then N nodes working all jobs to SUCCEEDED (no-op handler)",
            "  ceiling   the same claim/complete statements from raw JDBC threads: the SQL ceiling",
            "",
            "options:",
            "  --jdbc-url URL          an existing database (user/password in the URL); default: embedded PostgreSQL",
            "  --fsync on|off          embedded server only: fsync (default: as io.zonky starts it, off; synchronous_commit",
            "                          and full_page_writes are always on)",
            "  --jobs N                jobs for e2e and for each ceiling run (default 200000; --quick 20000)",
            "  --nodes N               Baton nodes in this JVM for e2e (default 4)",
            "  --concurrency N         WorkerConfig concurrency of queue 'bench' per node (default 32)",
            "  --pool-size N           HikariCP maximumPoolSize per node (default 10)",
            "  --batch N               enqueueAll batch size (default 1000)",
            "  --ceiling-threads N     raw-SQL client threads (default: --nodes)",
            "  --ceiling-batches LIST  claim batch sizes for the ceiling, comma-separated (default 10,100);",
            "                          the batch Baton effectively claimed in e2e is always added",
            "  --latency-jobs N        sequential jobs measured for latency (default 1000; --quick 200)",
            "  --latency-gap-ms N      pause between one job's start and the next enqueue (default 10)",
            "  --latency-enqueue E     how each latency job is enqueued: own (default; Jobs.enqueue commits it), framework",
            "                          (in a transaction a framework keeps, as Spring's, the queue woken after its commit)",
            "                          or framework-inside (the same transaction, notified inside it: a binding that",
            "                          cannot register after-commit work, and Baton before decision 0039)",
            "  --idle-seconds N        idle-load window (default 30; --quick 10)",
            "  --time-limit-seconds N  cap of each throughput run; a capped run reports its partial rate (default 90)",
            "  --phases LIST           subset of latency,idle,e2e,ceiling (default: all, in that order)",
            "  --quick                 fast check: 20000 jobs, 200 latency jobs, 10 s idle window",
            "  --write-report [PATH]   also write the Markdown report (default docs/benchmarks/jobs.md); text",
            "                          outside its <!-- bench:begin/end --> markers is kept",
            "  --keep-schemas          do not drop the bench_* schemas afterwards",
            "  --limit SPEC            e2e with a cluster-wide job limit (docs/job-limits.md): queue:N (at most N",
            "                          running in queue 'bench') or key:NAME:N (at most N running per value of",
            "                          metadata entry NAME; jobs get NAME = one of --keys values)",
            "  --keys N                distinct metadata values for --limit key:... (default 1000)",
            "  --rate N/Ws             e2e with a rate limit on queue 'bench': N starts per W seconds (e.g. 5000/1s)",
            "  -h, --help              this help");

    static final List<String> LATENCY_ENQUEUES = List.of("own", "framework", "framework-inside");

    String jdbcUrl;
    String fsync;
    int jobs = 200_000;
    int nodes = 4;
    int concurrency = 32;
    int poolSize = 10;
    int batch = 1000;
    Integer ceilingThreads;
    List<Integer> ceilingBatches = new ArrayList<>(List.of(10, 100));
    int latencyJobs = 1000;
    int latencyWarmup = 50;
    int latencyGapMs = 10;
    /** How each latency job is enqueued: one of {@link #LATENCY_ENQUEUES}. */
    String latencyEnqueue = "own";

    int idleSeconds = 30;
    int timeLimitSeconds = 90;
    Set<String> phases = new LinkedHashSet<>(List.of("latency", "idle", "e2e", "ceiling"));
    boolean quick;
    boolean writeReport;
    Path reportFile = Path.of("docs", "benchmarks", "jobs.md");
    boolean keepSchemas;
    /** A cluster-wide limit for e2e (see --limit), or null. */
    dev.baton.JobLimit limit;
    /** The metadata entry --limit key:NAME:N limits, or null. */
    String limitKey;

    int keys = 1000;
    /** A rate limit for e2e (see --rate), or null. */
    dev.baton.JobLimit rate;

    final List<String> commandLine = new ArrayList<>();

    int ceilingThreads() {
        return ceilingThreads != null ? ceilingThreads : nodes;
    }

    static Options parse(String[] args) {
        Options o = new Options();
        Integer jobs = null;
        Integer latencyJobs = null;
        Integer idle = null;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            o.commandLine.add(a);
            switch (a) {
                case "--jdbc-url" -> o.jdbcUrl = value(args, ++i, a, o);
                case "--fsync" -> {
                    o.fsync = value(args, ++i, a, o);
                    if (!o.fsync.equals("on") && !o.fsync.equals("off")) {
                        throw new IllegalArgumentException("--fsync must be on or off");
                    }
                }
                case "--jobs" -> jobs = positive(args, ++i, a, o);
                case "--nodes" -> o.nodes = positive(args, ++i, a, o);
                case "--concurrency" -> o.concurrency = positive(args, ++i, a, o);
                case "--pool-size" -> o.poolSize = positive(args, ++i, a, o);
                case "--batch" -> o.batch = positive(args, ++i, a, o);
                case "--ceiling-threads" -> o.ceilingThreads = positive(args, ++i, a, o);
                case "--ceiling-batches" -> {
                    o.ceilingBatches.clear();
                    for (String s : value(args, ++i, a, o).split(",")) {
                        o.ceilingBatches.add(parsePositive(s.strip(), a));
                    }
                }
                case "--latency-jobs" -> latencyJobs = positive(args, ++i, a, o);
                case "--latency-gap-ms" -> o.latencyGapMs = parseNonNegative(value(args, ++i, a, o), a);
                case "--latency-enqueue" -> {
                    o.latencyEnqueue = value(args, ++i, a, o);
                    if (!LATENCY_ENQUEUES.contains(o.latencyEnqueue)) {
                        throw new IllegalArgumentException("--latency-enqueue must be one of " + LATENCY_ENQUEUES
                                + ", but was '" + o.latencyEnqueue + "'");
                    }
                }
                case "--idle-seconds" -> idle = positive(args, ++i, a, o);
                case "--time-limit-seconds" -> o.timeLimitSeconds = positive(args, ++i, a, o);
                case "--phases" -> {
                    o.phases.clear();
                    for (String s : value(args, ++i, a, o).split(",")) {
                        String p = s.strip();
                        if (!List.of("latency", "idle", "e2e", "ceiling").contains(p)) {
                            throw new IllegalArgumentException(
                                    "unknown phase '" + p + "' (latency, idle, e2e, ceiling)");
                        }
                        o.phases.add(p);
                    }
                }
                case "--quick" -> o.quick = true;
                case "--write-report" -> {
                    o.writeReport = true;
                    if (i + 1 < args.length && !args[i + 1].startsWith("--")) {
                        o.reportFile = Path.of(value(args, ++i, a, o));
                    }
                }
                case "--keep-schemas" -> o.keepSchemas = true;
                case "--limit" -> {
                    String[] p = value(args, ++i, a, o).split(":");
                    if (p.length == 2 && p[0].equals("queue")) {
                        o.limit = dev.baton.JobLimit.perQueue(JobsBenchmark.QUEUE, parsePositive(p[1], a));
                    } else if (p.length == 3 && p[0].equals("key")) {
                        o.limitKey = p[1];
                        o.limit = dev.baton.JobLimit.perMetadata(p[1], parsePositive(p[2], a))
                                .inQueue(JobsBenchmark.QUEUE);
                    } else {
                        throw new IllegalArgumentException(
                                "--limit must be queue:N or key:NAME:N, but was '" + args[i] + "'");
                    }
                }
                case "--keys" -> o.keys = positive(args, ++i, a, o);
                case "--rate" -> {
                    String v = value(args, ++i, a, o);
                    java.util.regex.Matcher m =
                            java.util.regex.Pattern.compile("(\\d+)/(\\d+)s").matcher(v);
                    if (!m.matches()) {
                        throw new IllegalArgumentException("--rate must be N/Ws (e.g. 5000/1s), but was '" + v + "'");
                    }
                    o.rate = dev.baton.JobLimit.ratePerQueue(
                            JobsBenchmark.QUEUE,
                            parsePositive(m.group(1), a),
                            java.time.Duration.ofSeconds(parsePositive(m.group(2), a)));
                }
                default -> throw new IllegalArgumentException("unknown option '" + a + "'");
            }
        }
        o.jobs = jobs != null ? jobs : o.quick ? 20_000 : o.jobs;
        o.latencyJobs = latencyJobs != null ? latencyJobs : o.quick ? 200 : o.latencyJobs;
        o.latencyWarmup = Math.min(o.latencyWarmup, Math.max(10, o.latencyJobs / 10));
        o.idleSeconds = idle != null ? idle : o.quick ? 10 : o.idleSeconds;
        if (o.batch > 10_000) {
            throw new IllegalArgumentException("--batch must be at most 10000 (Jobs.MAX_BATCH)");
        }
        return o;
    }

    private static String value(String[] args, int i, String option, Options o) {
        if (i >= args.length) {
            throw new IllegalArgumentException(option + " needs a value");
        }
        o.commandLine.add(args[i]);
        return args[i];
    }

    private static int positive(String[] args, int i, String option, Options o) {
        return parsePositive(value(args, i, option, o), option);
    }

    private static int parsePositive(String s, String option) {
        int v = parseNonNegative(s, option);
        if (v < 1) {
            throw new IllegalArgumentException(option + " must be positive, but was " + s);
        }
        return v;
    }

    private static int parseNonNegative(String s, String option) {
        try {
            int v = Integer.parseInt(s.replace("_", ""));
            if (v < 0) {
                throw new NumberFormatException();
            }
            return v;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(option + " needs a non-negative integer, but was '" + s + "'");
        }
    }
}
