package dev.baton.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.baton.Baton;
import dev.baton.LeaseGrant;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.scheduling.annotation.Scheduled;

/** {@code @BatonSingleRunner} across two application contexts (two instances) on one database. */
class SingleRunnerTest extends StarterTestSupport {

    /** A bean as an application would write it; each instance has its own. */
    static class Exporter {
        @Value("${baton.schema}")
        String schema;

        @Value("${baton.node-id}")
        String node;

        @BatonSingleRunner(value = "export", holdAtLeast = "1h")
        public boolean export() {
            LeaseGrant g = SingleRunner.currentGrant().orElseThrow();
            SingleRunner.fenced(tx -> {
                try (PreparedStatement ps =
                        tx.prepareStatement("INSERT INTO " + schema + ".export_log VALUES (?, ?)")) {
                    ps.setLong(1, g.generation());
                    ps.setString(2, node);
                    return ps.executeUpdate();
                }
            });
            return true;
        }

        @BatonSingleRunner("quick")
        public boolean quick() {
            return SingleRunner.currentGrant().isPresent();
        }

        @BatonSingleRunner(value = "turn", holdAtLeast = "1h")
        public boolean turn() {
            return SingleRunner.currentGrant().isPresent();
        }

        @Scheduled(fixedRate = 3_600_000)
        @BatonSingleRunner("hourly")
        public void hourly() {}
    }

    @Configuration(proxyBeanMethods = false)
    static class ExporterConfig {
        @Bean
        Exporter exporter() {
            return new Exporter();
        }
    }

    /** Ends the current hold of {@code lease} as its passing would: its expiry becomes the database's now. */
    private void endHold(String lease) throws Exception {
        try (Connection c = pool.getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "UPDATE " + schema + ".lease SET expires_at = clock_timestamp() WHERE name = ?")) {
            ps.setString(1, lease);
            assertThat(ps.executeUpdate()).isEqualTo(1);
        }
    }

    private List<String> exportLog() throws Exception {
        List<String> out = new ArrayList<>();
        try (Connection c = pool.getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "SELECT generation, node FROM " + schema + ".export_log ORDER BY generation");
                ResultSet rs = ps.executeQuery()) {
            while (rs.next()) {
                out.add(rs.getString("node") + "@" + rs.getLong("generation"));
            }
        }
        return out;
    }

    /*
     * Removing the interceptor (not registering SingleRunnerPostProcessor) makes b.export() run and
     * return true, and SingleRunner.currentGrant() empty: this test then fails on both counts.
     */
    @Test
    void theOtherInstanceSkipsWhileTheHolderKeepsItsTurn() throws Exception {
        Baton.migrate(pool, schema);
        try (Connection c = pool.getConnection()) {
            c.createStatement()
                    .execute("CREATE TABLE " + schema + ".export_log (generation bigint PRIMARY KEY, node text)");
        }
        runner().withUserConfiguration(ExporterConfig.class)
                .withPropertyValues("baton.node-id=a")
                .run(a -> runner().withUserConfiguration(ExporterConfig.class)
                        .withPropertyValues("baton.node-id=b")
                        .run(b -> {
                            Exporter onA = a.getBean(Exporter.class);
                            Exporter onB = b.getBean(Exporter.class);
                            assertThat(onA.export()).isTrue();
                            assertThat(onB.export())
                                    .as("b skips: a holds 'export' for holdAtLeast")
                                    .isFalse();
                            assertThat(onA.export())
                                    .as("a keeps its turn: the same node re-acquires")
                                    .isTrue();
                            // Two runs by a, each under a new generation (strictly higher; not consecutive: decision
                            // 0013).
                            List<String> log = exportLog();
                            assertThat(log)
                                    .hasSize(2)
                                    .allSatisfy(e -> assertThat(e).startsWith("a@"));
                            assertThat(Long.parseLong(log.get(1).substring(2)))
                                    .isGreaterThan(Long.parseLong(log.get(0).substring(2)));

                            assertThat(onA.quick()).isTrue();
                            assertThat(onB.quick())
                                    .as("without a hold the lease is released when the method returns")
                                    .isTrue();

                            onA.hourly();
                            Duration left = a.getBean(Baton.class)
                                    .leases()
                                    .inspect("hourly")
                                    .orElseThrow()
                                    .remaining();
                            assertThat(left)
                                    .as("hold derived from @Scheduled(fixedRate = 1h)")
                                    .isGreaterThan(Duration.ofMinutes(59));
                        }));
    }

    /*
     * What docs/spring-boot.md says: the holder may run again within its hold, the others skip; once the
     * hold has ended the lease is free and the first instance to call takes it (the turn is not kept).
     * The hold (1 h) is ended by setting the lease's expiry to the database's now, which is what its
     * passing does (leases run on the database clock): the test waits for nothing and no timing decides it.
     * (With a 300 ms hold it failed on a loaded machine: b's call came after the hold had ended.)
     */
    @Test
    void onceTheHoldEndsTheFirstInstanceToTickTakesTheTurn() {
        runner().withUserConfiguration(ExporterConfig.class)
                .withPropertyValues("baton.node-id=a")
                .run(a -> runner().withUserConfiguration(ExporterConfig.class)
                        .withPropertyValues("baton.node-id=b")
                        .run(b -> {
                            Exporter onA = a.getBean(Exporter.class);
                            Exporter onB = b.getBean(Exporter.class);
                            assertThat(onA.turn()).isTrue();
                            assertThat(onB.turn()).as("b skips within a's hold").isFalse();
                            assertThat(onA.turn())
                                    .as("a may run again within its hold")
                                    .isTrue();
                            assertThat(onB.turn())
                                    .as("b still skips within a's renewed hold")
                                    .isFalse();
                            endHold("turn");
                            assertThat(onB.turn())
                                    .as("the hold ended: the first instance to call, b, takes the lease")
                                    .isTrue();
                            assertThat(onA.turn())
                                    .as("b holds the lease for its own hold: a skips now")
                                    .isFalse();
                        }));
    }

    @Test
    void fencedOutsideASingleRunnerMethodIsRefused() {
        assertThatThrownBy(() -> SingleRunner.fenced(tx -> 1))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage(
                        "SingleRunner.fenced is only available inside a @BatonSingleRunner method (on the thread that "
                                + "runs it)");
        assertThat(SingleRunner.currentGrant()).isEmpty();
    }
}
