package dev.baton.internal.maintenance;

import dev.baton.internal.service.Service;
import java.sql.SQLException;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Deletes the coordination primitives' expired rows (deliveries, single-use tokens, concurrency slots,
 * rate state): a pass at the start of each maintenance term and then every
 * {@link Maintenance#PRUNE_INTERVAL}, in bounded batches. Runs on every node that runs maintenance, with
 * or without a worker. A failed pass is tried again after the rescue interval.
 */
public final class CoordinationPurger extends Service {
    private static final Logger log = LoggerFactory.getLogger(CoordinationPurger.class);

    private final Maintenance work;

    public CoordinationPurger(Maintenance work, LongSupplier ticker) {
        super("baton-coordination-purger", ticker);
        this.work = work;
    }

    @Override
    protected long runOnce() {
        try {
            int purged = work.purgeCoordination();
            if (purged > 0) {
                log.debug("purged {} expired coordination rows", purged);
            }
            return Maintenance.PRUNE_INTERVAL.toNanos();
        } catch (SQLException | RuntimeException e) {
            log.warn("purging expired coordination rows failed, retrying in {}: {}", work.pace(), e.getMessage());
            return work.pace().toNanos();
        }
    }
}
