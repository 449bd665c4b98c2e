package dev.baton.bench;

import java.time.Instant;
import java.util.Arrays;

/**
 * {@code java -jar baton-bench.jar jobs [options]}: Baton's job throughput, idle latency and idle load,
 * against a raw-SQL ceiling on the same database. See {@link Options#USAGE} and docs/benchmarks/jobs.md.
 */
public final class Main {
    private Main() {}

    public static void main(String[] args) {
        // Quiet libraries unless the caller chose a level: warnings and errors still show.
        setIfAbsent("org.slf4j.simpleLogger.defaultLogLevel", "warn");
        setIfAbsent("org.slf4j.simpleLogger.showDateTime", "true");
        setIfAbsent("org.slf4j.simpleLogger.dateTimeFormat", "HH:mm:ss.SSS");
        LogWatch.install();
        System.exit(run(args));
    }

    static int run(String[] args) {
        if (args.length > 0 && args[0].equals("compare")) {
            return Compare.main(Arrays.copyOfRange(args, 1, args.length));
        }
        if (args.length > 0 && args[0].equals("admin")) {
            return AdminBench.main(Arrays.copyOfRange(args, 1, args.length));
        }
        if (args.length > 0 && args[0].equals("console")) {
            return ConsoleBench.main(Arrays.copyOfRange(args, 1, args.length));
        }
        if (args.length > 0 && args[0].equals("enqueue")) {
            return EnqueueBench.main(Arrays.copyOfRange(args, 1, args.length));
        }
        if (args.length > 0 && args[0].equals("prune")) {
            return PruneBench.main(Arrays.copyOfRange(args, 1, args.length));
        }
        if (args.length > 0 && args[0].equals("middleware")) {
            return MiddlewareBench.main(Arrays.copyOfRange(args, 1, args.length));
        }
        if (args.length == 0
                || Arrays.asList(args).contains("-h")
                || Arrays.asList(args).contains("--help")) {
            System.out.println(Options.USAGE);
            return args.length == 0 ? 2 : 0;
        }
        if (!args[0].equals("jobs")) {
            System.err.println("unknown benchmark '" + args[0]
                    + "' (jobs, compare, enqueue, prune, middleware, admin or console)\n\n" + Options.USAGE);
            return 2;
        }
        Options o;
        try {
            o = Options.parse(Arrays.copyOfRange(args, 1, args.length));
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage() + "\n\n" + Options.USAGE);
            return 2;
        }
        Results r = new Results();
        r.startedAt = Instant.now();
        r.command = "java -jar baton-bench/target/baton-bench.jar jobs"
                + (o.commandLine.isEmpty() ? "" : " " + String.join(" ", redact(o.commandLine)));
        long t0 = System.nanoTime();
        try (Database db = Database.open(o.jdbcUrl, o.fsync)) {
            r.embedded = db.embedded();
            r.serverVersion = db.serverVersion();
            r.settings = db.serverSettings();
            r.machine = Machine.facts();
            System.out.println("Baton jobs benchmark");
            r.machine.forEach((k, v) -> System.out.printf("  %-32s %s%n", k, v));
            System.out.printf("  %-32s %s%n", "PostgreSQL", r.serverVersion);
            System.out.printf("  %-32s %s%n", "database", db.embedded() ? "embedded, " + db.url() : "--jdbc-url");
            System.out.println("  settings: " + r.settings);
            new JobsBenchmark(o, db, r).run();
        } catch (Exception e) {
            System.err.println("benchmark failed: " + e);
            e.printStackTrace();
            return 1;
        }
        r.totalSeconds = (System.nanoTime() - t0) / 1e9;
        String md = Report.markdown(r);
        System.out.println();
        System.out.println(md);
        if (o.writeReport) {
            try {
                Report.write(o.reportFile, md);
                System.out.println("report written to " + o.reportFile.toAbsolutePath());
            } catch (Exception e) {
                System.err.println("writing the report failed: " + e);
                return 1;
            }
        }
        return 0;
    }

    private static java.util.List<String> redact(java.util.List<String> args) {
        java.util.List<String> out = new java.util.ArrayList<>(args);
        for (int i = 0; i + 1 < out.size(); i++) {
            if (out.get(i).equals("--jdbc-url")) {
                out.set(i + 1, out.get(i + 1).replaceAll("(?i)password=[^&]*", "password=***"));
            }
        }
        return out;
    }

    private static void setIfAbsent(String key, String value) {
        if (System.getProperty(key) == null) {
            System.setProperty(key, value);
        }
    }
}
