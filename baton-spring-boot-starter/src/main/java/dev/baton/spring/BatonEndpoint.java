package dev.baton.spring;

import dev.baton.Baton;
import dev.baton.LeaseInfo;
import dev.baton.OwnershipView;
import dev.baton.QueueStats;
import dev.baton.ScheduleInfo;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;

/**
 * {@code /actuator/baton}: this node, the nodes (every one not stopped, then the most recently stopped),
 * the leases held with their owners, queue depths and schedules (the first page of each list).
 */
@Endpoint(id = "baton")
public class BatonEndpoint {
    private final Baton baton;

    public BatonEndpoint(Baton baton) {
        this.baton = baton;
    }

    @ReadOperation
    public Map<String, Object> baton() {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("node", baton.nodeId());
        out.put("schema", baton.schema());
        out.put("notifications", baton.notificationsActive() ? "LISTEN" : "polling");
        OwnershipView view = baton.nodes().ownership();
        List<Map<String, Object>> nodes = new ArrayList<>();
        view.nodes().forEach(s -> {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("id", s.node().id());
            m.put("state", s.node().stale() ? "STALE" : s.node().state().name());
            m.put("role", s.role().name());
            m.put("heartbeatAt", s.node().heartbeatAt().toString());
            nodes.add(m);
        });
        out.put("nodes", nodes);
        List<Map<String, Object>> leases = new ArrayList<>();
        for (OwnershipView.LeaseOwnership o : view.leases()) {
            LeaseInfo l = o.lease();
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("name", l.name());
            m.put("owner", l.held() ? l.owner().orElse(null) : null);
            m.put("generation", l.generation());
            m.put("expiresAt", l.held() ? l.expiresAt().toString() : null);
            leases.add(m);
        }
        out.put("leases", leases);
        List<Map<String, Object>> queues = new ArrayList<>();
        for (QueueStats q : baton.jobs().stats()) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("queue", q.queue());
            m.put("available", q.available());
            m.put("running", q.running());
            m.put("paused", q.paused());
            m.put(
                    "oldestAvailableRunAt",
                    q.oldestAvailableRunAt().map(Object::toString).orElse(null));
            queues.add(m);
        }
        out.put("queues", queues);
        List<Map<String, Object>> schedules = new ArrayList<>();
        for (ScheduleInfo s : baton.schedules().list(null, 1000).items()) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("name", s.name());
            m.put("spec", s.spec());
            m.put("nextRunAt", String.valueOf(s.nextRunAt()));
            m.put("paused", s.paused());
            m.put("failing", s.failing());
            s.lastError().ifPresent(e -> m.put("lastError", e));
            schedules.add(m);
        }
        out.put("schedules", schedules);
        return out;
    }
}
