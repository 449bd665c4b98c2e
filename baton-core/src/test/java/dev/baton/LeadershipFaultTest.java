package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.baton.internal.maintenance.MaintenanceTask;
import dev.baton.internal.service.Hooks;
import dev.baton.testkit.CheckResult;
import dev.baton.testkit.FaultProxy;
import dev.baton.testkit.HistoryRecorder;
import dev.baton.testkit.PausePoints;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Date;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/** Leadership under network partitions, starved renewals and odd clocks: FAULTS L06, L14, L16. */
class LeadershipFaultTest extends LeadershipDbTest {
    private static final String NAME = "fault-leader";

    /**
     * L06: A's connections go through a fault proxy that is black-holed (no FIN, no RST).
     *
     * <p>Protection removed to see it fail: the local deadline in {@code Leadership.lead()} (the
     * {@code if (now - deadline >= 0) { reason = DEADLINE; break; }} check). A then never stepped down while
     * partitioned: no onRevoked before B's election, and the await for A's revocation timed out.
     */
    @Test
    void L06_blackHoledLeaderSelfStopsBeforeTakeover() throws Exception {
        createLedger();
        FaultProxy proxy = closeLater(FaultProxy.start(PG.host(), PG.port()));
        // Socket and login timeouts, as a client with TCP keepalives would have: a statement or a connection
        // attempt swallowed by the black hole fails in seconds instead of holding its thread (and, for
        // Hikari's single connection-adder thread, the whole pool) until the kernel gives up.
        String via =
                withParam(PG.jdbcUrlVia("127.0.0.1", proxy.port()), "socketTimeout=3&connectTimeout=2&loginTimeout=2");
        // A short connection timeout: a connection attempt swallowed by the black hole holds up Hikari's
        // connection creation until it times out, which delays A's recovery (and teardown) after the heal.
        HikariDataSource aMain = pool("l06-a-main", via, 4, Duration.ofSeconds(1));
        HikariDataSource aCoord = pool("l06-a-coord", via, 4, Duration.ofSeconds(1));
        Baton a = start(nodeBuilder("l06-a", aMain).coordinationDataSource(aCoord));
        Baton b = start(nodeBuilder("l06-b", nodePool("l06-b")));
        Recorder ra = new Recorder();
        Recorder rb = new Recorder();
        a.leadership(NAME, fastLeadership(), idleTask(), ra).start();
        LeaseGrant ga = ra.awaitElected().grant();
        b.leadership(NAME, fastLeadership(), idleTask(), rb).start();
        // A protected write of A's while healthy commits.
        leases.fenced(ga, tx -> insertLedger(tx, ga));

        long holeAt = System.nanoTime();
        proxy.blackHole();
        Recorder.Event revoked;
        Recorder.Event elected;
        try {
            revoked = ra.awaitRevoked();
            elected = rb.awaitElected();
        } finally {
            proxy.heal();
        }
        assertThat(revoked.reason()).isEqualTo(RevocationReason.DEADLINE);
        assertThat(revoked.grant().generation()).isEqualTo(ga.generation());
        assertThat(elected.grant().generation()).isGreaterThan(ga.generation());
        assertThat(revoked.nanos()).as("A stepped down before B was elected").isLessThan(elected.nanos());
        System.out.printf(
                "L06: black hole -> A self-stop %.0f ms, -> B elected %.0f ms (gap %.0f ms)%n",
                ms(revoked.nanos() - holeAt), ms(elected.nanos() - holeAt), ms(elected.nanos() - revoked.nanos()));

        // After the partition heals, A's old grant cannot write, and wrote nothing more.
        assertThatThrownBy(() -> leases.fenced(ga, tx -> insertLedger(tx, ga))).isInstanceOf(LeaseLostException.class);
        // Through A's own pool: calls the black hole swallowed may hold its connections until their socket
        // timeout, so a borrow can time out first; once A reaches the database its write is rejected (never
        // committed: the ledger count below).
        await().atMost(WAIT)
                .untilAsserted(() -> assertThatThrownBy(() -> a.leases().fenced(ga, tx -> insertLedger(tx, ga)))
                        .isInstanceOf(LeaseLostException.class));
        assertThat(ledgerCount(ga.generation())).isEqualTo(1);
        LeaseInfo row = lease(NAME);
        assertThat(row.owner()).contains("l06-b");
        assertThat(row.generation()).isGreaterThan(ga.generation());
    }

    /**
     * L06 (pool hygiene): a renewal abandoned because the partition swallowed it must not leak its
     * coordination connection: the runner aborts it, and the pool must get the slot back (Hikari evicts the
     * connection when the aborted statement fails with SQLSTATE 08006). Otherwise a small coordination pool
     * would run dry after a few partitions and the node could never campaign again.
     *
     * <p>Protection removed to see it fail: the abort in {@code BoundedCalls.abortConnection()} (replaced by
     * nothing): the swallowed renewal then stayed blocked on the black-holed socket for ever, holding its
     * pooled connection, and the active count never went back to zero.
     */
    @Test
    void L06_abortedRenewalDoesNotLeakCoordinationConnection() throws Exception {
        FaultProxy proxy = closeLater(FaultProxy.start(PG.host(), PG.port()));
        // Login and connect timeouts as a real client has them: a connection attempt swallowed by the black hole
        // must not hold Hikari's single connection-adder thread (and so the pool) for ever.
        HikariDataSource aCoord = pool(
                "l06-leak-coord",
                withParam(PG.jdbcUrlVia("127.0.0.1", proxy.port()), "connectTimeout=2&loginTimeout=2"),
                3,
                Duration.ofSeconds(1));
        Baton a = start(nodeBuilder("l06-leak-a", nodePool("l06-leak-a"))
                .coordinationDataSource(aCoord)
                .notifications(NotificationMode.POLL)
                .nodeHeartbeat(Duration.ofMinutes(1)));
        Recorder ra = new Recorder();
        Leadership runner = a.leadership(NAME, fastLeadership(), idleTask(), ra).start();
        ra.awaitElected();
        proxy.blackHole();
        try {
            assertThat(ra.awaitRevoked().reason()).isEqualTo(RevocationReason.DEADLINE);
        } finally {
            proxy.heal();
        }
        ra.awaitElected(2); // healthy again: the lease expired and nobody else wanted it
        runner.stop();
        await().atMost(WAIT)
                .untilAsserted(() -> assertThat(aCoord.getHikariPoolMXBean().getActiveConnections())
                        .as("coordination connections still borrowed after stop()")
                        .isZero());
    }

    /**
     * L06 (the node's own maintenance term): A leads Baton's maintenance through a black-holed proxy whose
     * connections have no socket timeout (as the CLI's and most applications' pools have none), so a pass of
     * its rescuer waits on a socket that never answers. When A's term ends at its deadline, every maintenance
     * service's thread must end too: a term that cannot end holds the node's graceful stop (a chaos run saw
     * a SIGTERM wait 35 s for it) and its connection.
     *
     * <p>Protection removed to see it fail: the abort in {@code Service.stop()} ({@code calls.abort()} replaced
     * by null): the rescuer's thread stayed in {@code PGStream} reading the black-holed socket, and the await
     * for the maintenance threads to end timed out.
     */
    @Test
    void L06_blackHoledMaintenanceLeaderEndsItsServicesWithItsTerm() throws Exception {
        Set<Thread> before = maintenanceThreads();
        FaultProxy proxy = closeLater(FaultProxy.start(PG.host(), PG.port()));
        HikariDataSource aMain = warmPoolThrough(proxy, "l06-m-a-main");
        Baton a = maintenanceLeaderThrough(proxy, "l06-m-a", aMain);
        Set<Thread> services = new LinkedHashSet<>(maintenanceThreads());
        services.removeAll(before);
        assertThat(services).as("A's maintenance services").isNotEmpty();

        proxy.blackHole();
        try {
            await().atMost(WAIT).until(() -> services.stream().anyMatch(LeadershipFaultTest::readingFromTheServer));
            await().atMost(WAIT)
                    .untilAsserted(() -> assertThat(services.stream().filter(Thread::isAlive))
                            .as("A's maintenance threads after its term's deadline")
                            .isEmpty());
        } finally {
            proxy.heal();
        }
        // Healthy again: A leads its maintenance again, with new service threads. (Calls of A's other services
        // that the black hole swallowed stay stuck: this proxy drops what it held, where a real network's TCP
        // would deliver it after the heal; nothing stops those services here, so nothing aborts them.)
        await().atMost(WAIT)
                .until(() -> maintenanceThreads().stream().anyMatch(t -> !before.contains(t) && !services.contains(t)));
        assertThat(a.jobs().enqueue(JobRequest.of("l06", Map.of())).id()).isPositive();
    }

    /**
     * L06 (a graceful stop during the partition): a node whose every connection is black-holed, with no socket
     * timeout, is closed while its claimer waits on a socket that never answers, and its listening session's
     * UNLISTEN will.
     * {@code close()} must return (the supervisor's grace is finite; a stop that hangs ends in SIGKILL) and
     * leave none of its service threads behind.
     *
     * <p>Protection removed to see it fail: the abort in {@code JobProducer.awaitClaimInFlight()}
     * ({@code calls().abortCurrent()} replaced by null): close() stayed in the wait for the claim in flight, the
     * await timed out, and the teardown's own close() then hung behind it (stopped by hand). Before this test,
     * that wait had no bound at all: a node black-holed mid-claim never finished a graceful stop or a drain.
     * And the notifier's session left out of its service's calls in flight ({@code calls().begin} removed in
     * {@code Notifier.runOnce}): its UNLISTEN held close() for the stop's 30 s more, and the await timed out.
     */
    @Test
    void L06_aBlackHoledNodeClosesWithoutWaitingForItsSockets() throws Exception {
        Set<Thread> before = serviceThreads();
        FaultProxy proxy = closeLater(FaultProxy.start(PG.host(), PG.port()));
        HikariDataSource aMain = warmPoolThrough(proxy, "l06-c-a-main");
        Baton a = maintenanceLeaderThrough(proxy, "l06-c-a", aMain); // LISTEN through the proxy too (unless pooled)
        Set<Thread> services = new LinkedHashSet<>(serviceThreads());
        services.removeAll(before);

        // The claimer's next claim goes out into the black hole (on the connection its last claim returned
        // to the pool a moment ago, which the pool hands out again without a check).
        PausePoints.Pause claim = points.arm(Hooks.Points.JOB_BEFORE_CLAIM);
        claim.awaitReached(WAIT);
        proxy.blackHole();
        try {
            claim.release();
            await().atMost(WAIT).until(() -> readingFromTheServer(claim.thread()));
            Thread closing = new Thread(a::close, "l06-closing");
            closing.start();
            await().atMost(WAIT)
                    .untilAsserted(() -> assertThat(closing.isAlive())
                            .as("close() still running")
                            .isFalse());
            assertThat(services.stream().filter(Thread::isAlive))
                    .as("service threads after close()")
                    .isEmpty();
        } finally {
            proxy.heal();
        }
    }

    /** Every thread of a Baton background service (maintenance, claims, completions, heartbeats). */
    private static Set<Thread> serviceThreads() {
        Set<Thread> found = new LinkedHashSet<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.isAlive()
                    && (MAINTENANCE.contains(t.getName())
                            || t.getName().startsWith("baton-claim-")
                            || t.getName().equals("baton-job-completer"))) {
                found.add(t);
            }
        }
        return found;
    }

    /** The proxy's address, connecting and logging in within 2 s, but with no socket timeout (PgJDBC's default). */
    private static String throughWithoutSocketTimeout(FaultProxy proxy) {
        return withParam(PG.jdbcUrlVia("127.0.0.1", proxy.port()), "connectTimeout=2&loginTimeout=2");
    }

    /**
     * A pool of 8 connections through {@code proxy}, all open before the test goes on: once the black hole
     * opens, no new connection can log in, so each service must find one of its own, most recently used by
     * its thread (which HikariCP hands back without a validation query), for its pass to reach the database
     * and hang there. With the few connections a polling node keeps open (behind PgBouncer) one stuck service
     * held the only connection and the others only timed out waiting for the pool.
     */
    private HikariDataSource warmPoolThrough(FaultProxy proxy, String name) {
        HikariConfig c = new HikariConfig();
        c.setJdbcUrl(throughWithoutSocketTimeout(proxy));
        c.setPoolName(name);
        c.setMaximumPoolSize(8);
        c.setMinimumIdle(8);
        c.setConnectionTimeout(1000);
        c.setValidationTimeout(250);
        HikariDataSource pool = closeLater(new HikariDataSource(c));
        await().atMost(WAIT).until(() -> pool.getHikariPoolMXBean().getTotalConnections() == 8);
        return pool;
    }

    /**
     * Node {@code id}, every connection through {@code proxy} ({@code main} and a coordination pool), running a
     * worker of one slot that claims and rescues often, started and leading Baton's maintenance.
     */
    private Baton maintenanceLeaderThrough(FaultProxy proxy, String id, HikariDataSource main) {
        HikariDataSource coordination =
                pool(id + "-coord", throughWithoutSocketTimeout(proxy), 4, Duration.ofSeconds(1));
        Baton node = start(nodeBuilder(id, main)
                .coordinationDataSource(coordination)
                .maintenance(fastLeadership())
                .worker(WorkerConfig.builder()
                        .queue("default", 1)
                        .pollInterval(Duration.ofMillis(50))
                        .rescueInterval(Duration.ofMillis(100))
                        .build())
                .handle("l06", Map.class, (payload, ctx) -> {}));
        await().atMost(WAIT)
                .ignoreExceptions()
                .until(() ->
                        lease(MaintenanceTask.LEASE).owner().filter(id::equals).isPresent());
        return node;
    }

    private static final Set<String> MAINTENANCE =
            Set.of("baton-rescuer", "baton-pruner", "baton-coordination-purger", "baton-scheduler");

    private static Set<Thread> maintenanceThreads() {
        Set<Thread> found = new LinkedHashSet<>();
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.isAlive() && MAINTENANCE.contains(t.getName())) {
                found.add(t);
            }
        }
        return found;
    }

    /** The thread waits in the PostgreSQL driver for an answer. */
    private static boolean readingFromTheServer(Thread t) {
        for (StackTraceElement e : t.getStackTrace()) {
            if (e.getClassName().startsWith("org.postgresql.core.")) {
                return true;
            }
        }
        return false;
    }

    /**
     * L14 (a): the application pool is exhausted, but renewals use their own coordination data source.
     *
     * <p>The application pool is exhausted before the runner starts; the runner borrows from its own
     * coordination pool call by call.
     *
     * <p>Protection removed to see it fail: the separate coordination path (the runner's {@code BoundedCalls}
     * built on {@code writes}, the application pool, instead of {@code coordination}). A was then never
     * elected (every campaign attempt timed out waiting for the exhausted pool) and the await failed.
     */
    @Test
    void L14_exhaustedApplicationPoolDoesNotStarveRenewals() throws Exception {
        createLedger();
        HikariDataSource app = pool("l14-app", PG.jdbcUrl(), 2, Duration.ofMillis(250));
        HikariDataSource coord = pool("l14-coord", PG.jdbcUrl(), 3);
        Baton a = start(nodeBuilder("l14-a", app).coordinationDataSource(coord));
        Connection held1 = closeLater(app.getConnection());
        Connection held2 = closeLater(app.getConnection());
        assertThatThrownBy(app::getConnection).as("application pool exhausted").isInstanceOf(SQLException.class);

        AtomicInteger starved = new AtomicInteger();
        AtomicInteger written = new AtomicInteger();
        Recorder ra = new Recorder();
        a.leadership(
                        NAME,
                        fastLeadership(),
                        ctx -> {
                            while (!ctx.isCancelled()) {
                                try {
                                    ctx.fenced(tx -> insertLedger(tx, ctx.grant()));
                                    written.incrementAndGet();
                                } catch (LeaseLostException e) {
                                    throw e;
                                } catch (BatonException e) {
                                    starved.incrementAndGet(); // no connection for the application's write
                                }
                                ctx.awaitCancellation(Duration.ofMillis(20));
                            }
                        },
                        ra)
                .start();
        LeaseGrant g = ra.awaitElected().grant();

        Set<Instant> renewals = new TreeSet<>();
        await().atMost(WAIT).pollInterval(Duration.ofMillis(20)).until(() -> {
            LeaseInfo info = lease(NAME);
            assertThat(info.owner()).contains("l14-a");
            assertThat(info.generation()).isEqualTo(g.generation());
            if (info.renewedAt().isAfter(g.acquiredAt())) {
                renewals.add(info.renewedAt());
            }
            return renewals.size() >= 3 && starved.get() >= 1;
        });
        assertThat(ra.revocations())
                .as("no revocation while the application pool is exhausted")
                .isEmpty();
        assertThat(written.get()).isZero();
        System.out.printf(
                "L14a: %d renewals observed while %d application writes found no connection%n",
                renewals.size(), starved.get());

        held1.close();
        held2.close();
        await().atMost(WAIT).until(() -> written.get() >= 1);
        assertThat(ra.revocations()).isEmpty();
    }

    /**
     * L14 (b): a slow database. The test locks A's lease row, so A's renewals block inside PostgreSQL;
     * each renewal call is bounded, so A's local deadline still fires, while the row is still locked and
     * before the lease's expiry on the database clock; later writes with A's grant are rejected.
     *
     * <p>Protection removed to see it fail: the bounds on the renewal call in {@code Leadership.lead()} (the
     * client-side bound of {@code calls.call(..)} set to "forever" and the server-side query timeout passed
     * to {@code leases.renew} set to 0). A's control thread then hung in the blocked UPDATE and no onRevoked
     * arrived while the row was locked: the await timed out. (Removing only one of the two bounds is not
     * enough to fail this test: either one ends the blocked call.)
     */
    @Test
    void L14_blockedRenewalRevokesByDeadlineWhileRowIsLocked() throws Exception {
        BlockedRenewal run = blockedRenewalScenario();
        LeaseGrant ga = run.ga();
        assertThat(run.revoked().reason()).isEqualTo(RevocationReason.DEADLINE);
        assertThat(run.rowWhileLocked().owner()).contains("l14-a");
        assertThat(run.rowWhileLocked().generation()).isEqualTo(ga.generation());
        assertThat(run.bElectedWhileLocked())
                .as("B cannot be elected while the row is locked")
                .isFalse();
        assertThat(run.dbTimeAtRevocation())
                .as("A stepped down before its lease expired on the database clock")
                .isBefore(run.rowWhileLocked().expiresAt());
        System.out.printf(
                "L14b: row locked -> A revoked (DEADLINE) after %.0f ms; lease still valid for %d ms%n",
                ms(run.revoked().nanos() - run.lockedAt()),
                Duration.between(run.dbTimeAtRevocation(), run.rowWhileLocked().expiresAt())
                        .toMillis());

        LeaseGrant gb = run.rb().awaitElected().grant();
        assertThat(gb.generation()).isGreaterThan(ga.generation());
        assertThatThrownBy(() -> leases.fenced(ga, tx -> insertLedger(tx, ga))).isInstanceOf(LeaseLostException.class);
        assertThat(ledgerCount(ga.generation())).isZero();
        System.out.printf(
                "L14b: B elected with generation %d (A had %d); history %s%n",
                gb.generation(), ga.generation(), leases.history(NAME, 10));
    }

    /**
     * L14 (b), what happens after the lock is gone: every coordination call the runners gave up on while
     * blocked (each bounded, then its connection aborted) must not run later in PostgreSQL. Protection
     * checked: the transaction-local statement_timeout sent with each bounded call (Jdbc.prepareBounded).
     * With only the client-side bound (and a PgJDBC query timeout), this failed in 3 of 3 runs:
     * a candidate's abandoned acquisition still executed once the row lock was released, granting a
     * generation to B's owner id that B's runner never learned of (B's runner then re-acquired its own
     * lease at the next generation); abandoned renewals and releases of A ran too. Not a safety problem
     * (nobody holds a grant object for the unknown generation), but generations are burnt, an abandoned
     * renewal can extend a lease whose runner already stepped down, and the history shows owners that
     * never led.
     */
    @Test
    void L14_abandonedCoordinationCallsDoNotRunLater() throws Exception {
        BlockedRenewal run = blockedRenewalScenario();
        run.rb().awaitElected();
        List<Long> reported = new ArrayList<>();
        run.ra().elections().forEach(e -> reported.add(e.grant().generation()));
        run.rb().elections().forEach(e -> reported.add(e.grant().generation()));
        List<LeaseHistoryEntry> history = leases.history(NAME, 100);
        System.out.println("L14b-abandoned: reported " + reported + ", history " + history);
        assertThat(history)
                .as("every generation granted was reported to a runner; history " + history)
                .allSatisfy(h -> assertThat(reported).contains(h.generation()));
    }

    /**
     * Two retries of one acquisition (its answer lost twice) wait on the lease row (here: the test holds it
     * FOR UPDATE); when it frees, both succeed, one after the other (a re-grant to the acquisition that holds
     * it is allowed). The history must then show the first of them as ended: at most one generation of a
     * lease is open at a time. Protection checked: Leases#closeEarlierHistory; without it the first
     * generation stayed open (every run).
     */
    @Test
    void historyClosesEveryGenerationWhenRetriesOfOneAcquisitionRace() throws Exception {
        String acquisition = Leases.newAcquisition();
        leases.attempt(NAME, "racer", Duration.ofSeconds(30), null, acquisition)
                .grant()
                .orElseThrow();
        java.util.concurrent.ExecutorService two = java.util.concurrent.Executors.newFixedThreadPool(2);
        try (Connection locker = PG.connect()) {
            locker.setAutoCommit(false);
            try (PreparedStatement ps =
                    locker.prepareStatement("SELECT generation FROM " + schema + ".lease WHERE name = ? FOR UPDATE")) {
                ps.setString(1, NAME);
                ps.executeQuery().close();
            }
            List<java.util.concurrent.Future<java.util.Optional<LeaseGrant>>> results = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                results.add(two.submit(() -> leases.attempt(NAME, "racer", Duration.ofSeconds(30), null, acquisition)
                        .grant()));
            }
            await().atMost(WAIT)
                    .pollInterval(Duration.ofMillis(5))
                    .until(() -> count(
                                    "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND position('\""
                                            + schema + "\".lease l' in query) > 0")
                            >= 2);
            locker.rollback();
            for (java.util.concurrent.Future<java.util.Optional<LeaseGrant>> f : results) {
                assertThat(f.get()).isPresent();
            }
        } finally {
            two.shutdownNow();
        }
        List<LeaseHistoryEntry> history = leases.history(NAME, 100);
        assertThat(history).hasSize(3);
        assertThat(history.stream().filter(h -> h.endedAt().isEmpty()))
                .as("open generations in " + history)
                .hasSize(1);
    }

    private record BlockedRenewal(
            LeaseGrant ga,
            Recorder ra,
            Recorder rb,
            Recorder.Event revoked,
            LeaseInfo rowWhileLocked,
            boolean bElectedWhileLocked,
            Instant dbTimeAtRevocation,
            long lockedAt) {}

    /**
     * A leads, B campaigns; the test locks the lease row (SELECT ... FOR UPDATE in an open transaction) until
     * A has been revoked, stops A (so it cannot win the lease back), then rolls back.
     */
    private BlockedRenewal blockedRenewalScenario() throws Exception {
        createLedger();
        Baton a = start(nodeBuilder("l14-a", nodePool("l14-a")));
        Baton b = start(nodeBuilder("l14-b", nodePool("l14-b")));
        Recorder ra = new Recorder();
        Recorder rb = new Recorder();
        List<Instant> dbTimeAtRevocation = new CopyOnWriteArrayList<>();
        ra.alsoOnRevoke(() -> {
            try (Connection c = PG.connect();
                    ResultSet rs = c.createStatement().executeQuery("SELECT clock_timestamp()")) {
                rs.next();
                dbTimeAtRevocation.add(rs.getTimestamp(1).toInstant());
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
        });
        Leadership runnerA =
                a.leadership(NAME, fastLeadership(), idleTask(), ra).start();
        LeaseGrant ga = ra.awaitElected().grant();
        b.leadership(NAME, fastLeadership(), idleTask(), rb).start();

        Recorder.Event revoked;
        LeaseInfo rowWhileLocked;
        boolean bElected;
        long lockedAt;
        try (Connection locker = PG.connect()) {
            locker.setAutoCommit(false);
            try (PreparedStatement ps =
                    locker.prepareStatement("SELECT generation FROM " + schema + ".lease WHERE name = ? FOR UPDATE")) {
                ps.setString(1, NAME);
                ps.executeQuery().close();
            }
            lockedAt = System.nanoTime();
            revoked = ra.awaitRevoked();
            // Still inside the locking transaction: nobody could have taken over yet.
            rowWhileLocked = lease(NAME);
            bElected = !rb.elections().isEmpty();
            runnerA.stop(); // A must not win the lease back once the lock is gone
            locker.rollback();
        }
        assertThat(dbTimeAtRevocation).hasSize(1);
        return new BlockedRenewal(ga, ra, rb, revoked, rowWhileLocked, bElected, dbTimeAtRevocation.get(0), lockedAt);
    }

    // ------------------------------------------------------------------------------------------ L16

    /**
     * L16 (a): baton-core's main classes never read the wall clock, so stepping it (±1 h) cannot affect
     * them. The check parses each class file's constant pool and resolves every field/method reference
     * to owner.name(descriptor), every class reference, and every descriptor (UTF8 entries that are not
     * string literals); it flags System.currentTimeMillis, any {@code now} of java.time, any use of
     * java.time.Clock / InstantSource, the no-argument {@code new Date()} and Calendar.getInstance. Because
     * it resolves references, a string literal such as "currentTimeMillis" in a message is not a false
     * positive, and a method reference ({@code System::currentTimeMillis}) is not a false negative (its
     * MethodHandle points at the same Methodref). The fixtures below prove both.
     *
     * <p>Protection removed to see it fail: added {@code Instant.now()} to a log statement in
     * {@code Leadership.lead()}; the test reported {@code dev/baton/Leadership: java/time/Instant.now()}.
     */
    @Test
    void L16_coreNeverReadsTheWallClock() throws Exception {
        Path location = Path.of(
                Leases.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        Map<String, byte[]> classes = classFiles(location);
        assertThat(classes)
                .as("core classes found under " + location)
                .containsKeys("dev/baton/Leases", "dev/baton/Leadership", "dev/baton/internal/node/NodeRegistrar");
        List<String> violations = new ArrayList<>();
        classes.forEach((name, bytes) -> wallClockUses(bytes).forEach(v -> violations.add(name + ": " + v)));
        System.out.printf("L16a: scanned %d classes under %s%n", classes.size(), location);
        assertThat(violations).as("wall-clock reads in baton-core").isEmpty();
    }

    /** The scanner finds what it must and nothing else. */
    @Test
    void L16_wallClockScannerSelfCheck() throws Exception {
        assertThat(wallClockUses(bytesOf(WallClockFixture.class)))
                .contains(
                        "java/lang/System.currentTimeMillis()J",
                        "java/time/Instant.now()Ljava/time/Instant;",
                        "java/time/Clock.systemUTC()Ljava/time/Clock;",
                        "java/time/Clock.millis()J",
                        "class java/time/Clock",
                        "java/util/Date.<init>()V",
                        "java/time/LocalDateTime.now()Ljava/time/LocalDateTime;",
                        "descriptor ()Ljava/time/Clock;");
        assertThat(wallClockUses(bytesOf(NoWallClockFixture.class))).isEmpty();
    }

    /**
     * L16 (b): node A runs with a monotonic clock twice as fast as real time, node B with the real one.
     * Both compete for the lease while the leader does fenced ledger writes, and the leaders are stopped
     * a few times. The fast clock only makes A step down earlier; the history of grants and committed
     * writes passes the fenced-mutex check. The tasks are deliberately slow to stop: after cancellation
     * they keep writing with their grant (bypassing the runner's local refusal) until the database
     * rejects them, so safety rests on the database fence, not on timing.
     *
     * <p>Protection removed to see it fail: the generation/expiry condition of the fence (lease.sql
     * {@code fence}: {@code AND l.owner_id = ? AND l.generation = ? AND l.expires_at > clock_timestamp()}
     * replaced by a check of the name only, parameters kept). The stale tails then committed after the next
     * leader's writes and the checker reported R3 violations (generations going back).
     */
    @Test
    void L16_fastMonotonicClockOnlyMakesLeadersStepDownEarlier() throws Exception {
        createLedger();
        long base = System.nanoTime();
        LongSupplier fast = () -> base + 2 * (System.nanoTime() - base);
        Baton a = node("l16-a", pool, fast);
        Baton b = node("l16-b", pool, System::nanoTime);
        LeadershipConfig config = LeadershipConfig.builder()
                .leaseTtl(Duration.ofSeconds(1))
                .renewInterval(Duration.ofMillis(200))
                .pollInterval(Duration.ofMillis(100))
                .stopTimeout(Duration.ofMillis(300))
                .build();
        HistoryRecorder history = new HistoryRecorder();
        Map<String, Baton> nodes = Map.of("l16-a", a, "l16-b", b);
        Map<String, Leadership> runners = new HashMap<>();
        List<RevocationReason> reasons = new CopyOnWriteArrayList<>();
        AtomicInteger rejectedTails = new AtomicInteger();
        LeadershipListener listener = new LeadershipListener() {
            @Override
            public void onElected(LeaseGrant grant) {
                history.grant(grant.name(), grant.generation(), grant.owner());
            }

            @Override
            public void onRevoked(LeaseGrant grant, RevocationReason reason) {
                reasons.add(reason);
            }
        };
        LeaderTask task = ctx -> {
            LeaseGrant g = ctx.grant();
            while (!ctx.isCancelled()) {
                try {
                    ctx.fenced(tx -> insertLedger(tx, g));
                } catch (LeaseLostException e) {
                    break;
                }
                ctx.awaitCancellation(Duration.ofMillis(5));
            }
            // A slow-to-stop task: keeps writing with its grant until the database says no.
            for (int i = 0; i < 10_000; i++) {
                Thread.interrupted();
                try {
                    leases.fenced(g, tx -> insertLedger(tx, g));
                } catch (LeaseLostException e) {
                    rejectedTails.incrementAndGet();
                    return;
                } catch (BatonException e) {
                    // e.g. interrupted while borrowing a connection; try again
                }
            }
        };
        for (String id : nodes.keySet()) {
            runners.put(
                    id, nodes.get(id).leadership(NAME, config, task, listener).start());
        }
        long started = System.nanoTime();
        await().atMost(WAIT).until(() -> !history.grants().isEmpty());
        for (int stop = 0; stop < 4; stop++) {
            dev.baton.testkit.Grant current = history.grants().stream()
                    .max((x, y) -> Long.compare(x.generation(), y.generation()))
                    .orElseThrow();
            await().atMost(WAIT).until(() -> ledgerCount(current.generation()) >= 5);
            String leader = current.owner();
            runners.get(leader).stop();
            // The other node takes over; only then does the stopped node campaign again (so leadership
            // alternates between the fast and the real clock also when only polling wakes candidates).
            await().atMost(WAIT)
                    .until(() -> history.grants().stream().anyMatch(gr -> gr.generation() > current.generation()));
            runners.put(
                    leader,
                    nodes.get(leader).leadership(NAME, config, task, listener).start());
        }
        runners.values().forEach(Leadership::stop);

        for (Object[] row : ledgerRows()) {
            history.write((Long) row[0], (String) row[1], (Long) row[2], (String) row[3]);
        }
        CheckResult result = history.check();
        System.out.printf(
                "L16b: %d grants, %d committed writes, %d stale tails rejected, revocations %s in %.0f ms%n",
                history.grants().size(),
                history.writes().size(),
                rejectedTails.get(),
                reasons,
                ms(System.nanoTime() - started));
        assertThat(result.violations()).isEmpty();
        assertThat(history.grants()).hasSizeGreaterThanOrEqualTo(5);
        assertThat(history.grants().stream().map(gr -> gr.owner()).distinct()).contains("l16-a", "l16-b");
        assertThat(history.writes()).hasSizeGreaterThanOrEqualTo(20);
    }

    // ------------------------------------------------------------------- constant-pool scanner

    static Map<String, byte[]> classFiles(Path location) throws IOException {
        Map<String, byte[]> out = new HashMap<>();
        if (Files.isDirectory(location)) {
            try (Stream<Path> files = Files.walk(location)) {
                for (Path p : (Iterable<Path>) files.filter(f -> f.toString().endsWith(".class"))::iterator) {
                    String rel = location.relativize(p).toString().replace('\\', '/');
                    out.put(rel.substring(0, rel.length() - ".class".length()), Files.readAllBytes(p));
                }
            }
        } else {
            try (JarFile jar = new JarFile(location.toFile())) {
                for (JarEntry e : (Iterable<JarEntry>) jar.stream()::iterator) {
                    if (e.getName().endsWith(".class") && !e.getName().startsWith("META-INF/")) {
                        try (InputStream in = jar.getInputStream(e)) {
                            out.put(e.getName().substring(0, e.getName().length() - 6), in.readAllBytes());
                        }
                    }
                }
            }
        }
        return out;
    }

    static byte[] bytesOf(Class<?> c) throws IOException {
        try (InputStream in = c.getResourceAsStream("/" + c.getName().replace('.', '/') + ".class")) {
            return in.readAllBytes();
        }
    }

    private static final Set<String> TIME_CLASSES_WITH_NOW = Set.of(
            "java/time/Instant",
            "java/time/LocalDateTime",
            "java/time/LocalDate",
            "java/time/LocalTime",
            "java/time/OffsetDateTime",
            "java/time/OffsetTime",
            "java/time/ZonedDateTime",
            "java/time/Year",
            "java/time/YearMonth",
            "java/time/MonthDay");
    private static final Set<String> CLOCK_CLASSES = Set.of("java/time/Clock", "java/time/InstantSource");

    /** Wall-clock uses in one class file, as "owner.name(descriptor)" or "class X" or "descriptor ...". */
    static Set<String> wallClockUses(byte[] classFile) {
        try (DataInputStream in = new DataInputStream(new java.io.ByteArrayInputStream(classFile))) {
            if (in.readInt() != 0xCAFEBABE) {
                throw new IllegalArgumentException("not a class file");
            }
            in.readUnsignedShort(); // minor
            in.readUnsignedShort(); // major
            int count = in.readUnsignedShort();
            int[] tag = new int[count];
            String[] utf = new String[count];
            int[] a = new int[count];
            int[] b = new int[count];
            for (int i = 1; i < count; i++) {
                tag[i] = in.readUnsignedByte();
                switch (tag[i]) {
                    case 1 -> utf[i] = in.readUTF(); // modified UTF-8 with a u2 length, as in class files
                    case 3, 4 -> in.skipNBytes(4);
                    case 5, 6 -> {
                        in.skipNBytes(8);
                        i++; // takes two slots
                    }
                    case 7, 8, 16, 19, 20 -> a[i] = in.readUnsignedShort();
                    case 9, 10, 11, 12, 17, 18 -> {
                        a[i] = in.readUnsignedShort();
                        b[i] = in.readUnsignedShort();
                    }
                    case 15 -> {
                        in.readUnsignedByte();
                        a[i] = in.readUnsignedShort();
                    }
                    default -> throw new IllegalArgumentException("unknown constant pool tag " + tag[i] + " at " + i);
                }
            }
            Set<String> literals = new java.util.HashSet<>();
            for (int i = 1; i < count; i++) {
                if (tag[i] == 8) {
                    literals.add(String.valueOf(a[i]));
                }
            }
            Set<String> found = new LinkedHashSet<>();
            for (int i = 1; i < count; i++) {
                if (tag[i] == 9 || tag[i] == 10 || tag[i] == 11) {
                    String owner = utf[a[a[i]]];
                    String name = utf[a[b[i]]];
                    String desc = utf[b[b[i]]];
                    boolean bad = (owner.equals("java/lang/System") && name.equals("currentTimeMillis"))
                            || (TIME_CLASSES_WITH_NOW.contains(owner) && name.equals("now"))
                            || CLOCK_CLASSES.contains(owner)
                            || (owner.equals("java/util/Date") && name.equals("<init>") && desc.equals("()V"))
                            || (owner.equals("java/util/Calendar") && name.equals("getInstance"));
                    if (bad) {
                        found.add(owner + "." + name + desc);
                    }
                } else if (tag[i] == 7 && CLOCK_CLASSES.contains(utf[a[i]])) {
                    found.add("class " + utf[a[i]]);
                }
            }
            for (int i = 1; i < count; i++) {
                if (tag[i] == 1 && !literals.contains(String.valueOf(i))) {
                    for (String clock : CLOCK_CLASSES) {
                        if (utf[i].contains("L" + clock + ";")) {
                            found.add("descriptor " + utf[i]);
                        }
                    }
                }
            }
            return found;
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Uses the wall clock in every way the scanner must catch. */
    @SuppressWarnings({"unused", "JavaUtilDate"})
    static final class WallClockFixture {
        long a() {
            return System.currentTimeMillis();
        }

        Object b() {
            return Instant.now();
        }

        long c() {
            return Clock.systemUTC().millis();
        }

        Object d() {
            return new Date();
        }

        Object e() {
            return java.time.LocalDateTime.now();
        }

        LongSupplier f() {
            return System::currentTimeMillis;
        }
    }

    /** Mentions the wall clock only in strings and uses the monotonic clock: nothing to report. */
    @SuppressWarnings("unused")
    static final class NoWallClockFixture {
        String a() {
            return "currentTimeMillis java/time/Clock Ljava/time/Clock; Instant.now";
        }

        long b() {
            return System.nanoTime();
        }

        Object c(long millis) {
            return new Date(millis).toInstant().plus(Duration.ofSeconds(1));
        }

        Object d(URI u) {
            return u;
        }
    }
}
