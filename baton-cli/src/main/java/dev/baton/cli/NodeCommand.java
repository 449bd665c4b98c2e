package dev.baton.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.baton.Baton;
import dev.baton.BatonException;
import dev.baton.LeaderContext;
import dev.baton.LeaderTask;
import dev.baton.LeaseGrant;
import dev.baton.LeaseLostException;
import dev.baton.Leadership;
import dev.baton.LeadershipConfig;
import dev.baton.LeadershipListener;
import dev.baton.RevocationReason;
import dev.baton.UnknownOutcomeException;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * One node of the demo, in its own process: campaigns for a lease and, while it leads, appends a fenced
 * row to the ledger every few milliseconds. Speaks a line protocol on stdout that the demo reads:
 *
 * <pre>
 * READY &lt;pid&gt;
 * ELECTED &lt;generation&gt;
 * REVOKED &lt;generation&gt; &lt;STOPPED|LOST|DEADLINE|TASK_COMPLETED|TASK_FAILED&gt;
 * WRITE_REJECTED &lt;generation&gt; &lt;database|local&gt;   a fenced write was refused; the term is over
 * WRITE_UNKNOWN &lt;generation&gt;                     the connection failed during COMMIT
 * WRITE_ERROR &lt;generation&gt; &lt;message&gt;             any other failed write (retried)
 * STOPPED                                          after SIGTERM: the lease was released
 * STALE_WRITE_REJECTED &lt;generation&gt;              with --stale-write-probe, after LOST or DEADLINE: a deliberate
 *                                                  write under the revoked grant was refused by the database fence
 * STALE_WRITE_COMMITTED &lt;generation&gt;             ... was accepted: the grant was still current in the database
 * STALE_WRITE_ERROR &lt;generation&gt; &lt;message&gt;
 * </pre>
 *
 * Logs go to stderr. Runs until SIGTERM (or, with {@code --exit-on-stdin-eof}, until its parent goes away).
 */
@Command(name = "node", hidden = true, mixinStandardHelpOptions = true,
        header = "Runs one demo node (used by demo).",
        description = {"Runs one demo node until SIGTERM (used by `baton demo`): leads the lease when it can and "
                + "appends a fenced row to <schema>.<ledger> every --write-interval while it leads."})
final class NodeCommand implements Callable<Integer> {
    /** The demo hands the URL over in this variable, so a password never shows in a process listing. */
    static final String URL_ENV = "BATON_NODE_JDBC_URL";

    @Option(names = "--jdbc-url", paramLabel = "URL", defaultValue = "${env:" + URL_ENV + "}",
            description = "PostgreSQL JDBC URL (default: $" + URL_ENV + ")")
    String jdbcUrl;

    @Option(names = "--schema", defaultValue = DemoCommand.DEFAULT_SCHEMA, description = "Baton schema (default: ${DEFAULT-VALUE})")
    String schema;

    @Option(names = "--node-id", required = true, description = "This node's id, unique among running nodes")
    String nodeId;

    @Option(names = "--lease", defaultValue = DemoCommand.LEASE, description = "Lease to lead (default: ${DEFAULT-VALUE})")
    String lease;

    @Option(names = "--ledger", defaultValue = DemoCommand.LEDGER, description = "Ledger table in the schema (default: ${DEFAULT-VALUE})")
    String ledger;

    @Option(names = "--ttl", defaultValue = "2s", converter = Durations.Converter.class,
            description = "Lease TTL (default: ${DEFAULT-VALUE})")
    Duration ttl;

    @Option(names = "--renew", defaultValue = "400ms", converter = Durations.Converter.class,
            description = "Renew interval; must be below TTL/4 (default: ${DEFAULT-VALUE})")
    Duration renew;

    @Option(names = "--write-interval", defaultValue = "50ms", converter = Durations.Converter.class,
            description = "Pause between fenced writes while leading (default: ${DEFAULT-VALUE})")
    Duration writeInterval;

    @Option(names = "--heartbeat", defaultValue = "1s", converter = Durations.Converter.class,
            description = "Node heartbeat interval (default: ${DEFAULT-VALUE})")
    Duration heartbeat;

    @Option(names = "--stale-write-probe",
            description = "After losing the lease (LOST or DEADLINE), deliberately try one more write with the revoked "
                    + "grant, as a task that ignored its cancellation would, to show the database fence refusing it")
    boolean staleWriteProbe;

    @Option(names = "--exit-on-stdin-eof", description = "Shut down cleanly when standard input closes (the parent died)")
    boolean exitOnStdinEof;

    private final PrintStream out = System.out;

    @Override
    public Integer call() throws Exception {
        String url = Db.requireUrl(jdbcUrl, "--jdbc-url (or $" + URL_ENV + ")");
        if (!schema.matches("[a-z_][a-z0-9_]{0,62}") || !ledger.matches("[a-z_][a-z0-9_]{0,62}")) {
            throw CliException.usage("--schema and --ledger must be lower-case identifiers");
        }
        LeadershipConfig config = LeadershipConfig.builder().leaseTtl(ttl).renewInterval(renew)
                .stopTimeout(Duration.ofSeconds(5)).build();
        HikariDataSource app = Db.pool(url, nodeId + "-app", 4);
        // The coordination pool must hold one connection per leadership runner (kept for its renewals), one
        // for the LISTEN connection and one for the heartbeat and state changes: 4 leaves one spare.
        HikariDataSource coordination = Db.pool(url, nodeId + "-coordination", 4);
        Baton baton = Baton.builder(app).schema(schema).nodeId(nodeId).coordinationDataSource(coordination)
                .migrateOnStart(false).nodeHeartbeat(heartbeat).build();
        CountDownLatch closed = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                baton.close(); // stops the leadership: cancels the task, releases the lease (with a notification)
                emit("STOPPED");
            } finally {
                app.close();
                coordination.close();
                closed.countDown();
            }
        }, "baton-node-shutdown"));
        baton.start();
        String insert = "INSERT INTO \"" + schema + "\".\"" + ledger + "\" (lease_name, generation, node_id) VALUES (?, ?, ?)";
        Leadership leadership = baton.leadership(lease, config, task(insert), new LeadershipListener() {
            @Override
            public void onElected(LeaseGrant grant) {
                emit("ELECTED " + grant.generation());
            }

            @Override
            public void onRevoked(LeaseGrant grant, RevocationReason reason) {
                emit("REVOKED " + grant.generation() + " " + reason.name());
                if (staleWriteProbe && (reason == RevocationReason.LOST || reason == RevocationReason.DEADLINE)) {
                    Thread probe = new Thread(() -> staleWrite(baton, grant, insert), "baton-node-stale-write");
                    probe.setDaemon(true);
                    probe.start();
                }
            }
        });
        leadership.start();
        emit("READY " + ProcessHandle.current().pid());
        if (exitOnStdinEof) {
            Thread watch = new Thread(NodeCommand::exitOnEof, "baton-node-parent-watch");
            watch.setDaemon(true);
            watch.start();
        }
        closed.await(); // until SIGTERM; the shutdown hook does the rest
        return Main.EXIT_OK;
    }

    private LeaderTask task(String insert) {
        return (LeaderContext ctx) -> {
            long generation = ctx.grant().generation();
            while (!ctx.isCancelled()) {
                try {
                    ctx.fenced(tx -> {
                        try (PreparedStatement ps = tx.prepareStatement(insert)) {
                            ps.setString(1, lease);
                            ps.setLong(2, generation);
                            ps.setString(3, nodeId);
                            return ps.executeUpdate();
                        }
                    });
                } catch (LeaseLostException e) {
                    // The term is over: never retry under the same grant.
                    boolean local = e.getMessage() != null && e.getMessage().contains("locally");
                    emit("WRITE_REJECTED " + generation + " " + (local ? "local" : "database"));
                    return;
                } catch (UnknownOutcomeException e) {
                    emit("WRITE_UNKNOWN " + generation);
                } catch (BatonException e) {
                    if (ctx.isCancelled()) {
                        return;
                    }
                    emit("WRITE_ERROR " + generation + " " + Db.rootMessage(e));
                }
                if (ctx.awaitCancellation(writeInterval)) {
                    return;
                }
            }
        };
    }

    /** A write under a revoked grant, as a zombie task would make it: the fence decides. */
    private void staleWrite(Baton baton, LeaseGrant grant, String insert) {
        for (int attempt = 1; ; attempt++) {
            try {
                baton.leases().fenced(grant, tx -> {
                    try (PreparedStatement ps = tx.prepareStatement(insert)) {
                        ps.setString(1, lease);
                        ps.setLong(2, grant.generation());
                        ps.setString(3, nodeId);
                        return ps.executeUpdate();
                    }
                });
                emit("STALE_WRITE_COMMITTED " + grant.generation());
                return;
            } catch (LeaseLostException e) {
                emit("STALE_WRITE_REJECTED " + grant.generation());
                return;
            } catch (UnknownOutcomeException e) {
                emit("STALE_WRITE_ERROR " + grant.generation() + " outcome unknown: " + Db.rootMessage(e));
                return;
            } catch (RuntimeException e) {
                // A connection broken by the pause, for example: the write did not happen; try again.
                if (attempt == 3) {
                    emit("STALE_WRITE_ERROR " + grant.generation() + " " + Db.rootMessage(e));
                    return;
                }
            }
        }
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
