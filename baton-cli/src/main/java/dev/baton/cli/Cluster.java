package dev.baton.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.baton.Baton;
import dev.baton.MigrationResult;
import dev.baton.testkit.FaultProxy;
import dev.baton.testkit.JdbcUrls;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Predicate;
import java.util.stream.Collectors;
import javax.sql.DataSource;

/**
 * The cluster that {@code baton demo} and {@code baton chaos} script. It owns the database (an embedded server,
 * or the given URL) with the run's pool and its prepared schema, the node processes ({@link NodeFleet}), each
 * behind a {@link FaultProxy} when asked, their readiness, restarts and (when asked) supervision, backend
 * termination, the nodes' stdout lines as typed {@link Event}s, and the run's timestamped output. {@link #close()}
 * ends all of it; it is idempotent and also runs from a JVM shutdown hook.
 */
final class Cluster implements AutoCloseable {
    static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(90);
    /** How long the supervisor waits before it restarts a node that exited on its own (systemd's is 100 ms). */
    private static final Duration SUPERVISOR_DELAY = Duration.ofSeconds(1);

    /**
     * A line a node printed (STATS lines are not kept) or, with type {@code EXITED} and the exit code as detail,
     * the end of a process. {@code generation} is -1 where the line has none.
     */
    record Event(long nanos, String node, long pid, String type, long generation, String detail, String line) {
        boolean is(String t) {
            return type.equals(t);
        }
    }

    /** What every node runs: the verification workload in {@code schema}, with these lease timings. */
    record NodeSettings(String schema, Duration ttl, Duration renew, boolean staleWriteProbe) {}

    /** What the workload has recorded so far, read from its tables. */
    record Progress(long ledgerRows, long enqueued, long effects, long ticks, String leader, long generation) {}

    private final String name;
    private final PrintWriter out;
    private final String stamp;
    private final long t0 = System.nanoTime();
    private final Thread hook;
    private volatile Runnable onInterrupt = () -> {};
    private volatile Consumer<Event> onEvent = e -> {};

    private final List<Event> events = new ArrayList<>(); // guarded by itself
    private final Map<String, FaultProxy> proxies = new ConcurrentHashMap<>();
    // Supervision (off unless asked): a process that ends without this run stopping it is restarted, as systemd
    // or Kubernetes would. A node exits on its own only when it cannot start (the database is out of reach, e.g.
    // in a black hole): that is reported. An exit after READY is a crash.
    private volatile Consumer<String> restartErrors; // null: not supervised
    private final Set<Long> stoppedByRun = ConcurrentHashMap.newKeySet();
    private final List<String> supervisorRestarts = new CopyOnWriteArrayList<>();
    private final List<String> crashes = new CopyOnWriteArrayList<>();
    private final ScheduledExecutorService supervisor;
    private volatile boolean finishing;
    private volatile String statusLine; // redrawn below the output on a terminal, or null
    private boolean closed; // guarded by this

    private EmbeddedServer server;
    private String url;
    private HikariDataSource ds;
    private String schema;
    private Path logs;
    private NodeFleet fleet;

    /**
     * @param name the run's name: its pool, temp directories and threads are called {@code baton-<name>...}
     * @param stamp the format of {@link #say}'s time stamp, seconds since the start, e.g. {@code "[%6.1fs] "}
     */
    Cluster(String name, PrintWriter out, String stamp) {
        this.name = name;
        this.out = out;
        this.stamp = stamp;
        this.supervisor = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "baton-" + name + "-supervisor");
            t.setDaemon(true);
            return t;
        });
        this.hook = new Thread(this::interrupted, "baton-" + name + "-cleanup");
        Runtime.getRuntime().addShutdownHook(hook);
    }

    /** Runs first when the JVM shuts down before {@link #close()}, e.g. on Ctrl-C. */
    void onInterrupt(Runnable action) {
        this.onInterrupt = action;
    }

    /** Receives every recorded event, on the thread that saw it; set it before the nodes start. */
    void onEvent(Consumer<Event> listener) {
        this.onEvent = listener;
    }

    /**
     * Turns supervision on: a node process that exits without this run stopping it is restarted after a second and
     * listed in {@link #supervisorRestarts()} (during start-up) or {@link #crashes()} (after READY). A restart that
     * fails is passed to {@code restartErrors}.
     */
    void supervise(Consumer<String> restartErrors) {
        this.restartErrors = restartErrors;
    }

    // ------------------------------------------------------------------------------------------ database

    /**
     * Checks the options every scripted run shares (2 to 9 nodes, a duration from {@code min} to {@code max},
     * written as the command line takes them, e.g. "20s"; a plain schema name; a PostgreSQL JDBC URL if one
     * is given); returns the URL as the run uses it.
     *
     * @throws CliException a usage error that names the option, the rule and the value
     */
    static String checkOptions(int nodes, Duration duration, String min, String max, String schema, String jdbcUrl) {
        if (nodes < 2 || nodes > 9) {
            throw CliException.usage("--nodes must be 2 to 9, but was " + nodes);
        }
        if (duration.compareTo(Durations.parse(min)) < 0 || duration.compareTo(Durations.parse(max)) > 0) {
            throw CliException.usage(
                    "--duration must be " + min + " to " + max + ", but was " + Durations.human(duration));
        }
        if (schema == null || !schema.matches("[a-z_][a-z0-9_]{0,62}")) {
            throw CliException.usage(
                    "--schema must be lower-case letters, digits and underscores, but was '" + schema + "'");
        }
        return jdbcUrl == null ? null : Db.requireUrl(jdbcUrl, "--jdbc-url");
    }

    /** Starts an embedded PostgreSQL unless {@code jdbcUrl} is given, and opens the run's pool on it. */
    void startDatabase(String jdbcUrl) {
        if (jdbcUrl == null) {
            say("starting an embedded PostgreSQL (the first run unpacks it, which takes a few seconds)");
            server = EmbeddedServer.start();
            url = server.jdbcUrl();
        } else {
            url = jdbcUrl;
        }
        ds = Db.pool(url, "baton-" + name, 3);
    }

    /**
     * Migrates Baton's tables into {@code schema} and installs the verification workload's. With {@code fresh}
     * the schema must be new or empty, unless {@code reset} drops it first.
     */
    MigrationResult prepareSchema(String schema, boolean fresh, boolean reset) throws SQLException {
        this.schema = schema;
        if (fresh) {
            try (Connection c = ds.getConnection();
                    Statement s = c.createStatement()) {
                boolean exists;
                try (ResultSet rs =
                        s.executeQuery("SELECT count(*) FROM pg_namespace WHERE nspname = '" + schema + "'")) {
                    rs.next();
                    exists = rs.getLong(1) > 0;
                }
                if (exists && reset) {
                    s.execute("DROP SCHEMA \"" + schema + "\" CASCADE");
                    say("dropped schema '" + schema + "' (--reset)");
                } else if (exists) {
                    try (ResultSet rs =
                            s.executeQuery("SELECT count(*) FROM pg_tables WHERE schemaname = '" + schema + "'")) {
                        rs.next();
                        if (rs.getLong(1) > 0) {
                            throw CliException.usage("schema '" + schema + "' already has tables; a " + name
                                    + " run starts from an empty schema: pass --reset to drop it, or choose another "
                                    + "--schema");
                        }
                    }
                }
            }
        }
        MigrationResult m = Baton.migrate(ds, schema);
        VerifyWorkload.install(ds, schema);
        return m;
    }

    String serverVersion() throws SQLException {
        try (Connection c = ds.getConnection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SHOW server_version")) {
            rs.next();
            return rs.getString(1);
        }
    }

    DataSource dataSource() {
        return ds;
    }

    String url() {
        return url;
    }

    boolean embedded() {
        return server != null;
    }

    /** Fast shutdown of the embedded server (sessions are cut), then a start on the same port after {@code downtime}. */
    void restartDatabase(Duration downtime) throws IOException, InterruptedException {
        if (server == null) {
            throw new IllegalStateException("only the embedded PostgreSQL can be restarted");
        }
        server.restart(downtime);
    }

    /** The workload's counts and the lease's holder, read from the tables. */
    Progress progress() throws SQLException {
        String q = "\"" + schema + "\".";
        try (Connection c = ds.getConnection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT"
                        + " (SELECT count(*) FROM " + q + "verify_ledger),"
                        + " (SELECT count(*) FROM " + q + "verify_enqueued),"
                        + " (SELECT count(*) FROM " + q + "verify_effect),"
                        + " (SELECT count(*) FROM " + q + "verify_tick),"
                        + " (SELECT owner_id FROM " + q + "lease WHERE name = '" + VerifyWorkload.LEASE + "'),"
                        + " (SELECT generation FROM " + q + "lease WHERE name = '" + VerifyWorkload.LEASE + "')")) {
            rs.next();
            return new Progress(
                    rs.getLong(1), rs.getLong(2), rs.getLong(3), rs.getLong(4), rs.getString(5), rs.getLong(6));
        }
    }

    /** Terminates every backend of the node's two pools (by application name); returns how many. */
    int terminateBackends(String nodeId) throws SQLException {
        try (Connection c = ds.getConnection();
                PreparedStatement ps = c.prepareStatement("SELECT count(*) FILTER "
                        + "(WHERE pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name IN (?, ?) "
                        + "AND pid <> pg_backend_pid()")) {
            ps.setString(1, nodeId + "-app");
            ps.setString(2, nodeId + "-coordination");
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getInt(1);
            }
        }
    }

    /**
     * Terminates one of the node's sessions (by application name), or any other client session if none is found;
     * false when no client session is open at all.
     */
    boolean terminateOneSession(String nodeId) throws SQLException {
        try (Connection c = ds.getConnection();
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT pg_terminate_backend(pid) FROM ("
                        + " SELECT pid FROM pg_stat_activity"
                        + " WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'"
                        + " ORDER BY (application_name LIKE '%" + nodeId + "%') DESC, random() LIMIT 1) x")) {
            return rs.next();
        }
    }

    // ------------------------------------------------------------------------------------------ nodes

    /**
     * Starts {@code count} node processes ({@code node-1}...), each behind a fault proxy of its own if
     * {@code proxied}, and waits until every one is ready.
     *
     * @param logDir where the nodes' logs go; null: a new temp directory
     */
    void startNodes(int count, NodeSettings settings, Path logDir, boolean proxied) throws IOException {
        logs = logDir != null ? Files.createDirectories(logDir) : Files.createTempDirectory("baton-" + name + "-");
        say("node logs: " + logs);
        fleet = new NodeFleet(logs, n -> nodeArgs(n, settings), new NodeFleet.Listener() {
            @Override
            public void line(NodeFleet.Node node, long pid, String line) {
                onLine(node.id, pid, line);
            }

            @Override
            public void exited(NodeFleet.Node node, long pid, int exitCode) {
                onExit(node, pid, exitCode);
            }
        });
        JdbcUrls.HostPort target = proxied ? JdbcUrls.hostPort(url) : null;
        for (int i = 1; i <= count; i++) {
            String id = "node-" + i;
            String nodeUrl = url;
            if (proxied) {
                FaultProxy proxy = FaultProxy.start(target.host(), target.port());
                proxies.put(id, proxy);
                nodeUrl = JdbcUrls.via(url, "127.0.0.1", proxy.port());
            }
            try {
                fleet.add(id, nodeUrl);
            } catch (IOException e) {
                throw new CliException(
                        Main.EXIT_USAGE, "could not start node process " + id + ": " + e.getMessage(), e);
            }
        }
        awaitAllReady();
    }

    private static List<String> nodeArgs(NodeFleet.Node n, NodeSettings s) {
        List<String> args = new ArrayList<>(List.of(
                "--schema",
                s.schema(),
                "--node-id",
                n.id,
                "--workload",
                "verify",
                "--ttl",
                s.ttl().toMillis() + "ms",
                "--renew",
                s.renew().toMillis() + "ms"));
        if (s.staleWriteProbe()) {
            args.add("--stale-write-probe");
        }
        args.add("--exit-on-stdin-eof");
        return args;
    }

    List<NodeFleet.Node> nodes() {
        return fleet.nodes();
    }

    NodeFleet.Node node(String id) {
        return fleet.node(id);
    }

    Path logs() {
        return logs;
    }

    /** The node's fault proxy (only when the nodes were started {@code proxied}). */
    FaultProxy proxy(String nodeId) {
        FaultProxy p = proxies.get(nodeId);
        if (p == null) {
            throw new IllegalArgumentException("no fault proxy for '" + nodeId + "'");
        }
        return p;
    }

    /** Every proxy back to passing traffic unchanged. */
    void healProxies() {
        proxies.values().forEach(FaultProxy::resetAll);
    }

    /** Waits until every node's current process is ready; a time-out (or, unsupervised, an exit) is a usage error. */
    void awaitAllReady() {
        long deadline = System.nanoTime() + STARTUP_TIMEOUT.toNanos();
        for (NodeFleet.Node n : fleet.nodes()) {
            String problem = awaitReady(n, deadline);
            if (problem != null) {
                throw new CliException(Main.EXIT_USAGE, problem);
            }
        }
    }

    /**
     * Waits for the READY line of the node's current process; returns why it did not come, or null. Supervised, an
     * exit during start-up does not end the wait: the supervisor's restart is waited for instead.
     */
    String awaitReady(NodeFleet.Node n, long deadlineNanos) {
        boolean supervised = restartErrors != null;
        Event e =
                awaitEvent(x -> x.pid == n.pid() && (x.is("READY") || (!supervised && x.is("EXITED"))), deadlineNanos);
        if (e != null && e.is("READY")) {
            return null;
        }
        Path log = fleet.log(n);
        String tail = "";
        try {
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            tail = lines.subList(Math.max(0, lines.size() - 5), lines.size()).stream()
                    .map(l -> "\n    " + l)
                    .collect(Collectors.joining());
        } catch (IOException | RuntimeException ex) {
            // no log to show
        }
        return n.id
                + (e == null
                        ? " did not start within " + Durations.human(STARTUP_TIMEOUT)
                        : " exited while starting (" + exitMeaning(Integer.parseInt(e.detail)) + ")")
                + "; see " + log + tail;
    }

    /** Starts a fresh process for the node unless one runs (two overlapping healings); true if it started one. */
    boolean startIfDown(NodeFleet.Node n) throws IOException {
        synchronized (n) {
            if (n.alive()) {
                return false;
            }
            fleet.start(n);
            return true;
        }
    }

    /** SIGSTOP. */
    void pause(NodeFleet.Node n) throws IOException {
        fleet.pause(n);
    }

    /** SIGCONT. */
    void resume(NodeFleet.Node n) throws IOException {
        fleet.resume(n);
    }

    /** SIGKILL, and waits until the process is gone. */
    void kill(NodeFleet.Node n) throws InterruptedException {
        stoppedByRun.add(n.pid());
        fleet.kill(n);
    }

    /** SIGTERM without waiting: the node drains and stops. */
    void terminate(NodeFleet.Node n) throws IOException {
        stoppedByRun.add(n.pid());
        fleet.terminate(n);
    }

    /** SIGTERM; waits up to {@code grace}, then SIGKILL. */
    void stop(NodeFleet.Node n, Duration grace) throws InterruptedException, IOException {
        stoppedByRun.add(n.pid());
        fleet.stop(n, grace);
    }

    /** The end of the run: SIGTERM to every node at once, each waited for up to {@code grace}; no more restarts. */
    void stopAll(Duration grace) throws InterruptedException, IOException {
        finishing = true;
        fleet.stopAll(grace);
    }

    /** Node starts that failed and were restarted by the supervisor. */
    List<String> supervisorRestarts() {
        return List.copyOf(supervisorRestarts);
    }

    /** Exits after READY that this run did not cause. */
    List<String> crashes() {
        return List.copyOf(crashes);
    }

    private void onLine(String node, long pid, String line) {
        String[] f = line.split(" ", 3);
        String type = f[0];
        if (type.equals("STATS")) {
            return;
        }
        long gen = -1;
        if (f.length > 1 && !type.equals("READY")) {
            try {
                gen = Long.parseLong(f[1]);
            } catch (NumberFormatException e) {
                gen = -1;
            }
        }
        String detail = f.length > 2 ? f[2] : type.equals("READY") && f.length > 1 ? f[1] : "";
        record(new Event(System.nanoTime(), node, pid, type, gen, detail, line));
    }

    private void onExit(NodeFleet.Node n, long pid, int code) {
        record(new Event(System.nanoTime(), n.id, pid, "EXITED", -1, Integer.toString(code), null));
        if (restartErrors == null || finishing || stoppedByRun.remove(pid)) {
            return;
        }
        String what = n.id + " (pid " + pid + ") exited on its own with code " + code;
        if (findEvent(e -> e.pid == pid && e.is("READY")) != null) {
            crashes.add(what + " after it was ready; see " + fleet.log(n));
            say("CRASH     " + what + " after it was ready; restarting it in " + Durations.human(SUPERVISOR_DELAY));
        } else {
            supervisorRestarts.add(what + " during start-up");
            say("supervisor: " + what + " during start-up (see its log); restarting it in "
                    + Durations.human(SUPERVISOR_DELAY));
        }
        supervisor.schedule(
                () -> {
                    try {
                        startIfDown(n);
                    } catch (IOException | IllegalStateException e) {
                        if (!finishing) {
                            restartErrors.accept("restarting " + n.id + " after it exited: " + Db.rootMessage(e));
                        }
                    }
                },
                SUPERVISOR_DELAY.toMillis(),
                TimeUnit.MILLISECONDS);
    }

    static String exitMeaning(int code) {
        return switch (code) {
            case 0 -> "exit 0";
            case 137 -> "killed by SIGKILL";
            case 143 -> "exit 143 after SIGTERM";
            default -> code > 128 ? "signal " + (code - 128) : "exit " + code;
        };
    }

    // ------------------------------------------------------------------------------------------ events

    private void record(Event e) {
        synchronized (events) {
            events.add(e);
            events.notifyAll();
        }
        onEvent.accept(e);
    }

    /** The first recorded event matching {@code p}, or null. */
    Event findEvent(Predicate<Event> p) {
        synchronized (events) {
            return events.stream().filter(p).findFirst().orElse(null);
        }
    }

    long countEvents(Predicate<Event> p) {
        synchronized (events) {
            return events.stream().filter(p).count();
        }
    }

    /** Waits until an event matching {@code p} has been recorded, or {@code deadlineNanos}; null on time-out. */
    Event awaitEvent(Predicate<Event> p, long deadlineNanos) {
        synchronized (events) {
            while (true) {
                Event e = events.stream().filter(p).findFirst().orElse(null);
                if (e != null) {
                    return e;
                }
                long left = deadlineNanos - System.nanoTime();
                if (left <= 0) {
                    return null;
                }
                try {
                    TimeUnit.NANOSECONDS.timedWait(events, left);
                } catch (InterruptedException ex) {
                    Thread.currentThread().interrupt();
                    return null;
                }
            }
        }
    }

    // ------------------------------------------------------------------------------------------ output

    /** One line with the seconds since the start; an empty line stays empty. Keeps a status line below it. */
    void say(String line) {
        double t = (System.nanoTime() - t0) / 1e9;
        synchronized (out) {
            if (statusLine != null) {
                out.print("\r\033[2K");
            }
            if (line.isEmpty()) {
                out.println();
            } else {
                out.println(String.format(Locale.ROOT, stamp, t) + line);
            }
            if (statusLine != null) {
                out.print(statusLine);
            }
            out.flush();
        }
    }

    /** Shows {@code line} in place of the previous status line (for a terminal); null removes it. */
    void status(String line) {
        synchronized (out) {
            if (line != null || statusLine != null) {
                out.print("\r\033[2K" + (line != null ? line : ""));
                out.flush();
            }
            statusLine = line;
        }
    }

    // ------------------------------------------------------------------------------------------ cleanup

    private void interrupted() {
        synchronized (this) {
            if (closed) {
                return;
            }
        }
        onInterrupt.run();
        close();
    }

    /** Idempotent: no more restarts; every node process ends, the proxies and the pool close, the server stops. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        finishing = true;
        supervisor.shutdownNow();
        if (fleet != null) {
            fleet.close();
        }
        proxies.values().forEach(FaultProxy::close);
        if (ds != null) {
            ds.close();
        }
        if (server != null) {
            server.close();
        }
        if (Thread.currentThread() != hook) {
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException e) {
                // already shutting down
            }
        }
    }
}
