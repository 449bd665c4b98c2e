package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.baton.testkit.BatonPostgres;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * A Baton node in a JVM of its own ({@link JobWorkerProcess}, {@link ScheduleNodeProcess}), for the tests
 * that stop or kill a process: starting it, reading what it prints, signalling it, and the pool it opens.
 */
final class ChildNode {
    private ChildNode() {}

    /** The pool a child node opens on {@code url}. */
    static HikariDataSource open(String url, String nodeId, int size) {
        HikariConfig cfg = new HikariConfig();
        cfg.setJdbcUrl(url);
        cfg.setPoolName(nodeId);
        cfg.setMaximumPoolSize(size);
        cfg.setMinimumIdle(0);
        return new HikariDataSource(cfg);
    }

    /**
     * The node a child process runs, from its arguments (JDBC URL, schema, node id, {@code poll|auto}): short
     * maintenance and job leases (1 s, 2 s), one job at a time on queue {@code default}.
     */
    static Baton.Builder nodeBuilder(String[] args, int poolSize, Duration drainTimeout) {
        String url = args[0];
        String nodeId = args[2];
        boolean poll = args.length > 3 && args[3].equals("poll");
        return Baton.builder(open(url, nodeId, poolSize))
                .schema(args[1])
                .nodeId(nodeId)
                .nodeHeartbeat(Duration.ofMillis(200))
                .notifications(poll ? NotificationMode.POLL : NotificationMode.AUTO)
                .maintenance(LeadershipConfig.builder()
                        .leaseTtl(Duration.ofSeconds(1))
                        .renewInterval(Duration.ofMillis(200))
                        .pollInterval(Duration.ofMillis(100))
                        .build())
                .worker(WorkerConfig.builder()
                        .queue("default", 1)
                        .jobLease(Duration.ofSeconds(2))
                        .heartbeatInterval(Duration.ofMillis(150))
                        .pollInterval(Duration.ofMillis(50))
                        .rescueInterval(Duration.ofMillis(200))
                        .drainTimeout(drainTimeout)
                        .build());
    }

    /** Starts the node and prints {@code STARTED <node id>}; the process then runs until it is killed. */
    static void run(Baton.Builder node, String nodeId) throws InterruptedException {
        node.build().start();
        System.out.println("STARTED " + nodeId);
        System.out.flush();
        Thread.currentThread().join();
    }

    /** Starts {@code main} (a child node's class) on this JVM's class path, against {@code pg}'s database. */
    static Process start(Class<?> main, BatonPostgres pg, String schema, String nodeId) throws Exception {
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> cmd = List.of(
                java,
                "-cp",
                System.getProperty("java.class.path"),
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                main.getName(),
                pg.jdbcUrl(),
                schema,
                nodeId,
                pg.pooled() ? "poll" : "auto");
        return new ProcessBuilder(cmd).redirectErrorStream(true).start();
    }

    /**
     * Reads the child's output on a daemon thread named {@code tag}: every line echoed with the tag and kept in
     * {@code output}; {@code value} completed with the number after the first line starting with {@code marker}
     * (or exceptionally, with the output, if the child exits before printing one).
     */
    static void read(Process child, String tag, String marker, CompletableFuture<Long> value, List<String> output) {
        Thread reader = new Thread(
                () -> {
                    try (BufferedReader r =
                            new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
                        String line;
                        while ((line = r.readLine()) != null) {
                            System.out.println("[" + tag + "] " + line);
                            synchronized (output) {
                                output.add(line);
                            }
                            if (line.startsWith(marker)) {
                                value.complete(Long.parseLong(
                                        line.substring(marker.length()).trim()));
                            }
                        }
                        value.completeExceptionally(new AssertionError(
                                tag + " exited before printing '" + marker + "'; output: " + output));
                    } catch (Exception e) {
                        value.completeExceptionally(e);
                    }
                },
                tag);
        reader.setDaemon(true);
        reader.start();
    }

    /** Sends {@code signal} (STOP, CONT, KILL, …) to the child with kill(1). */
    static void signal(Process p, String signal) throws Exception {
        Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(p.pid()))
                .inheritIO()
                .start();
        assertThat(kill.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(kill.exitValue()).as("kill -" + signal).isZero();
    }
}
