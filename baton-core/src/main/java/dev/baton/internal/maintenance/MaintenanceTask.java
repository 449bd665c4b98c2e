package dev.baton.internal.maintenance;

import dev.baton.LeaderContext;
import dev.baton.LeaderTask;
import java.util.ArrayList;
import java.util.List;

/**
 * The leader-only housekeeping of a Baton cluster under one lease ({@value #LEASE}): job rescue and
 * pruning, and the scheduler. One lease instead of one per service halves the idle renewals; each
 * service's statements stay safe if two leaders ever overlap. The first part runs on the term's
 * thread, the others on threads of their own that end with the term.
 */
public final class MaintenanceTask implements LeaderTask {
    public static final String LEASE = "baton.maintenance";

    private final List<LeaderTask> parts;

    public MaintenanceTask(List<LeaderTask> parts) {
        if (parts.isEmpty()) {
            throw new IllegalArgumentException("nothing to maintain");
        }
        this.parts = List.copyOf(parts);
    }

    @Override
    public void run(LeaderContext ctx) throws Exception {
        List<Thread> others = new ArrayList<>();
        for (int i = 1; i < parts.size(); i++) {
            LeaderTask part = parts.get(i);
            Thread t = new Thread(
                    () -> {
                        try {
                            part.run(ctx);
                        } catch (Exception e) {
                            if (!ctx.isCancelled()) {
                                org.slf4j.LoggerFactory.getLogger(MaintenanceTask.class)
                                        .error("maintenance part failed", e);
                            }
                        }
                    },
                    "baton-maintenance-" + part.getClass().getSimpleName());
            t.setDaemon(true);
            others.add(t);
            t.start();
        }
        try {
            parts.get(0).run(ctx);
        } finally {
            for (Thread t : others) {
                t.interrupt();
            }
            for (Thread t : others) {
                t.join(10_000);
            }
        }
    }
}
