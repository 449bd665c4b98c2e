package dev.baton.internal.maintenance;

import dev.baton.internal.service.Service;
import java.sql.SQLException;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps the job, lease, node and schedule tables bounded by their retention: a pass at the start of each
 * maintenance term and then every {@link Maintenance#PRUNE_INTERVAL}, each table in bounded batches
 * ({@link Maintenance#pruneOnce}); after {@link Maintenance#PRUNE_CATCH_UP} instead while a pass ends with more
 * due. A failed pass is tried again after the rescue interval.
 */
public final class Pruner extends Service {
    private static final Logger log = LoggerFactory.getLogger(Pruner.class);

    private final Maintenance work;

    public Pruner(Maintenance work, LongSupplier ticker) {
        super("baton-pruner", ticker);
        this.work = work;
    }

    @Override
    protected long runOnce() {
        try {
            Maintenance.Pruned pruned = work.pruneOnce(work.clusterJobSettings());
            if (pruned.total() > 0) {
                log.debug("pruned {}", pruned);
            }
            return pruned.more() ? Maintenance.PRUNE_CATCH_UP.toNanos() : Maintenance.PRUNE_INTERVAL.toNanos();
        } catch (SQLException | RuntimeException e) {
            log.warn("pruning failed, retrying in {}: {}", work.pace(), e.getMessage());
            return work.pace().toNanos();
        }
    }
}
