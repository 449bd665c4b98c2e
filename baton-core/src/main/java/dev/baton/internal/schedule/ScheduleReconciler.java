package dev.baton.internal.schedule;

import dev.baton.BatonException;
import dev.baton.internal.db.Db;
import java.sql.SQLException;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps an application's schedules in step with its live nodes: disables those no live version declares
 * any more (never deleting them), and enables again those a live version declares. Run by a node on start
 * and by the scheduler now and then.
 */
public final class ScheduleReconciler {
    private static final Logger log = LoggerFactory.getLogger(ScheduleReconciler.class);

    private final Db db;
    private final ScheduleStore store;

    public ScheduleReconciler(Db db, ScheduleStore store) {
        this.db = db;
        this.store = store;
    }

    /**
     * Disables this application's schedules that no live node of a declaring version declares, never one
     * declared by {@code liveVersion} (the calling node's own version, alive by definition; null for none).
     */
    public List<String> disableOrphans(String app, String liveVersion) {
        List<String> out = reconciling("disable_orphans", app, c -> store.disableOrphans(c, app, liveVersion));
        if (!out.isEmpty()) {
            log.info("disabled schedules of '{}' that no live version declares any more: {}", app, out);
        }
        return out;
    }

    /** Enables again this application's disabled schedules that a live version (or {@code liveVersion}) declares. */
    public List<String> enableDeclared(String app, String liveVersion) {
        List<String> out = reconciling("enable_declared", app, c -> store.enableDeclared(c, app, liveVersion));
        if (!out.isEmpty()) {
            log.info("enabled again schedules of '{}' that a live version declares: {}", app, out);
        }
        return out;
    }

    /** Both: what the scheduler runs now and then, and a node on start. */
    public void reconcile(String app, String liveVersion) {
        enableDeclared(app, liveVersion);
        disableOrphans(app, liveVersion);
    }

    private List<String> reconciling(String statement, String app, Db.Work<List<String>> work) {
        try {
            return db.call("reconciling schedules", work);
        } catch (SQLException e) {
            throw new BatonException(
                    "reconciling the schedules of '" + app + "' with the live nodes failed (" + statement + "): "
                            + e.getMessage(),
                    e);
        }
    }
}
