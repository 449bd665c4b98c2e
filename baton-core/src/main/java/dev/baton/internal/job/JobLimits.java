package dev.baton.internal.job;

import dev.baton.internal.db.Db;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A node's view of which cluster-wide job limits exist (decision 0019), shared by its producers: it only
 * decides which claim path a queue takes and which limits' locks the limited path takes. The limit
 * values themselves are read by the claim statement, so a changed value holds at once on every node;
 * a limit added to a queue that had none is seen within {@link #REFRESH_NANOS}.
 */
public final class JobLimits {
    private static final Logger log = LoggerFactory.getLogger(JobLimits.class);
    /**
     * How old the view may get: one small read of the (tiny) limit table per second per node, so a new
     * limit holds on every node within a second, at a cost no claim notices.
     */
    public static final long REFRESH_NANOS = TimeUnit.SECONDS.toNanos(1);

    private static final String[] NONE = new String[0];

    private final Db db;
    private final JobLimitStore store;
    private final LongSupplier ticker;
    private final List<String> kinds;
    private List<JobLimitStore.Row> rows = List.of();
    private long readAt;
    private boolean read;

    public JobLimits(Db db, JobLimitStore store, LongSupplier ticker, String[] kinds) {
        this.db = db;
        this.store = store;
        this.ticker = ticker;
        this.kinds = Arrays.asList(kinds.clone());
    }

    /**
     * The ids of the limits a claim from {@code queue} must respect, sorted; empty when none (the plain
     * claim path). Rereads the table when the view is older than {@link #REFRESH_NANOS}; if that read
     * fails, the previous view is kept (the claim that follows will most likely fail the same way);
     * with no view yet, the failure is thrown, so nothing is claimed unlimited.
     */
    public synchronized String[] forQueue(String queue) throws SQLException {
        long now = ticker.getAsLong();
        if (!read || now - readAt >= REFRESH_NANOS) {
            try {
                rows = db.call("reading job limits", store::list);
                read = true;
                readAt = now;
            } catch (SQLException | RuntimeException e) {
                if (!read) {
                    throw e; // never read: claiming on the plain path could exceed a limit
                }
                log.warn("reading job limits failed, keeping the previous view: {}", e.getMessage());
            }
        }
        List<String> out = new ArrayList<>();
        for (JobLimitStore.Row r : rows) {
            if (r.appliesTo(queue, kinds)) {
                out.add(r.id());
            }
        }
        return out.isEmpty() ? NONE : out.toArray(NONE);
    }
}
