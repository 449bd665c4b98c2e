package dev.baton.examples.audit.jobs;

import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

/**
 * Three recurring sweeps riding @Scheduled on every instance. The two purges are idempotent deletes
 * (a second runner wastes work); the lock sweep reads then writes behind an optimistic version, so
 * concurrent runners contend and the loser logs what reads as a database fault.
 */
@Component
public class Sweeps {
    private static final Logger log = LoggerFactory.getLogger(Sweeps.class);

    private final JdbcTemplate jdbc;

    public Sweeps(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    @Scheduled(cron = "0 5 0 * * *")
    public void lockDailyEntries() {
        List<Map<String, Object>> open = jdbc.queryForList(
                "SELECT id, version FROM app.daily_entry WHERE locked = false AND day < current_date");
        for (Map<String, Object> e : open) {
            int updated = jdbc.update(
                    "UPDATE app.daily_entry SET locked = true, version = version + 1 " + "WHERE id = ? AND version = ?",
                    e.get("id"),
                    e.get("version"));
            if (updated == 0) {
                log.error("Lock sweep failed for entry {}", e.get("id"));
            }
        }
    }

    @Scheduled(fixedRate = 600_000)
    public void purgeRefreshTokens() {
        jdbc.update("DELETE FROM app.refresh_token WHERE expires_at < now()");
    }

    @Scheduled(fixedRate = 600_000)
    public void purgeIdempotencyRecords() {
        jdbc.update("DELETE FROM app.idempotency_record WHERE created_at < now() - interval '1 day'");
    }
}
