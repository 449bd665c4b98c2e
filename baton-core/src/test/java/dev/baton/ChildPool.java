package dev.baton;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;

/** The connection pool of a node started in a JVM of its own ({@link JobWorkerProcess}, {@link ScheduleNodeProcess}). */
final class ChildPool {
    private ChildPool() {}

    static HikariDataSource open(String url, String nodeId, int size) {
        HikariConfig cfg = new HikariConfig();
        cfg.setJdbcUrl(url);
        cfg.setPoolName(nodeId);
        cfg.setMaximumPoolSize(size);
        cfg.setMinimumIdle(0);
        return new HikariDataSource(cfg);
    }
}
