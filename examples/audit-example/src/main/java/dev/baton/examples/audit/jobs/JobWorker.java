package dev.baton.examples.audit.jobs;

import java.util.List;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.stereotype.Component;

/**
 * The durable-job worker loop: every instance polls the pending rows, with no claim (no FOR UPDATE
 * SKIP LOCKED, no lease). With two instances, both take the same job.
 */
@Component
public class JobWorker {
    private static final Logger log = LoggerFactory.getLogger(JobWorker.class);
    private static final int BATCH = 20;

    private final JdbcTemplate jdbc;

    public JobWorker(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    @Scheduled(fixedDelay = 1000)
    public void processPendingJobs() {
        List<Map<String, Object>> pending = jdbc.queryForList(
                "SELECT id, kind, payload FROM app.job WHERE state = 'pending' ORDER BY id LIMIT ?", BATCH);
        for (Map<String, Object> job : pending) {
            log.info("running job {} ({})", job.get("id"), job.get("kind"));
            jdbc.update("UPDATE app.job SET state = 'done', finished_at = now() WHERE id = ?", job.get("id"));
        }
    }
}
