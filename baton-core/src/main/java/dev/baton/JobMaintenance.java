package dev.baton;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The job queue's housekeeping, run by one node at a time under the {@value #LEASE} lease to save
 * load: the rescuer returns expired attempts to their queue (or fails them after max stalls), the
 * pruner deletes finished jobs past their retention in bounded batches, and expired coordination
 * rows (deliveries, tokens, slots, rate state) are purged. All statements stay safe
 * if two nodes ever run them at once (SKIP LOCKED; predicates re-checked on locked rows).
 */
final class JobMaintenance implements LeaderTask {
    static final String LEASE = MaintenanceTask.LEASE;
    private static final Logger log = LoggerFactory.getLogger(JobMaintenance.class);
    static final int BATCH = 1000;
    /** Prune at most this many batches per run, so one run never holds the database long. */
    static final int MAX_PRUNE_BATCHES = 20;
    static final Duration PRUNE_INTERVAL = Duration.ofMinutes(1);

    private final DataSource dataSource;
    private final JobStore store;
    private final WorkerConfig config;
    private final String nodeId;
    private final Coordination coordination;

    JobMaintenance(DataSource dataSource, JobStore store, WorkerConfig config, String nodeId, Coordination coordination) {
        this.dataSource = dataSource;
        this.store = store;
        this.config = config;
        this.nodeId = nodeId;
        this.coordination = coordination;
    }

    @Override
    public void run(LeaderContext ctx) {
        long lastPrune = 0;
        boolean first = true;
        do {
            try {
                rescueOnce();
                if (first || System.nanoTime() - lastPrune >= PRUNE_INTERVAL.toNanos()) {
                    pruneOnce();
                    coordination.purgeExpired();
                    lastPrune = System.nanoTime();
                    first = false;
                }
            } catch (SQLException | RuntimeException e) {
                log.warn("job maintenance failed, retrying in {}: {}", config.rescueInterval(), e.getMessage());
            }
        } while (!ctx.awaitCancellation(config.rescueInterval()));
    }

    /** Rescues every expired attempt, in batches; returns how many. */
    int rescueOnce() throws SQLException {
        int total = 0;
        try (Connection c = dataSource.getConnection()) {
            int n;
            do {
                n = store.rescue(c, BATCH, config.maxStalls(), nodeId);
                total += n;
            } while (n == BATCH);
        }
        if (total > 0) {
            log.info("rescued {} job attempts whose lease expired", total);
        }
        return total;
    }

    /** Deletes finished jobs older than the retention, at most {@link #MAX_PRUNE_BATCHES} batches. */
    int pruneOnce() throws SQLException {
        int total = 0;
        try (Connection c = dataSource.getConnection()) {
            for (int i = 0; i < MAX_PRUNE_BATCHES; i++) {
                int n = store.prune(c, config.retention().toMillis(), BATCH);
                total += n;
                if (n < BATCH) {
                    break;
                }
            }
        }
        return total;
    }
}
