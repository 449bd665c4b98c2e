package dev.baton.bench;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Facts about the machine and a CPU-time sampler (whole machine from /proc/stat, this JVM from the MXBean). */
final class Machine {
    private Machine() {}

    static Map<String, String> facts() {
        Map<String, String> out = new LinkedHashMap<>();
        out.put(
                "cores (JVM availableProcessors)",
                Integer.toString(Runtime.getRuntime().availableProcessors()));
        out.put("CPU", cpuModel());
        out.put("memory", memory());
        out.put(
                "OS",
                System.getProperty("os.name") + " " + System.getProperty("os.version") + " "
                        + System.getProperty("os.arch"));
        out.put(
                "JVM",
                System.getProperty("java.vm.name") + " " + System.getProperty("java.runtime.version")
                        + " (" + System.getProperty("java.vm.vendor") + "), max heap "
                        + Runtime.getRuntime().maxMemory() / (1024 * 1024) + " MiB");
        out.put("PostgreSQL JDBC", org.postgresql.util.DriverInfo.DRIVER_VERSION);
        out.put("HikariCP", version("com.zaxxer", "HikariCP"));
        out.put(
                "Baton",
                version("dev.baton", "baton-core") + ", schema version " + dev.baton.Baton.schemaVersion()
                        + "; build fingerprint " + fingerprint());
        return out;
    }

    /**
     * SHA-256 (first 12 hex digits) of the baton-core files that decide the figures (job.sql and the compiled
     * job services, store, statement binder and notifier), so that a result can be tied to a code state of a
     * SNAPSHOT build. A file that is not there (moved or renamed) is named in the answer instead of skipped.
     */
    static String fingerprint() {
        try {
            java.security.MessageDigest md = java.security.MessageDigest.getInstance("SHA-256");
            for (String r : List.of(
                    "dev/baton/sql/job.sql",
                    "dev/baton/internal/job/Worker.class",
                    "dev/baton/internal/job/JobProducer.class",
                    "dev/baton/internal/job/JobExecutor.class",
                    "dev/baton/internal/job/JobCompleter.class",
                    "dev/baton/internal/job/JobHeartbeater.class",
                    "dev/baton/internal/job/JobStore.class",
                    "dev/baton/internal/db/SqlCall.class",
                    "dev/baton/internal/notify/Notifier.class")) {
                try (java.io.InputStream in = Machine.class.getClassLoader().getResourceAsStream(r)) {
                    if (in == null) {
                        return "(incomplete: " + r + " not found)";
                    }
                    md.update(in.readAllBytes());
                }
            }
            return java.util.HexFormat.of().formatHex(md.digest()).substring(0, 12);
        } catch (IOException | java.security.NoSuchAlgorithmException e) {
            return "(unknown)";
        }
    }

    /** The 1/5/15-minute load averages from /proc/loadavg (other processes on the machine show here). */
    static String loadAverage() {
        try {
            String[] f = Files.readString(Path.of("/proc/loadavg")).strip().split(" ");
            return f[0] + ", " + f[1] + ", " + f[2];
        } catch (IOException | RuntimeException e) {
            return "(unknown)";
        }
    }

    static String artifactVersion(String group, String artifact) {
        return version(group, artifact);
    }

    /** Versions of the compared systems, written into versions.properties by the build. */
    static String comparedVersion(String key) {
        try (java.io.InputStream in = Machine.class.getResourceAsStream("versions.properties")) {
            java.util.Properties p = new java.util.Properties();
            if (in != null) {
                p.load(in);
            }
            return p.getProperty(key, "(unknown)");
        } catch (IOException e) {
            return "(unknown)";
        }
    }

    /** From the artifact's pom.properties, which the shaded jar keeps (its manifest is the bench's own). */
    private static String version(String group, String artifact) {
        String path = "META-INF/maven/" + group + "/" + artifact + "/pom.properties";
        try (java.io.InputStream in = Machine.class.getClassLoader().getResourceAsStream(path)) {
            if (in != null) {
                java.util.Properties p = new java.util.Properties();
                p.load(in);
                return p.getProperty("version", "(unknown)");
            }
        } catch (IOException e) {
            // fall through
        }
        return "(unknown)";
    }

    private static String cpuModel() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"))) {
                if (line.startsWith("model name")) {
                    return line.substring(line.indexOf(':') + 1).strip();
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux
        }
        return System.getProperty("os.arch");
    }

    private static String memory() {
        if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
            return String.format("%.1f GiB", os.getTotalMemorySize() / (1024.0 * 1024 * 1024));
        }
        return "(unknown)";
    }

    /** CPU time of every live thread of this JVM, by thread id, with its name. */
    record Threads(Map<Long, String> names, Map<Long, Long> cpuNanos, long wallNanos) {
        static Threads sample() {
            java.lang.management.ThreadMXBean mx = ManagementFactory.getThreadMXBean();
            Map<Long, String> names = new java.util.HashMap<>();
            Map<Long, Long> cpu = new java.util.HashMap<>();
            for (java.lang.management.ThreadInfo t : mx.getThreadInfo(mx.getAllThreadIds())) {
                if (t == null) {
                    continue;
                }
                long c = mx.getThreadCpuTime(t.getThreadId());
                if (c >= 0) {
                    names.put(t.getThreadId(), t.getThreadName());
                    cpu.put(t.getThreadId(), c);
                }
            }
            return new Threads(names, cpu, System.nanoTime());
        }

        /**
         * Cores used since {@code before} by group of threads (digits in names folded to N), most first;
         * threads that ended in between are not seen. JIT and GC threads are not Java threads: they are
         * in the JVM's total but not here.
         */
        java.util.List<Map.Entry<String, Double>> since(Threads before) {
            double wall = (wallNanos - before.wallNanos) / 1e9;
            Map<String, Double> groups = new java.util.TreeMap<>();
            cpuNanos.forEach((id, c) -> {
                long d = c - before.cpuNanos.getOrDefault(id, 0L);
                if (d > 0) {
                    groups.merge(names.get(id).replaceAll("\\d+", "N"), d / 1e9 / wall, Double::sum);
                }
            });
            java.util.List<Map.Entry<String, Double>> out = new java.util.ArrayList<>(groups.entrySet());
            out.sort(Map.Entry.<String, Double>comparingByValue().reversed());
            return out;
        }
    }

    /** Voluntary + involuntary context switches of all this JVM's live threads so far; -1 if unknown. */
    static long contextSwitches() {
        long total = 0;
        try (var tasks = Files.list(Path.of("/proc/self/task"))) {
            for (Path t : (Iterable<Path>) tasks::iterator) {
                try {
                    for (String line : Files.readAllLines(t.resolve("status"))) {
                        if (line.startsWith("voluntary_ctxt_switches:")
                                || line.startsWith("nonvoluntary_ctxt_switches:")) {
                            total += Long.parseLong(
                                    line.substring(line.indexOf(':') + 1).strip());
                        }
                    }
                } catch (IOException | RuntimeException e) {
                    // thread ended
                }
            }
        } catch (IOException | RuntimeException e) {
            return -1;
        }
        return total;
    }

    /**
     * The postmaster of the server {@code c} is connected to, if that server runs on this machine: the parent of
     * the connection's backend when that is a local postgres process; -1 otherwise. Looked at while the connection
     * is open (its backend exits when it closes: looked at after the close, the process was already gone in two
     * runs of five on 2026-12-07).
     */
    static long localPostmaster(Connection c) throws SQLException {
        long backend;
        try (Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT pg_backend_pid()")) {
            rs.next();
            backend = rs.getLong(1);
        }
        try {
            Path comm = Path.of("/proc", Long.toString(backend), "comm");
            if (!Files.exists(comm) || !Files.readString(comm).startsWith("postgres")) {
                return -1;
            }
            return parent(backend);
        } catch (IOException | RuntimeException e) {
            return -1; // not Linux, or not ours to read
        }
    }

    static long parent(long pid) throws IOException {
        String s = Files.readString(Path.of("/proc", Long.toString(pid), "stat"));
        // pid (comm) state ppid ...; comm may hold spaces and parentheses, so read after the last ')'
        String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
        return Long.parseLong(f[1]);
    }

    /** The embedded server's postmaster: the process running {@code postgres} with {@code -p port}; -1 if none. */
    static long postmasterPid(int port) {
        try (var dirs = Files.list(Path.of("/proc"))) {
            for (Path d : (Iterable<Path>) dirs::iterator) {
                String name = d.getFileName().toString();
                if (!name.chars().allMatch(Character::isDigit)) {
                    continue;
                }
                try {
                    String[] args = new String(
                                    Files.readAllBytes(d.resolve("cmdline")), java.nio.charset.StandardCharsets.UTF_8)
                            .split("\0");
                    if (args.length > 0 && args[0].endsWith("/postgres")) {
                        for (int i = 0; i + 1 < args.length; i++) {
                            if (args[i].equals("-p") && args[i + 1].equals(Integer.toString(port))) {
                                return Long.parseLong(name);
                            }
                        }
                    }
                } catch (IOException | RuntimeException e) {
                    // gone, or not ours
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux
        }
        return -1;
    }

    /**
     * Clock ticks of the local server: the postmaster (with its reaped children) and its live children;
     * -1 if unknown.
     */
    private static long postgresTicks(long postmaster) {
        if (postmaster < 0) {
            return -1;
        }
        long total = 0;
        try (var dirs = Files.list(Path.of("/proc"))) {
            for (Path d : (Iterable<Path>) dirs::iterator) {
                String name = d.getFileName().toString();
                if (!name.chars().allMatch(Character::isDigit)) {
                    continue;
                }
                try {
                    String stat = Files.readString(d.resolve("stat"));
                    String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                    long pid = Long.parseLong(name);
                    long ppid = Long.parseLong(f[1]);
                    long utime = Long.parseLong(f[11]);
                    long stime = Long.parseLong(f[12]);
                    if (pid == postmaster) {
                        total += utime + stime + Long.parseLong(f[13]) + Long.parseLong(f[14]);
                    } else if (ppid == postmaster) {
                        total += utime + stime;
                    }
                } catch (IOException | RuntimeException e) {
                    // gone
                }
            }
        } catch (IOException | RuntimeException e) {
            return -1;
        }
        return total;
    }

    /** CPU use between two samples, in cores: the machine, this JVM, PostgreSQL if it runs here, and the rest. */
    record Cpu(long wallNanos, long machineBusyTicks, long machineTotalTicks, long jvmNanos, long pgTicks) {
        /** The postmaster of the server measured, if it runs on this machine; set once. */
        static volatile long postmaster = -1;

        static Cpu sample() {
            long busy = -1;
            long total = -1;
            try {
                List<String> lines = Files.readAllLines(Path.of("/proc/stat"));
                String[] f = lines.get(0).trim().split("\\s+"); // cpu user nice system idle iowait irq softirq steal
                long t = 0;
                for (int i = 1; i < Math.min(f.length, 9); i++) {
                    t += Long.parseLong(f[i]);
                }
                total = t;
                busy = t - Long.parseLong(f[4]) - Long.parseLong(f[5]);
            } catch (IOException | RuntimeException e) {
                // not Linux
            }
            long jvm = -1;
            if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
                jvm = os.getProcessCpuTime();
            }
            return new Cpu(System.nanoTime(), busy, total, jvm, postgresTicks(postmaster));
        }

        /** Cores used by other processes (neither this JVM nor the embedded server) since {@code before}; NaN if unknown. */
        double otherCores(Cpu before) {
            double[] c = cores(before);
            return c == null || Double.isNaN(c[2]) ? Double.NaN : Math.max(0, c[0] - c[1] - c[2]);
        }

        /** {machine busy, JVM, PostgreSQL} in cores (NaN where unknown), or null. Ticks are USER_HZ = 100 per second. */
        double[] cores(Cpu before) {
            int cores = Runtime.getRuntime().availableProcessors();
            double wall = (wallNanos - before.wallNanos) / 1e9;
            if (wall <= 0 || machineTotalTicks < 0 || before.machineTotalTicks < 0) {
                return null;
            }
            double busyShare = (double) (machineBusyTicks - before.machineBusyTicks)
                    / Math.max(1, machineTotalTicks - before.machineTotalTicks);
            double jvm = jvmNanos < 0 ? Double.NaN : (jvmNanos - before.jvmNanos) / 1e9 / wall;
            double pg = pgTicks < 0 || before.pgTicks < 0 ? Double.NaN : (pgTicks - before.pgTicks) / 100.0 / wall;
            return new double[] {busyShare * cores, jvm, pg};
        }

        /** E.g. "1.98 of 2 cores busy: this JVM 0.30, PostgreSQL 1.60, other processes 0.08" since {@code before}. */
        String since(Cpu before) {
            double[] c = cores(before);
            if (c == null) {
                return "n/a";
            }
            int n = Runtime.getRuntime().availableProcessors();
            if (Double.isNaN(c[2])) {
                return String.format(
                        java.util.Locale.ROOT,
                        "%.2f of %d cores busy: this JVM %.2f, all other processes " + "(PostgreSQL among them) %.2f",
                        c[0],
                        n,
                        c[1],
                        Math.max(0, c[0] - c[1]));
            }
            return String.format(
                    java.util.Locale.ROOT,
                    "%.2f of %d cores busy: this JVM %.2f, PostgreSQL %.2f, other " + "processes %.2f",
                    c[0],
                    n,
                    c[1],
                    c[2],
                    Math.max(0, c[0] - c[1] - c[2]));
        }
    }
}
