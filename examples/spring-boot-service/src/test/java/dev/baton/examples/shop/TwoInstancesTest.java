package dev.baton.examples.shop;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.baton.Baton;
import dev.baton.JobInfo;
import dev.baton.testkit.BatonPostgres;
import dev.baton.testkit.TestTimeouts;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Two instances of the shop (two Spring application contexts, two Baton nodes) on one database: the
 * sweep and the single-runner {@code @Scheduled} method run once per interval, not once per instance.
 * The pool is tuned as JPA services tune it, {@code spring.datasource.hikari.auto-commit=false}
 * (FAULTS.md E04): every Baton operation still commits what it reports.
 */
class TwoInstancesTest {
    @RegisterExtension
    static final BatonPostgres PG = new BatonPostgres();

    static final Duration WAIT = TestTimeouts.scaled(Duration.ofSeconds(30));
    static final Duration INTERVAL = Duration.ofMillis(500);
    /** Local scheduling versus the database clock: the hold ends when the lease expires on the database. */
    static final Duration CLOCK_SLACK = Duration.ofMillis(50);

    final String batonSchema = PG.freshSchemaName();
    final String shopSchema = PG.freshSchemaName();
    final List<ConfigurableApplicationContext> instances = new ArrayList<>();

    ConfigurableApplicationContext start(String node) {
        ConfigurableApplicationContext ctx = new SpringApplicationBuilder(ShopApplication.class)
                .web(WebApplicationType.NONE)
                .run(args(
                        "spring.datasource.url=" + PG.jdbcUrl(),
                        "spring.datasource.hikari.maximum-pool-size=8",
                        "spring.datasource.hikari.auto-commit=false",
                        "baton.schema=" + batonSchema,
                        "shop.schema=" + shopSchema,
                        "baton.node-id=" + node,
                        "baton.notifications=" + (PG.pooled() ? "POLL" : "AUTO"),
                        "baton.maintenance.lease-ttl=2s",
                        "baton.maintenance.renew-interval=400ms",
                        "baton.maintenance.poll-interval=200ms",
                        "baton.worker.poll-interval=100ms",
                        "baton.worker.drain-timeout=2s",
                        "shop.sweep-interval=" + INTERVAL.toMillis() + "ms",
                        "shop.report-interval=" + INTERVAL));
        instances.add(ctx);
        return ctx;
    }

    /** Command-line arguments: they override application.properties (builder properties would not). */
    private static String[] args(String... properties) {
        return java.util.Arrays.stream(properties).map(p -> "--" + p).toArray(String[]::new);
    }

    @AfterEach
    void stop() {
        instances.forEach(ConfigurableApplicationContext::close);
        PG.dropSchema(batonSchema);
        PG.dropSchema(shopSchema);
    }

    @Test
    void sweepAndSingleRunnerRunOncePerIntervalAcrossTwoInstances() throws Exception {
        ConfigurableApplicationContext a = start("shop-a");
        ConfigurableApplicationContext b = start("shop-b");
        JdbcTemplate jdbc = a.getBean(JdbcTemplate.class);
        Baton baton = a.getBean(Baton.class);

        a.getBean(Orders.class).place("o-1", "ada@example.com");
        b.getBean(Orders.class).place("o-2", "bob@example.com");
        // A request refused after its writes rolls back the order and its receipt job alike. Checked by
        // removing the protection: with the starter's transaction binding off (TransactionBinding.NONE on a
        // BatonCustomizer), the job of o-3 was committed on its own and this failed.
        assertThatThrownBy(() -> a.getBean(Orders.class).place("o-3", "no-at-sign"))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(jdbc.queryForObject(
                        "SELECT count(*) FROM " + batonSchema + ".job WHERE idempotency_key = 'receipt:o-3'",
                        Integer.class))
                .as("no job for the refused order")
                .isZero();
        assertThat(jdbc.queryForObject("SELECT count(*) FROM " + shopSchema + ".orders", Integer.class))
                .isEqualTo(2);

        // Let both instances tick for at least 8 intervals of each kind.
        Awaitility.await().atMost(WAIT).until(() -> count(jdbc, "sweep_runs") >= 8 && count(jdbc, "report_runs") >= 8);
        Awaitility.await()
                .atMost(WAIT)
                .until(() -> jdbc.queryForObject(
                                "SELECT count(*) FROM " + shopSchema + ".orders WHERE receipt_sent_at IS NOT NULL",
                                Integer.class)
                        == 2);

        // Sweep: each run is the job of a distinct due instant, and the instants are consecutive intervals.
        List<Map<String, Object>> sweeps = jdbc.queryForList("SELECT job_id, node FROM " + shopSchema + ".sweep_runs");
        TreeSet<Instant> dues = new TreeSet<>();
        Map<String, Integer> sweepsByNode = new TreeMap<>();
        for (Map<String, Object> row : sweeps) {
            JobInfo job =
                    baton.jobs().get(((Number) row.get("job_id")).longValue()).orElseThrow();
            String key = job.idempotencyKey().orElseThrow(); // schedule:expire-carts:<due instant>
            assertThat(key).startsWith("schedule:expire-carts:");
            dues.add(Instant.parse(key.substring("schedule:expire-carts:".length())));
            sweepsByNode.merge((String) row.get("node"), 1, Integer::sum);
        }
        assertThat(dues).as("one sweep run per due instant").hasSize(sweeps.size());
        Instant previous = null;
        for (Instant due : dues) {
            if (previous != null) {
                assertThat(Duration.between(previous, due))
                        .as("consecutive sweep instants")
                        .isEqualTo(INTERVAL);
            }
            previous = due;
        }

        // Single runner. Checked by removing the protection: with holdAtLeast = "0s" on the method (the
        // lease released as soon as a run returns) both instances ran their ticks and this failed
        // (about 2 runs per interval).
        // Runs are generations of one lease; consecutive runs are at least a period apart
        // (within the clock slack), so their number fits the elapsed time, not twice that.
        List<Map<String, Object>> reports = jdbc.queryForList(
                "SELECT generation, node, ran_at FROM " + shopSchema + ".report_runs ORDER BY generation");
        Map<String, Integer> reportsByNode = new TreeMap<>();
        reports.forEach(r -> reportsByNode.merge((String) r.get("node"), 1, Integer::sum));
        Instant first = ((java.sql.Timestamp) reports.get(0).get("ran_at")).toInstant();
        Instant last = ((java.sql.Timestamp) reports.get(reports.size() - 1).get("ran_at")).toInstant();
        Duration span = Duration.between(first, last);
        long maxRuns = span.toMillis() / INTERVAL.minus(CLOCK_SLACK).toMillis() + 1;
        assertThat(reports.size()).as("single-runner runs over %s", span).isLessThanOrEqualTo((int) maxRuns);

        // Stop the instance that runs the report: the other takes over (after the hold expires).
        String holder = (String) reports.get(reports.size() - 1).get("node");
        ConfigurableApplicationContext survivorCtx = holder.equals("shop-a") ? b : a;
        String survivor = holder.equals("shop-a") ? "shop-b" : "shop-a";
        (holder.equals("shop-a") ? a : b).close();
        JdbcTemplate survivorJdbc = survivorCtx.getBean(JdbcTemplate.class);
        Awaitility.await()
                .atMost(WAIT)
                .until(() -> survivorJdbc.queryForObject(
                                "SELECT count(*) FROM " + shopSchema + ".report_runs WHERE node = ?",
                                Integer.class,
                                survivor)
                        > reportsByNode.getOrDefault(survivor, 0));

        long ticksPerInstance = span.toMillis() / INTERVAL.toMillis() + 1;
        System.out.printf(
                "TWO-INSTANCE SUMMARY: 2 instances (shop-a, shop-b) on one database, interval %d ms: "
                        + "sweep 'expire-carts' ran %d times for %d distinct due instants (by node %s); "
                        + "single-runner report ran %d times in %d ms (at most %d allowed, about %d if each instance "
                        + "ran its own @Scheduled ticks; by node %s); after stopping %s, %s took the report over; "
                        + "2 receipts sent for 2 orders.%n",
                INTERVAL.toMillis(),
                sweeps.size(),
                dues.size(),
                sweepsByNode,
                reports.size(),
                span.toMillis(),
                maxRuns,
                2 * ticksPerInstance,
                reportsByNode,
                holder,
                survivor);
    }

    private int count(JdbcTemplate jdbc, String table) {
        return jdbc.queryForObject("SELECT count(*) FROM " + shopSchema + "." + table, Integer.class);
    }
}
