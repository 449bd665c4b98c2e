package dev.baton.internal.maintenance;

import dev.baton.LeaderContext;
import dev.baton.LeaderTask;
import dev.baton.internal.service.Service;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * The leader-only housekeeping of a Baton cluster under one lease ({@value #LEASE}): the job rescuer,
 * the pruner, the coordination purger ({@link Maintenance#services()}) and the scheduler. One lease instead of one per service halves the idle renewals; each
 * service's statements stay safe if two leaders ever overlap. Each term builds a new instance of every
 * service, starts them all, and stops them all when the term ends.
 */
public final class MaintenanceTask implements LeaderTask {
    public static final String LEASE = "baton.maintenance";

    private final List<Supplier<? extends Service>> services;

    public MaintenanceTask(List<Supplier<? extends Service>> services) {
        if (services.isEmpty()) {
            throw new IllegalArgumentException("nothing to maintain");
        }
        this.services = List.copyOf(services);
    }

    @Override
    public void run(LeaderContext ctx) {
        List<Service> running = new ArrayList<>();
        try {
            for (Supplier<? extends Service> factory : services) {
                Service s = factory.get();
                running.add(s);
                s.start();
            }
            while (!ctx.awaitCancellation(Duration.ofSeconds(1))) {
                // the services work on their own threads until the term ends
            }
        } finally {
            // Every service is told first, so they end together: a term ends within one stop's grace even
            // when every service's pass waits on a connection that no longer answers. (The term's end
            // interrupts this thread; each stop still waits for its service's pass and keeps the flag.)
            running.forEach(Service::requestStop);
            for (Service s : running) {
                s.stop();
            }
        }
    }
}
