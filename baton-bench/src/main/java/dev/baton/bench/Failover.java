package dev.baton.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.baton.Baton;
import dev.baton.WorkerConfig;
import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Failover with child processes ({@link FailoverNode}): node A runs the singleton task, node B stands by;
 * A is SIGKILLed and the time to B's first tick is measured; then a fresh standby C starts, B gets SIGTERM
 * (graceful stop) and the time to C's first tick is measured. Plus Baton's dead-job rescue: a child that
 * holds a claimed job is SIGKILLed and the time until a surviving node starts the job is measured.
 */
final class Failover {
    private final Database db;
    private final CompareResults r;
    private final boolean quick;
    private final Set<String> systems;
    private final List<Process> children = new ArrayList<>();
    private final BlockingQueue<String[]> events = new LinkedBlockingQueue<>();

    Failover(Database db, CompareResults r, boolean quick, Set<String> systems) {
        this.db = db;
        this.r = r;
        this.quick = quick;
        this.systems = systems;
    }

    void run() throws Exception {
        try {
            if (systems.contains("baton")) {
                dev.baton.LeadershipConfig d = dev.baton.LeadershipConfig.defaults();
                singleton(
                        "baton",
                        "Baton",
                        "Leadership with LeadershipConfig.defaults(): lease "
                                + d.leaseTtl().toMillis() + " ms, renew "
                                + d.renewInterval().toMillis() + " ms, poll "
                                + d.pollInterval().toMillis() + " ms");
                rescue();
            }
            if (systems.contains("shedlock")) {
                singleton(
                        "shedlock",
                        "ShedLock",
                        "JdbcLockProvider + KeepAliveLockProvider, lockAtMostFor 30 s "
                                + "(extended while the task runs), task re-tried every 100 ms on every node");
            }
            if (systems.contains("quartz")) {
                singleton(
                        "quartz",
                        "Quartz",
                        "clustered JobStoreTX, clusterCheckinInterval 7500 ms (default), "
                                + "@DisallowConcurrentExecution job with requestsRecovery, 1 s repeating trigger");
            }
            if (!quick && (systems.contains("dbs-fetch") || systems.contains("dbs-lock"))) {
                singleton(
                        "dbs",
                        "db-scheduler",
                        "recurring task, heartbeatInterval 2 s (default 5 min), "
                                + "missedHeartbeatsLimit 6 (default): a dead execution is detected after 12 s instead of 30 min");
            }
        } finally {
            children.forEach(Process::destroyForcibly);
        }
    }

    private Process spawn(String system, String schema, String node, String... props) throws Exception {
        String jar = new File(FailoverNode.class
                        .getProtectionDomain()
                        .getCodeSource()
                        .getLocation()
                        .toURI())
                .getPath();
        List<String> cmd = new ArrayList<>(List.of(
                System.getProperty("java.home") + "/bin/java",
                "-Xmx256m",
                "-XX:TieredStopAtLevel=1",
                "-XX:+UseSerialGC"));
        cmd.addAll(List.of(props));
        cmd.addAll(List.of(
                "-cp",
                System.getProperty("java.class.path").isEmpty() ? jar : System.getProperty("java.class.path"),
                FailoverNode.class.getName(),
                system,
                db.url(),
                schema,
                node));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        children.add(p);
        Thread t = new Thread(
                () -> {
                    try (BufferedReader in =
                            new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
                        String line;
                        while ((line = in.readLine()) != null) {
                            String[] f = line.strip().split(" ");
                            if (f.length >= 2
                                    && (f[0].equals("TICK") || f[0].equals("READY") || f[0].equals("JOBSTART"))) {
                                events.add(f);
                            } else if (line.contains("Exception") || line.contains("ERROR")) {
                                System.out.println("    [" + node + "] " + line);
                            }
                        }
                    } catch (Exception e) {
                        // process gone
                    }
                },
                "child-" + node);
        t.setDaemon(true);
        t.start();
        return p;
    }

    /** Waits for an event of {@code type} from {@code node} (any node if null) at or after {@code afterMillis}. */
    private String[] await(String type, String node, long afterMillis, long timeoutMs) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (true) {
            long left = deadline - System.currentTimeMillis();
            if (left <= 0) {
                return null;
            }
            String[] e = events.poll(left, TimeUnit.MILLISECONDS);
            if (e == null) {
                return null;
            }
            if (e[0].equals(type)
                    && (node == null || e[1].equals(node))
                    && (!type.equals("TICK") || Long.parseLong(e[2]) >= afterMillis)) {
                return e;
            }
        }
    }

    private void singleton(String system, String name, String settings) throws Exception {
        String schema = "cmp_fo_" + system + "_" + Long.toHexString(System.nanoTime() & 0xffffff);
        db.dropSchema(schema);
        db.execute("CREATE SCHEMA \"" + schema + "\"");
        try {
            prepare(system, schema);
            events.clear();
            Process a = spawn(system, schema, "a");
            if (await("TICK", "a", 0, 60_000) == null) {
                throw new IllegalStateException(name + ": node a never ran the singleton");
            }
            Process b = spawn(system, schema, "b");
            if (await("READY", "b", 0, 60_000) == null) {
                throw new IllegalStateException(name + ": node b did not start");
            }
            Thread.sleep(2000);
            long kill = System.currentTimeMillis();
            a.destroyForcibly();
            String[] t = await("TICK", "b", kill, 120_000);
            double crash = t == null ? Double.NaN : (Long.parseLong(t[2]) - kill) / 1000.0;
            r.failover.add(new CompareResults.Failover(
                    name,
                    "SIGKILL of the running node → next run elsewhere",
                    crash,
                    settings,
                    t == null ? "no run elsewhere within 120 s" : ""));
            System.out.printf("%-42s failover after SIGKILL: %.2f s%n", name, crash);
            if (t == null) {
                return;
            }
            Process c = spawn(system, schema, "c");
            if (await("READY", "c", 0, 60_000) == null) {
                throw new IllegalStateException(name + ": node c did not start");
            }
            Thread.sleep(2000);
            long stop = System.currentTimeMillis();
            b.destroy(); // SIGTERM: the node's shutdown hook stops it
            String[] u = await("TICK", "c", stop, 120_000);
            double graceful = u == null ? Double.NaN : (Long.parseLong(u[2]) - stop) / 1000.0;
            r.failover.add(new CompareResults.Failover(
                    name,
                    "graceful stop (SIGTERM) → next run elsewhere",
                    graceful,
                    settings,
                    u == null ? "no run elsewhere within 120 s" : ""));
            System.out.printf("%-42s handoff after SIGTERM: %.2f s%n", name, graceful);
        } finally {
            children.forEach(Process::destroyForcibly);
            for (Process p : children) {
                p.waitFor(10, TimeUnit.SECONDS);
            }
            children.clear();
            db.dropSchema(schema);
        }
    }

    private void prepare(String system, String schema) throws Exception {
        switch (system) {
            case "baton", "baton-job" -> {
                try (HikariDataSource pool = db.pool("fo-migrate", 1)) {
                    Baton.migrate(pool, schema);
                }
            }
            case "shedlock" ->
                db.execute(
                        "CREATE TABLE \"" + schema + "\".shedlock (name varchar(64) NOT NULL PRIMARY KEY, "
                                + "lock_until timestamp NOT NULL, locked_at timestamp NOT NULL, locked_by varchar(255) NOT NULL)");
            case "quartz" -> {
                Peer.QuartzPeer q = new Peer.QuartzPeer(db, schema, 2, 2);
                q.install(); // drops and creates the schema, with Quartz's tables
                q.client.close();
                q.client = null;
            }
            case "dbs" -> {
                Peer.DbSchedulerPeer d = new Peer.DbSchedulerPeer(db, schema, 2, 2, false, false);
                d.install();
                d.client.close();
                d.client = null;
            }
            default -> throw new IllegalArgumentException(system);
        }
    }

    /**
     * Baton's dead-job rescue: node P (this JVM, maintenance leader) is busy with a blocker job, so the
     * child claims job 1; P is freed, the child is SIGKILLed, and the time until P starts job 1 is measured.
     */
    private void rescue() throws Exception {
        long leaseMs = 3000;
        long rescueMs = 1000;
        String schema = "cmp_fo_rescue_" + Long.toHexString(System.nanoTime() & 0xffffff);
        db.dropSchema(schema);
        db.execute("CREATE SCHEMA \"" + schema + "\"");
        CountDownLatch blockerStarted = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        long[] rescuedAt = {0};
        CountDownLatch rescued = new CountDownLatch(1);
        try (HikariDataSource pool = db.pool("fo-rescue", 10)) {
            Baton.migrate(pool, schema);
            try (Baton p = Baton.builder(pool)
                    .schema(schema)
                    .nodeId("p")
                    .worker(WorkerConfig.builder()
                            .queue("rescue", 1)
                            .jobLease(Duration.ofMillis(leaseMs))
                            .heartbeatInterval(Duration.ofMillis(500))
                            .rescueInterval(Duration.ofMillis(rescueMs))
                            .build())
                    .handle("hold", Long.class, (id, ctx) -> {
                        if (id == 0) {
                            blockerStarted.countDown();
                            release.await();
                        } else {
                            rescuedAt[0] = System.currentTimeMillis();
                            rescued.countDown();
                        }
                    })
                    .build()
                    .start()) {
                p.jobs().enqueue(FailoverNode.hold(0));
                if (!blockerStarted.await(30, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("rescue: the blocker job did not start");
                }
                events.clear();
                Process child = spawn("baton-job", schema, "x", "-Dlease=" + leaseMs);
                if (await("READY", "x", 0, 60_000) == null) {
                    throw new IllegalStateException("rescue: child did not start");
                }
                p.jobs().enqueue(FailoverNode.hold(1));
                if (await("JOBSTART", null, 0, 30_000) == null) {
                    throw new IllegalStateException("rescue: the child did not claim job 1");
                }
                release.countDown();
                Thread.sleep(500);
                long kill = System.currentTimeMillis();
                child.destroyForcibly();
                boolean ok = rescued.await(120, TimeUnit.SECONDS);
                double secs = ok ? (rescuedAt[0] - kill) / 1000.0 : Double.NaN;
                r.failover.add(new CompareResults.Failover(
                        "Baton",
                        "dead-job rescue (SIGKILL of the worker holding a job)",
                        secs,
                        "job lease " + leaseMs + " ms, heartbeat 500 ms, rescue interval " + rescueMs
                                + " ms (bound: lease + rescue interval = " + (leaseMs + rescueMs) / 1000.0 + " s)",
                        ok ? "" : "not rescued in 120 s"));
                System.out.printf(
                        "%-42s dead-job rescue: %.2f s (lease %d ms + rescue interval %d ms)%n",
                        "Baton", secs, leaseMs, rescueMs);
            } finally {
                release.countDown();
            }
        } finally {
            children.forEach(Process::destroyForcibly);
            children.clear();
            db.dropSchema(schema);
        }
    }
}
