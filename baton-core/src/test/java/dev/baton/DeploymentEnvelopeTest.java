package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.baton.testkit.Lending;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;

/**
 * E04: the application's pool configured as users configure it: {@code autoCommit=false} (the usual JPA
 * tuning), default isolation REPEATABLE READ, 2 connections, 1 s connection timeout. Every operation
 * commits what it reports, with the same outcomes as the defaults; Baton leaves no session state behind
 * on the connections it borrows; a pool Baton cannot write through is refused at start with the reason.
 * (The whole L/J/S/P suite also runs on such pools in the CI mode {@code BATON_POOL_PROFILE=user}.)
 */
class DeploymentEnvelopeTest extends JobBehaviourTestBase {

    /**
     * The review's reproduction, as a new user would run it. Protection removed and seen failing:
     * {@code Db.callOn} running the work as it is whatever the connection's auto-commit (the code before
     * E04): 0 of 200 jobs ran (each enqueue returned an id for a row rolled back when the connection went
     * back to the pool), the limiter allowed 40 of 40 at a limit of 10, the dedupe said "first" three
     * times, the minted token could not be consumed.
     */
    @Test
    void E04_everyOperationCommitsWhatItReportsOnAJpaTunedPool() throws Exception {
        HikariDataSource app = userPool("e04-app");
        AtomicInteger ran = new AtomicInteger();
        Baton node = start(nodeBuilder("e04-node", app)
                .worker(fastWorker("default", 4).build())
                .handle("work", Item.class, (item, ctx) -> ran.incrementAndGet()));
        Jobs jobs = node.jobs();
        List<Long> ids = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            ids.add(jobs.enqueue(JobRequest.of("work", new Item("j" + i))).id());
        }
        org.awaitility.Awaitility.await()
                .atMost(WAIT)
                .pollInterval(Duration.ofMillis(50))
                .until(() -> count("SELECT count(*) FROM " + schema + ".job WHERE state = 'succeeded'") == 200);
        assertThat(ran.get()).isEqualTo(200);
        assertThat(ids).doesNotHaveDuplicates();

        Coordination c = node.coordination();
        RateLimiter limiter = c.rateLimiter("login", 10, Duration.ofMinutes(1), 1);
        int allowed = 0;
        for (int i = 0; i < 40; i++) {
            allowed += limiter.tryAcquire("10.0.0.1").allowed() ? 1 : 0;
        }
        assertThat(allowed).as("allowed at a limit of 10").isEqualTo(10);
        assertThat(c.firstDelivery("github", "delivery-1", Duration.ofHours(1))).isTrue();
        assertThat(c.firstDelivery("github", "delivery-1", Duration.ofHours(1))).isFalse();
        assertThat(c.firstDelivery("github", "delivery-1", Duration.ofHours(1))).isFalse();
        String token = c.tokens().mint("reset", "user-1", Duration.ofMinutes(5));
        assertThat(c.tokens().consume("reset", token)).contains("user-1");
        assertThat(c.tokens().consume("reset", token)).isEmpty();
        assertThat(c.fallbacks()).isZero();

        // And the view from a plain connection agrees: the rows are there.
        assertThat(count("SELECT count(*) FROM " + schema + ".job WHERE state = 'succeeded'"))
                .isEqualTo(200);
        assertThat(count("SELECT count(*) FROM " + schema + ".inbound_delivery"))
                .isEqualTo(1);
        assertThat(count("SELECT count(*) FROM " + schema + ".rate_limit")).isEqualTo(1);
    }

    /**
     * L18 on that pool: withLease from 6 threads of one node has one holder at a time. Protection removed
     * and seen failing: the per-acquisition re-grant (LeaseInProcessTest's): the five other threads were
     * let in beside the first ("most" was 6).
     */
    @Test
    void E04_withLeaseFromSixThreadsHasOneHolderOnAJpaTunedPool() throws Exception {
        Baton node = start(nodeBuilder("e04-lease", userPool("e04-lease")));
        AtomicInteger holders = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        closeLater(release::countDown);
        ExecutorService six = Executors.newFixedThreadPool(6);
        closeLater(six::shutdownNow);
        List<Future<Optional<Integer>>> all = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            Duration maxWait = i == 0 ? WAIT : Duration.ofMillis(300);
            all.add(six.submit(() -> node.coordination()
                    .withLease("refresh", Duration.ofSeconds(30), maxWait, Duration.ofMillis(50), g -> {
                        most.accumulateAndGet(holders.incrementAndGet(), Math::max);
                        inside.countDown();
                        release.await(WAIT.toMillis(), TimeUnit.MILLISECONDS);
                        holders.decrementAndGet();
                        return 1;
                    })));
            if (i == 0) {
                assertThat(inside.await(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isTrue();
            }
        }
        for (int i = 1; i < 6; i++) {
            assertThat(all.get(i).get(WAIT.toMillis(), TimeUnit.MILLISECONDS)).isEmpty();
        }
        release.countDown();
        assertThat(all.get(0).get(WAIT.toMillis(), TimeUnit.MILLISECONDS)).contains(1);
        assertThat(most.get()).isEqualTo(1);
    }

    /**
     * Checked two ways: the calls Baton makes on the connections (a session-level isolation change, a
     * connection given back with another auto-commit mode), and, on a direct connection to the server,
     * every setting the session itself changed and every LISTEN left behind, compared before and after.
     * Protections removed and seen failing: {@code withClaimLock} switching isolation with
     * {@code Connection.setTransactionIsolation} (a session-level SET that a transaction-pooling PgBouncer
     * leaks to other clients) and restoring it afterwards, as before E04: the recorder saw the call; the
     * fence's {@code set_config('idle_in_transaction_session_timeout', ..., true)} made session-wide
     * ({@code false}): the connection came back with the setting changed.
     */
    @Test
    void E04_batonLeavesNoSessionStateOnTheConnectionsItBorrows() throws Exception {
        createLedger();
        HikariDataSource app = userPool("e04-spy");
        Map<Integer, List<String>> before = sessionState(app);
        Recording spy = new Recording(app);
        DataSource ds = spy.ds;
        Baton node = start(nodeBuilder("e04-spy", ds)
                .notifications(NotificationMode.POLL)
                .worker(fastWorker("default", 2).build())
                .handle("work", Item.class, (item, ctx) -> ctx.transaction(tx -> insertEffect(tx))));
        Coordination c = node.coordination();
        long job = node.jobs().enqueue(JobRequest.of("work", new Item("w"))).id();
        org.awaitility.Awaitility.await()
                .atMost(WAIT)
                .until(() -> row(job).state().equals("succeeded"));
        assertThat(c.withClaimLock(List.of("claim:a"), Duration.ofSeconds(1), claim -> 1))
                .contains(1);
        try (ConcurrencyCap.Permit p = c.concurrencyCap("cap", 1, Duration.ofSeconds(30), 0)
                .tryAcquire("k")
                .orElseThrow()) {
            assertThat(p.renew()).isTrue();
        }
        c.rateLimiter("rl", 5, Duration.ofSeconds(1), 1).tryAcquire("k");
        c.firstDelivery("src", "d", Duration.ofMinutes(1));
        c.tokens().consume("p", c.tokens().mint("p", null, Duration.ofMinutes(1)));
        LeaseGrant g = node.leases()
                .tryAcquire("e04", "e04-spy", Duration.ofSeconds(10))
                .orElseThrow();
        node.leases().fenced(ds, g, tx -> insertLedger(tx, g));
        node.leases().release(g);

        assertThat(spy.violations).as("session state changed and not restored").isEmpty();
        assertThat(spy.borrowed.get()).isGreaterThan(10);
        if (!PG.pooled()) { // through a transaction pooler a client connection has no server session of its own
            Map<Integer, List<String>> after = sessionState(app);
            assertThat(after.keySet()).as("the same server sessions").isEqualTo(before.keySet());
            assertThat(after)
                    .as("settings and LISTENs of each session, before and after")
                    .isEqualTo(before);
        }
    }

    /**
     * Per server session of the pool (its backend pid), the settings the session changed itself
     * ({@code source = 'session'}) and its LISTEN channels: all of the pool's connections at once.
     */
    private static Map<Integer, List<String>> sessionState(HikariDataSource pool) throws SQLException {
        Map<Integer, List<String>> state = new java.util.TreeMap<>();
        List<Connection> held = new ArrayList<>();
        try {
            for (int i = 0; i < pool.getMaximumPoolSize(); i++) {
                Connection c = pool.getConnection();
                held.add(c);
                List<String> rows = new ArrayList<>();
                // transaction_* describe the current transaction (set from the defaults at its start), not the session.
                try (var rs = c.createStatement()
                        .executeQuery("SELECT name || '=' || setting FROM pg_settings "
                                + "WHERE source = 'session' AND name NOT LIKE 'transaction\\_%' UNION ALL SELECT 'LISTEN ' || ch FROM pg_listening_channels() ch "
                                + "ORDER BY 1")) {
                    while (rs.next()) {
                        rows.add(rs.getString(1));
                    }
                }
                int pid;
                try (var rs = c.createStatement().executeQuery("SELECT pg_backend_pid()")) {
                    rs.next();
                    pid = rs.getInt(1);
                }
                c.rollback(); // the pool lends with autoCommit=false: end the reads' transaction
                state.put(pid, rows);
            }
        } finally {
            for (Connection c : held) {
                c.close();
            }
        }
        return state;
    }

    /**
     * Protection removed and seen failing: the read-only check of {@code Db.requireWritable}: the start
     * failed later, in the migration, with "cannot execute CREATE TABLE in a read-only transaction", and
     * without the reason the message assertions failed.
     */
    @Test
    void E04_aPoolOfReadOnlyConnectionsIsRefusedAtStartWithTheReason() {
        HikariConfig cfg = userConfig("e04-read-only");
        cfg.setReadOnly(true);
        HikariDataSource readOnly = closeLater(new HikariDataSource(cfg));
        Baton node = closeLater(nodeBuilder("e04-ro", readOnly).build());
        assertThatThrownBy(node::start)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("read-only connections")
                .hasMessageContaining("readOnly=true");
    }

    private int insertEffect(Connection tx) throws SQLException {
        try (var ps = tx.prepareStatement("INSERT INTO " + schema + ".ledger (lease_name, generation, owner_id) "
                + "VALUES ('job', 0, 'work')")) {
            return ps.executeUpdate();
        }
    }

    /** autoCommit=false, REPEATABLE READ, 2 connections, 1 s connection timeout. */
    private HikariDataSource userPool(String name) {
        return closeLater(new HikariDataSource(userConfig(name)));
    }

    private HikariConfig userConfig(String name) {
        HikariConfig cfg = new HikariConfig();
        cfg.setJdbcUrl(PG.jdbcUrl());
        cfg.setPoolName(name + "-" + schema);
        cfg.setMaximumPoolSize(2);
        cfg.setMinimumIdle(0);
        cfg.setAutoCommit(false);
        if (!PG.pooled()) {
            cfg.setTransactionIsolation("TRANSACTION_REPEATABLE_READ"); // would leak through a transaction pooler
        }
        cfg.setConnectionTimeout(1000);
        return cfg;
    }

    /**
     * Watches what is done to the connections a pool lends: a call of {@code setTransactionIsolation}
     * (a session-level SET), or a connection given back with another auto-commit mode than it was lent with.
     */
    private static final class Recording {
        final List<String> violations = new CopyOnWriteArrayList<>();
        final AtomicInteger borrowed = new AtomicInteger();
        final DataSource ds;

        Recording(DataSource target) {
            ds = Lending.dataSource(target, () -> {
                Connection c = target.getConnection();
                borrowed.incrementAndGet();
                boolean lentWith = c.getAutoCommit();
                return Lending.intercept(c, (method, args, proceed) -> {
                    if (method.getName().equals("setTransactionIsolation")) {
                        violations.add("setTransactionIsolation(" + args[0] + ")");
                    } else if (method.getName().equals("close") && !c.isClosed() && c.getAutoCommit() != lentWith) {
                        violations.add("given back with autoCommit=" + c.getAutoCommit() + ", lent with " + lentWith);
                    }
                    return proceed.call();
                });
            });
        }
    }
}
