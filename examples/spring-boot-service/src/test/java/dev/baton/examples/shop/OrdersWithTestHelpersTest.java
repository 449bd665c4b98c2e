package dev.baton.examples.shop;

import static dev.baton.test.BatonAssertions.assertEnqueued;
import static dev.baton.test.BatonAssertions.assertNotEnqueued;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.baton.Baton;
import dev.baton.test.EnqueuedJob;
import dev.baton.test.EnqueuedJobs;
import dev.baton.test.InlineRun;
import dev.baton.test.InlineWorker;
import dev.baton.test.ScheduleClock;
import dev.baton.testkit.BatonPostgres;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The shop tested with baton-test's helpers: the Spring context brings its own pool, the assertions read
 * the enqueued jobs through it, and the receipt job and the sweep run on the test thread, not in the
 * background, so the test waits for nothing.
 */
class OrdersWithTestHelpersTest {
    @RegisterExtension
    static final BatonPostgres PG = new BatonPostgres();

    static final String BATON_SCHEMA = PG.freshSchemaName();
    static final String SHOP_SCHEMA = PG.freshSchemaName();
    static ConfigurableApplicationContext context;
    static InlineWorker inline;
    static EnqueuedJobs jobs;
    static JdbcTemplate jdbc;

    @BeforeAll
    static void start() {
        context = new SpringApplicationBuilder(ShopApplication.class)
                .web(WebApplicationType.NONE)
                .run(
                        "--spring.datasource.url=" + PG.jdbcUrl(),
                        "--baton.schema=" + BATON_SCHEMA,
                        "--shop.schema=" + SHOP_SCHEMA,
                        "--baton.notifications=" + (PG.pooled() ? "POLL" : "AUTO"),
                        // Far apart, so that only the test moves the sweep and the report stays out of the way.
                        "--shop.sweep-interval=1h",
                        "--shop.report-interval=PT1H");
        Baton baton = context.getBean(Baton.class);
        // Before anything is enqueued: from here on the node's worker claims nothing, the test thread runs jobs.
        inline = InlineWorker.of(baton);
        // The context's own pool and the Baton schema; the default Jackson codec matches the starter's.
        jobs = EnqueuedJobs.of(context.getBean(DataSource.class), BATON_SCHEMA);
        jdbc = context.getBean(JdbcTemplate.class);
    }

    @AfterAll
    static void stop() {
        if (context != null) {
            context.close();
        }
        PG.dropSchema(BATON_SCHEMA);
        PG.dropSchema(SHOP_SCHEMA);
    }

    @Test
    void placingAnOrderEnqueuesItsReceiptAndRunningItMarksTheReceiptSent() {
        context.getBean(Orders.class).place("o-1", "ada@example.com");

        assertEnqueued(
                jobs, "receipt.send", Orders.Receipt.class, r -> r.orderId().equals("o-1"));

        InlineRun run = inline.runDue();

        assertThat(run.succeeded()).hasSize(1);
        assertNotEnqueued(
                jobs, "receipt.send", Orders.Receipt.class, r -> r.orderId().equals("o-1"));
        assertThat(jdbc.queryForObject(
                        "SELECT receipt_sent_at IS NOT NULL FROM " + SHOP_SCHEMA + ".orders WHERE id = 'o-1'",
                        Boolean.class))
                .isTrue();
    }

    @Test
    void aRefusedOrderEnqueuesNoReceipt() {
        assertThatThrownBy(() -> context.getBean(Orders.class).place("o-2", "no-at-sign"))
                .isInstanceOf(IllegalArgumentException.class);

        assertNotEnqueued(
                jobs, "receipt.send", Orders.Receipt.class, r -> r.orderId().equals("o-2"));
    }

    @Test
    void theSweepFiresOnceWhenItsClockReachesTheNextInstant() {
        ScheduleClock clock = ScheduleClock.of(context.getBean(Baton.class));

        List<EnqueuedJob> fired = clock.advanceToNextDue();

        assertThat(fired).hasSize(1);
        long job = fired.get(0).id();
        assertThat(inline.runDue().succeeded()).contains(job);
        assertThat(jdbc.queryForObject(
                        "SELECT count(*) FROM " + SHOP_SCHEMA + ".sweep_runs WHERE job_id = ?", Integer.class, job))
                .isEqualTo(1);
    }
}
