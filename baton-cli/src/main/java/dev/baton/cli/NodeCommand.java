package dev.baton.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.baton.Baton;
import dev.baton.LeadershipListener;
import dev.baton.LeaseGrant;
import dev.baton.RevocationReason;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * One node running the verification workload ({@link VerifyWorkload}) in its own process, until SIGTERM
 * (graceful: drain, then close, which releases the lease) or SIGKILL. Logs go to stderr; stdout carries
 * one event per line for a parent process (the demo, a chaos run):
 *
 * <pre>
 * READY &lt;pid&gt;
 * ELECTED &lt;generation&gt;
 * REVOKED &lt;generation&gt; &lt;STOPPED|LOST|DEADLINE|TASK_COMPLETED|TASK_FAILED&gt;
 * WRITE_REJECTED &lt;generation&gt; &lt;database|local&gt;   a fenced write was refused; the term is over
 * WRITE_UNKNOWN &lt;generation&gt;                     the connection failed during COMMIT
 * WRITE_ERROR &lt;generation&gt; &lt;message&gt;             any other failed write (retried)
 * STATS ledger=&lt;n&gt; enqueued=&lt;n&gt; effects=&lt;n&gt; externals=&lt;n&gt; ticks=&lt;n&gt;   every --stats-interval, this process's counts
 * DRAINING                                         after SIGTERM: claiming no new jobs
 * STOPPED                                          after SIGTERM: running jobs finished or released, lease released
 * STALE_WRITE_REJECTED &lt;generation&gt;              with --stale-write-probe, after LOST or DEADLINE: a deliberate
 *                                                  write under the revoked grant was refused by the database fence
 * STALE_WRITE_COMMITTED &lt;generation&gt;             ... was accepted: the grant was still current in the database
 * STALE_WRITE_ERROR &lt;generation&gt; &lt;message&gt;
 * </pre>
 */
@Command(
        name = "node",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        header = "Runs one node of the verification workload until SIGTERM.",
        description = {
            "Runs one Baton node with the verification workload (see the README, \"Verification workload\"): "
                    + "campaigns for the lease 'verify-leader' and, while leading, appends a fenced row to verify_ledger "
                    + "every --write-interval and enqueues 'verify.effect' jobs at --job-rate; runs those jobs and the "
                    + "'verify.tick' schedule. Creates Baton's tables and the workload's tables if missing.",
            "",
            "SIGTERM drains (no new jobs, running ones finish), then stops and releases the lease. "
                    + "Prints one event per line on stdout (READY, ELECTED, REVOKED, STATS, DRAINING, STOPPED, ...); "
                    + "logs go to stderr. Check a run with `baton verify`."
        },
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {"0:stopped by SIGTERM after a clean shutdown", "2:usage error or database unreachable"})
final class NodeCommand implements Callable<Integer> {
    /** A parent hands the URL over in this variable, so a password never shows in a process listing. */
    static final String URL_ENV = "BATON_NODE_JDBC_URL";

    /** The workloads a node can run. */
    enum Workload {
        VERIFY
    }

    @Option(
            names = "--jdbc-url",
            paramLabel = "URL",
            defaultValue = "${env:" + URL_ENV + "}",
            description = "PostgreSQL JDBC URL (default: $" + URL_ENV + ")")
    String jdbcUrl;

    @Option(
            names = "--schema",
            paramLabel = "SCHEMA",
            defaultValue = Baton.DEFAULT_SCHEMA,
            description = "Baton's schema, also holding the workload's tables (default: ${DEFAULT-VALUE})")
    String schema;

    @Option(
            names = "--node-id",
            paramLabel = "ID",
            required = true,
            description = "This node's id, unique among running nodes")
    String nodeId;

    @Option(
            names = "--workload",
            paramLabel = "NAME",
            defaultValue = "verify",
            description = "The workload to run: ${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE})")
    Workload workload;

    @Option(
            names = "--ttl",
            paramLabel = "D",
            defaultValue = "2s",
            converter = Durations.Converter.class,
            description = "TTL of the 'verify-leader' lease and of the maintenance lease (default: ${DEFAULT-VALUE})")
    Duration ttl;

    @Option(
            names = "--renew",
            paramLabel = "D",
            defaultValue = "400ms",
            converter = Durations.Converter.class,
            description = "Lease renew interval; must be below TTL/4 (default: ${DEFAULT-VALUE})")
    Duration renew;

    @Option(
            names = "--write-interval",
            paramLabel = "D",
            defaultValue = "20ms",
            converter = Durations.Converter.class,
            description = "Pause between fenced ledger writes while leading (default: ${DEFAULT-VALUE})")
    Duration writeInterval;

    @Option(
            names = "--job-rate",
            paramLabel = "N",
            defaultValue = "50",
            description = "verify.effect jobs enqueued per second while leading (default: ${DEFAULT-VALUE})")
    double jobRate;

    @Option(
            names = "--job-lease",
            paramLabel = "D",
            defaultValue = "4s",
            converter = Durations.Converter.class,
            description = "Lease of a running job attempt (default: ${DEFAULT-VALUE})")
    Duration jobLease;

    @Option(
            names = "--job-heartbeat",
            paramLabel = "D",
            defaultValue = "500ms",
            converter = Durations.Converter.class,
            description = "Heartbeat of running attempts; below job lease/4 (default: ${DEFAULT-VALUE})")
    Duration jobHeartbeat;

    @Option(
            names = "--rescue-interval",
            paramLabel = "D",
            defaultValue = "1s",
            converter = Durations.Converter.class,
            description = "How often expired attempts are returned to the queue (default: ${DEFAULT-VALUE})")
    Duration rescueInterval;

    @Option(
            names = "--tick-interval",
            paramLabel = "D",
            defaultValue = "1s",
            converter = Durations.Converter.class,
            description = "Interval of the verify.tick schedule (default: ${DEFAULT-VALUE})")
    Duration tickInterval;

    @Option(
            names = "--concurrency",
            paramLabel = "N",
            defaultValue = "4",
            description = "Jobs run at once on this node (default: ${DEFAULT-VALUE})")
    int concurrency;

    @Option(
            names = "--drain-timeout",
            paramLabel = "D",
            defaultValue = "5s",
            converter = Durations.Converter.class,
            description = "On SIGTERM, how long running jobs may take to finish (default: ${DEFAULT-VALUE})")
    Duration drainTimeout;

    @Option(
            names = "--heartbeat",
            paramLabel = "D",
            defaultValue = "1s",
            converter = Durations.Converter.class,
            description = "Node heartbeat interval (default: ${DEFAULT-VALUE})")
    Duration heartbeat;

    @Option(
            names = "--stats-interval",
            paramLabel = "D",
            defaultValue = "1s",
            converter = Durations.Converter.class,
            description = "How often to print a STATS line (default: ${DEFAULT-VALUE})")
    Duration statsInterval;

    @Option(
            names = "--stale-write-probe",
            description =
                    "After losing the lease (LOST or DEADLINE), deliberately try one more ledger write with the "
                            + "revoked grant, as a task that ignored its cancellation would, to show the database fence refusing it")
    boolean staleWriteProbe;

    @Option(
            names = "--exit-on-stdin-eof",
            description = "Shut down cleanly when standard input closes (the parent died)")
    boolean exitOnStdinEof;

    private final PrintStream out = System.out;

    @Override
    public Integer call() throws Exception {
        String url = Db.requireUrl(jdbcUrl, "--jdbc-url (or $" + URL_ENV + ")");
        if (schema == null || !schema.matches("[a-z_][a-z0-9_]{0,62}")) {
            throw CliException.usage(
                    "--schema must be lower-case letters, digits and underscores (at most 63), but was '" + schema
                            + "'");
        }
        if (concurrency < 1 || concurrency > 100) {
            throw CliException.usage("--concurrency must be 1 to 100, but was " + concurrency);
        }
        if (statsInterval.compareTo(Duration.ofMillis(100)) < 0) {
            throw CliException.usage(
                    "--stats-interval must be at least 100ms, but was " + Durations.human(statsInterval));
        }
        VerifyWorkload.Settings settings = new VerifyWorkload.Settings(
                ttl,
                renew,
                writeInterval,
                jobRate,
                jobLease,
                jobHeartbeat,
                rescueInterval,
                tickInterval,
                concurrency,
                drainTimeout);
        try {
            settings.validate();
        } catch (IllegalArgumentException e) {
            throw CliException.usage("invalid timing: " + e.getMessage());
        }
        HikariDataSource app = Db.pool(url, nodeId + "-app", concurrency * 2 + 4);
        // Coordination: held connections for each leadership runner (verify-leader, maintenance), LISTEN, the node
        // heartbeat and the job heartbeats, plus the node-state change on shutdown and spares. With 5 the state
        // change waited for a connection and shutdown took 4 s longer.
        HikariDataSource coordination = Db.pool(url, nodeId + "-coordination", 8);
        Baton.migrate(app, schema);
        VerifyWorkload.install(app, schema);
        VerifyWorkload work = new VerifyWorkload(schema, nodeId, settings, app, this::emit);
        Baton baton = work.configure(Baton.builder(app)
                        .schema(schema)
                        .nodeId(nodeId)
                        .coordinationDataSource(coordination)
                        .migrateOnStart(false)
                        .nodeHeartbeat(heartbeat))
                .build();
        ScheduledExecutorService stats = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "baton-node-stats");
            t.setDaemon(true);
            return t;
        });
        CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime()
                .addShutdownHook(new Thread(
                        () -> {
                            try {
                                work.stopEnqueueing();
                                baton.drain();
                                emit("DRAINING");
                                baton.close(); // running jobs finish within the drain timeout; the lease is released
                                emit(work.stats());
                                emit("STOPPED");
                            } finally {
                                stats.shutdownNow();
                                app.close();
                                coordination.close();
                                closed.countDown();
                            }
                        },
                        "baton-node-shutdown"));
        baton.start();
        work.lead(baton, new LeadershipListener() {
            @Override
            public void onElected(LeaseGrant grant) {
                emit("ELECTED " + grant.generation());
            }

            @Override
            public void onRevoked(LeaseGrant grant, RevocationReason reason) {
                emit("REVOKED " + grant.generation() + " " + reason.name());
                if (staleWriteProbe && VerifyWorkload.revokedByFence(reason)) {
                    Thread probe = new Thread(() -> work.staleWrite(baton, grant), "baton-node-stale-write");
                    probe.setDaemon(true);
                    probe.start();
                }
            }
        });
        emit("READY " + ProcessHandle.current().pid());
        stats.scheduleAtFixedRate(
                () -> emit(work.stats()), statsInterval.toMillis(), statsInterval.toMillis(), TimeUnit.MILLISECONDS);
        if (exitOnStdinEof) {
            Thread watch = new Thread(NodeCommand::exitOnEof, "baton-node-parent-watch");
            watch.setDaemon(true);
            watch.start();
        }
        closed.await(); // until SIGTERM; the shutdown hook does the rest
        return Main.EXIT_OK;
    }

    private void emit(String line) {
        synchronized (out) {
            out.println(line);
            out.flush();
        }
    }

    private static void exitOnEof() {
        InputStream in = System.in;
        byte[] buf = new byte[256];
        try {
            while (in.read(buf) >= 0) {
                // ignore input; only the end of it matters
            }
        } catch (IOException e) {
            // treat as closed
        }
        System.exit(0);
    }
}
