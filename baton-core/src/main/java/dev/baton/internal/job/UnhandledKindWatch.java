package dev.baton.internal.job;

import dev.baton.BatonMetrics;
import dev.baton.internal.db.Db;
import dev.baton.internal.service.Service;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells the operator about jobs of a kind nobody handles: every {@code interval} it reads the kinds of
 * available jobs on this node's queues that neither this node nor any live node handles (read only; the
 * jobs stay available, no attempt is used, and the maintenance leader fails them after the unhandled-kind
 * timeout). A kind seen for the first time on a queue is logged at WARN and reported to the metrics, once
 * per kind and queue on this node (not per job or per pass); {@link #current()} is the latest pass's
 * view (the health detail).
 */
public final class UnhandledKindWatch extends Service {
    private static final Logger log = LoggerFactory.getLogger(UnhandledKindWatch.class);

    private final Db db;
    private final JobStore store;
    private final List<String> queues;
    private final List<String> ownKinds;
    private final Duration interval;
    private final Duration unhandledKindTimeout;
    private final BatonMetrics metrics;
    /** (kind, queue) pairs already reported by this node. */
    private final Set<JobStore.UnhandledKind> reported = ConcurrentHashMap.newKeySet();

    private volatile Map<String, Set<String>> current = Map.of();

    public UnhandledKindWatch(
            Db db,
            JobStore store,
            Collection<String> queues,
            Collection<String> ownKinds,
            Duration interval,
            Duration unhandledKindTimeout,
            BatonMetrics metrics,
            LongSupplier ticker) {
        super("baton-unhandled-kinds", ticker);
        this.db = db;
        this.store = store;
        this.queues = List.copyOf(queues);
        this.ownKinds = List.copyOf(ownKinds);
        this.interval = interval;
        this.unhandledKindTimeout = unhandledKindTimeout;
        this.metrics = metrics;
    }

    @Override
    protected long runOnce() throws Exception {
        checkOnce();
        return interval.toNanos();
    }

    /** One check; returns the unhandled kinds seen, each with its queues. */
    public Map<String, Set<String>> checkOnce() throws java.sql.SQLException {
        List<JobStore.UnhandledKind> seen =
                db.call("a check for unhandled job kinds", c -> store.unhandledKinds(c, queues, ownKinds));
        Map<String, Set<String>> now = new TreeMap<>();
        for (JobStore.UnhandledKind u : seen) {
            now.computeIfAbsent(u.kind(), k -> new TreeSet<>()).add(u.queue());
            if (reported.add(u)) {
                log.warn(
                        "jobs of kind '{}' are waiting on queue '{}' but no live node handles that kind: they stay "
                                + "available (no attempt is used) for a node that does, and fail after {} "
                                + "(unhandledKindTimeout) otherwise; register a handler for the kind (e.g. "
                                + "@BatonJob(\"{}\")) or fix the kind the jobs are enqueued with. Reported once per "
                                + "kind and queue on this node",
                        u.kind(),
                        u.queue(),
                        unhandledKindTimeout,
                        u.kind());
                metrics.jobKindUnhandled(u.queue(), u.kind());
            }
        }
        Map<String, Set<String>> view = new TreeMap<>();
        now.forEach((k, q) -> view.put(k, Set.copyOf(q)));
        current = java.util.Collections.unmodifiableMap(view);
        return current;
    }

    /** The latest check's unhandled kinds, each with the queues it waits on; empty before the first check. */
    public Map<String, Set<String>> current() {
        return current;
    }
}
