package dev.baton.cli;

import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.stream.Stream;

/**
 * A throw-away PostgreSQL for the demo and the chaos run (io.zonky's binaries, no install needed),
 * tuned for speed over durability. It can be restarted on the same port and data directory, which is
 * how the chaos run restarts "the database" under running nodes.
 */
final class EmbeddedServer implements AutoCloseable {
    private final Path dataDir;
    private EmbeddedPostgres pg;
    private int port;

    private EmbeddedServer(Path dataDir) {
        this.dataDir = dataDir;
    }

    /** Unpacks (first run only) and starts a server on a free port. */
    static EmbeddedServer start() {
        try {
            EmbeddedServer s = new EmbeddedServer(Files.createTempDirectory("baton-pg-"));
            s.pg = s.builder().start();
            s.port = s.pg.getPort();
            return s;
        } catch (IOException | RuntimeException e) {
            throw new CliException(
                    Main.EXIT_USAGE,
                    "could not start the embedded PostgreSQL (use --jdbc-url to " + "run against an existing server): "
                            + Db.rootMessage(e),
                    e);
        }
    }

    private EmbeddedPostgres.Builder builder() {
        return EmbeddedPostgres.builder()
                .setDataDirectory(dataDir)
                .setCleanDataDirectory(false) // kept across restarts; deleted by close()
                .setServerConfig("fsync", "off")
                .setServerConfig("synchronous_commit", "off")
                .setServerConfig("full_page_writes", "off")
                .setServerConfig("max_connections", "300")
                .setServerConfig("timezone", "UTC")
                .setPGStartupWait(Duration.ofSeconds(60))
                .setRegisterShutdownHook(false);
    }

    String jdbcUrl() {
        return "jdbc:postgresql://localhost:" + port + "/postgres?user=postgres";
    }

    /** Fast shutdown (open sessions are cut), then a start on the same port and data after {@code downtime}. */
    synchronized void restart(Duration downtime) throws IOException, InterruptedException {
        pg.close();
        Thread.sleep(downtime.toMillis()); // the outage itself, not synchronisation
        pg = builder().setPort(port).start();
    }

    @Override
    public synchronized void close() {
        try {
            if (pg != null) {
                pg.close();
            }
        } catch (IOException e) {
            // stopping a server that is already gone
        } finally {
            pg = null;
            try (Stream<Path> files = Files.walk(dataDir)) {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            } catch (IOException e) {
                // a temp directory left behind
            }
        }
    }
}
