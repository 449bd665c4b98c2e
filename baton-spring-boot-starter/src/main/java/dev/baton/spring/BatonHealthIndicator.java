package dev.baton.spring;

import dev.baton.Baton;
import dev.baton.NodeInfo;
import dev.baton.NodeState;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.springframework.boot.actuate.health.AbstractHealthIndicator;
import org.springframework.boot.actuate.health.Health;

/**
 * DOWN when the database cannot be reached, this node is not registered as active (or its heartbeat is
 * overdue on the database clock), or the last renewal of a lease this node leads was not confirmed.
 * Detail {@code unhandledKinds}: kinds of available jobs on this node's queues that no live node handles,
 * with their queues (they wait without using an attempt, and fail after
 * {@code baton.worker.unhandled-kind-timeout}); a detail only, the node stays UP.
 */
public class BatonHealthIndicator extends AbstractHealthIndicator {
    private final Baton baton;
    private final RenewalTracker renewals;

    public BatonHealthIndicator(Baton baton, RenewalTracker renewals) {
        super("Baton health check failed (database unreachable?)");
        this.baton = baton;
        this.renewals = renewals;
    }

    @Override
    protected void doHealthCheck(Health.Builder builder) {
        Optional<NodeInfo> me = baton.nodes().get(baton.nodeId());
        builder.withDetail("node", baton.nodeId())
                .withDetail("schema", baton.schema())
                .withDetail("notifications", baton.notificationsActive() ? "LISTEN" : "polling");
        if (me.isEmpty()) {
            builder.down().withDetail("reason", "this node is not registered (Baton not started?)");
            return;
        }
        NodeInfo n = me.get();
        Duration sinceBeat = Duration.between(n.heartbeatAt(), n.dbNow());
        builder.withDetail("state", n.state()).withDetail("sinceHeartbeat", sinceBeat.toString());
        Map<String, Object> leases = new LinkedHashMap<>();
        boolean renewalsOnTime = true;
        for (Map.Entry<String, RenewalTracker.LastRenewal> e :
                renewals.lastRenewals().entrySet()) {
            leases.put(e.getKey(), e.getValue().confirmed() ? "renewed" : "renewal not confirmed");
            renewalsOnTime &= e.getValue().confirmed();
        }
        builder.withDetail("leading", leases).withDetail("selfStops", renewals.selfStops());
        // A detail, not DOWN: such jobs wait without using an attempt, and this node cannot fix them.
        Map<String, Set<String>> unhandled = baton.unhandledKinds();
        if (!unhandled.isEmpty()) {
            builder.withDetail("unhandledKinds", unhandled);
        }
        if (n.state() == NodeState.STOPPED) {
            builder.down().withDetail("reason", "this node is recorded as stopped");
        } else if (n.stale()) {
            builder.down().withDetail("reason", "node heartbeat overdue (" + sinceBeat + " since the last one)");
        } else if (!renewalsOnTime) {
            builder.down().withDetail("reason", "the last renewal of a lease this node leads was not confirmed");
        } else {
            builder.up();
        }
    }
}
