package dev.baton.examples.audit.reports;

import dev.baton.examples.audit.metrics.AppMetrics;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Service;

/** Decoy: a stateless service; its fields are collaborators, not state. */
@Service
public class ReportService {
    private final JdbcTemplate jdbc;
    private final ReportConcurrencyLimiter limiter;
    private final AppMetrics metrics;

    public ReportService(JdbcTemplate jdbc, ReportConcurrencyLimiter limiter, AppMetrics metrics) {
        this.jdbc = jdbc;
        this.limiter = limiter;
        this.metrics = metrics;
    }

    public List<Map<String, Object>> monthly(UUID accountId) {
        Runnable release =
                limiter.tryAcquire(accountId).orElseThrow(() -> new IllegalStateException("too many reports"));
        try {
            return metrics.timeReport(() -> jdbc.queryForList(
                    "SELECT date_trunc('month', day) AS month, sum(amount) FROM app.entry WHERE account_id = ? GROUP BY 1",
                    accountId));
        } finally {
            release.run();
        }
    }
}
