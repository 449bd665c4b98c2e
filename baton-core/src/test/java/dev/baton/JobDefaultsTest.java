package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * Per-kind job defaults ({@link Baton.Builder#jobDefaults}): the queue, max attempts and timeout a request
 * leaves unset come from its kind's defaults; what the request sets wins; other kinds keep the plain
 * defaults.
 *
 * <p>Protection removed and seen failing: the {@code withDefaults} call in {@code Jobs.encode}: the job
 * landed on queue "default" with 25 attempts and no timeout.
 */
class JobDefaultsTest extends JobBehaviourTestBase {
    @Test
    void aKindsDefaultsFillWhatTheRequestLeavesUnset() throws Exception {
        Baton node = start(nodeBuilder("defaults-node")
                .jobDefaults(
                        "mail.send",
                        JobDefaults.none().queue("mail").maxAttempts(2).timeout(Duration.ofSeconds(7))));
        Jobs jobs = node.jobs();

        long defaulted = jobs.enqueue(JobRequest.of("mail.send", null)).id();
        long explicit = jobs.enqueue(JobRequest.of("mail.send", null)
                        .queue("urgent")
                        .maxAttempts(9)
                        .timeout(Duration.ofSeconds(3)))
                .id();
        long other = jobs.enqueue(JobRequest.of("other", null)).id();
        long batched = jobs.enqueueAll(List.of(JobRequest.of("mail.send", null)))
                .get(0)
                .id();

        assertThat(settings(defaulted)).isEqualTo("mail/2/7000");
        assertThat(settings(explicit)).as("the request's values win").isEqualTo("urgent/9/3000");
        assertThat(settings(other)).as("other kinds: plain defaults").isEqualTo("default/25/null");
        assertThat(settings(batched)).as("batch enqueue too").isEqualTo("mail/2/7000");
    }

    @Test
    void defaultsAreValidatedLikeRequests() {
        assertThatThrownBy(() -> JobDefaults.none().maxAttempts(-1))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("maxAttempts must be between 1 and 1000, but was -1");
        assertThatThrownBy(() -> JobDefaults.none().queue("Mail"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'Mail'");
        assertThatThrownBy(() -> JobDefaults.none().timeout(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("timeout must be positive");
        assertThat(JobRequest.of("k", null).queueName()).isEqualTo(JobRequest.DEFAULT_QUEUE);
    }

    private String settings(long id) throws Exception {
        try (Connection c = pool.getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "SELECT queue, max_attempts, timeout_ms FROM " + schema + ".job WHERE id = ?")) {
            ps.setLong(1, id);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                return rs.getString(1) + "/" + rs.getInt(2) + "/" + rs.getString(3);
            }
        }
    }
}
