package dev.baton.spring;

import dev.baton.Baton;
import dev.baton.NodeInfo;
import dev.baton.NodeState;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The health check itself, free of Spring Boot's health types (which moved packages in Boot 4): the
 * Boot 3 {@link BatonHealthIndicator} and the Boot 4 {@link BatonBoot4HealthIndicator} report it.
 */
final class BatonHealthCheck {
    /** UP or DOWN, and the details in the order they are shown. */
    record Result(boolean up, Map<String, Object> details) {}

    static final String FAILURE_MESSAGE = "Baton health check failed (database unreachable?)";

    private BatonHealthCheck() {}

    /** Reads this node's row on the database; an exception (database unreachable) is the caller's DOWN. */
    static Result check(Baton baton, RenewalTracker renewals) {
        Map<String, Object> d = new LinkedHashMap<>();
        Optional<NodeInfo> me = baton.nodes().get(baton.nodeId());
        d.put("node", baton.nodeId());
        d.put("schema", baton.schema());
        d.put("notifications", baton.notificationsActive() ? "LISTEN" : "polling");
        if (me.isEmpty()) {
            d.put("reason", "this node is not registered (Baton not started?)");
            return new Result(false, d);
        }
        NodeInfo n = me.get();
        Duration sinceBeat = Duration.between(n.heartbeatAt(), n.dbNow());
        d.put("state", n.state());
        d.put("sinceHeartbeat", sinceBeat.toString());
        Map<String, Object> leases = new LinkedHashMap<>();
        boolean renewalsOnTime = true;
        for (Map.Entry<String, RenewalTracker.LastRenewal> e :
                renewals.lastRenewals().entrySet()) {
            leases.put(e.getKey(), e.getValue().confirmed() ? "renewed" : "renewal not confirmed");
            renewalsOnTime &= e.getValue().confirmed();
        }
        d.put("leading", leases);
        d.put("selfStops", renewals.selfStops());
        // A detail, not DOWN: such jobs wait without using an attempt, and this node cannot fix them.
        Map<String, Set<String>> unhandled = baton.unhandledKinds();
        if (!unhandled.isEmpty()) {
            d.put("unhandledKinds", unhandled);
        }
        if (n.state() == NodeState.STOPPED) {
            d.put("reason", "this node is recorded as stopped");
            return new Result(false, d);
        } else if (n.stale()) {
            d.put("reason", "node heartbeat overdue (" + sinceBeat + " since the last one)");
            return new Result(false, d);
        } else if (!renewalsOnTime) {
            d.put("reason", "the last renewal of a lease this node leads was not confirmed");
            return new Result(false, d);
        }
        return new Result(true, d);
    }
}
