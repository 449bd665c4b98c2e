package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** L08: the leader is a separate JVM, killed with SIGKILL; another node takes over on its own. */
class LeaderKillTest extends LeadershipDbTest {
    private static final String NAME = "killed-leader";

    /**
     * The child JVM ({@link LeaderProcess}, L = 2 s, R = 500 ms) leads; B campaigns in this JVM with the
     * same timing; the child is killed with SIGKILL. B is elected with the next generation, and only after
     * the child's lease had expired on the database clock: B's acquired_at is not before the last
     * expires_at the child's renewals wrote (recorded by polling the row until B's takeover overwrote it).
     *
     * <p>Protection removed to see it fail: the takeover condition on the database clock (lease.sql
     * {@code acquire}: {@code l.expires_at <= clock_timestamp()} changed to
     * {@code l.expires_at <= clock_timestamp() + interval '1 second'}); B then acquired 1 s before the
     * child's lease expired and the acquired_at assertion failed.
     */
    @Test
    void L08_sigkilledLeaderProcessIsReplacedAfterItsLeaseExpires() throws Exception {
        Process child = startChild();
        closeLater(() -> {
            child.destroyForcibly();
        });
        BlockingQueue<String> lines = new LinkedBlockingQueue<>();
        Thread reader = new Thread(
                () -> {
                    try (BufferedReader r =
                            new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8))) {
                        for (String line; (line = r.readLine()) != null; ) {
                            lines.add(line);
                        }
                    } catch (IOException e) {
                        // the child died
                    }
                },
                "l08-child-stdout");
        reader.setDaemon(true);
        reader.start();
        long g = awaitElectedLine(lines, child);
        // The child is a healthy leader: it has renewed at least once.
        await().atMost(WAIT).pollInterval(Duration.ofMillis(20)).until(() -> {
            LeaseInfo i = lease(NAME);
            return i.generation() == g && i.renewedAt().isAfter(i.acquiredAt());
        });

        Baton b = start(nodeBuilder("l08-b", nodePool("l08-b")));
        Recorder rb = new Recorder();
        b.leadership(NAME, LeaderProcess.CONFIG, idleTask(), rb).start();

        AtomicReference<Instant> lastChildExpiry =
                new AtomicReference<>(lease(NAME).expiresAt());
        long killAt = System.nanoTime();
        child.destroyForcibly();
        assertThat(child.waitFor(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
        // Poll the row until B's takeover overwrites it: a renewal the child sent just before dying may
        // still commit, and its expiry is what B must wait for.
        await().atMost(WAIT).pollInterval(Duration.ofMillis(5)).until(() -> {
            LeaseInfo i = lease(NAME);
            if (i.generation() == g && i.expiresAt().isAfter(lastChildExpiry.get())) {
                lastChildExpiry.set(i.expiresAt());
            }
            return !rb.elections().isEmpty();
        });
        Recorder.Event elected = rb.awaitElected();
        long takeoverNanos = elected.nanos() - killAt;

        assertThat(elected.grant().generation()).isGreaterThan(g);
        LeaseHistoryEntry bEntry = historyOf(NAME, elected.grant().generation());
        assertThat(bEntry.owner()).isEqualTo("l08-b");
        assertThat(bEntry.acquiredAt())
                .as("B acquired only after the child's lease expired on the database clock")
                .isAfterOrEqualTo(lastChildExpiry.get());
        LeaseHistoryEntry aEntry = historyOf(NAME, g);
        assertThat(aEntry.owner()).isEqualTo("l08-child");
        assertThat(aEntry.endReason()).contains("expired");
        System.out.printf(
                "L08: SIGKILL -> B elected in %.0f ms (L = %d ms, R = %d ms); B acquired %d ms after the "
                        + "child's last expiry%n",
                ms(takeoverNanos),
                LeaderProcess.CONFIG.leaseTtl().toMillis(),
                LeaderProcess.CONFIG.renewInterval().toMillis(),
                Duration.between(lastChildExpiry.get(), bEntry.acquiredAt()).toMillis());
    }

    private Process startChild() throws IOException {
        String java = ProcessHandle.current()
                .info()
                .command()
                .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        String cp = System.getProperty("java.class.path");
        Path log = Files.createTempFile("baton-leader-process-", ".log");
        log.toFile().deleteOnExit();
        childLog = log;
        return new ProcessBuilder(List.of(
                        java,
                        "-cp",
                        cp,
                        LeaderProcess.class.getName(),
                        PG.jdbcUrl(),
                        schema,
                        "l08-child",
                        NAME,
                        PG.pooled() ? "POLL" : "AUTO"))
                .redirectError(log.toFile())
                .start();
    }

    private Path childLog;

    private long awaitElectedLine(BlockingQueue<String> lines, Process child) throws Exception {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (System.nanoTime() < deadline) {
            if (!child.isAlive() && lines.isEmpty()) {
                throw new AssertionError(
                        "the child process exited with " + child.exitValue() + ":\n" + Files.readString(childLog));
            }
            String line = lines.poll(100, TimeUnit.MILLISECONDS);
            if (line != null && line.startsWith("ELECTED ")) {
                return Long.parseLong(line.substring("ELECTED ".length()).trim());
            }
        }
        throw new AssertionError("the child process did not print ELECTED within " + WAIT);
    }
}
