package dev.baton;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import org.postgresql.ds.PGSimpleDataSource;

/**
 * A leader in a JVM of its own, for {@link LeaderKillTest}: campaigns for a lease with L = 2 s,
 * R = 400 ms (500 ms would be refused: L/2 must exceed 2R), prints {@code ELECTED <generation>} (flushed) when elected, then blocks until killed.
 *
 * <p>Arguments: JDBC URL, schema, node id, lease name, notification mode (AUTO or POLL).
 */
public final class LeaderProcess {
    static final LeadershipConfig CONFIG = LeadershipConfig.builder()
            .leaseTtl(Duration.ofSeconds(2))
            .renewInterval(Duration.ofMillis(400))
            .pollInterval(Duration.ofMillis(100))
            .stopTimeout(Duration.ofSeconds(2))
            .build();

    private LeaderProcess() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: LeaderProcess <jdbcUrl> <schema> <nodeId> <lease> <AUTO|POLL>");
            System.exit(2);
        }
        PGSimpleDataSource ds = new PGSimpleDataSource();
        ds.setURL(args[0]);
        Baton baton = Baton.builder(ds)
                .schema(args[1])
                .nodeId(args[2])
                .migrateOnStart(false)
                .notifications(NotificationMode.valueOf(args[4]))
                .build()
                .start();
        baton.leadership(
                        args[3],
                        CONFIG,
                        ctx -> {
                            while (!ctx.awaitCancellation(Duration.ofHours(1))) {
                                // lead until killed
                            }
                        },
                        new LeadershipListener() {
                            @Override
                            public void onElected(LeaseGrant grant) {
                                System.out.println("ELECTED " + grant.generation());
                                System.out.flush();
                            }

                            @Override
                            public void onRevoked(LeaseGrant grant, RevocationReason reason) {
                                System.out.println("REVOKED " + grant.generation() + " " + reason);
                                System.out.flush();
                            }
                        })
                .start();
        System.out.println("STARTED");
        System.out.flush();
        new CountDownLatch(1).await(); // until SIGKILL
    }
}
