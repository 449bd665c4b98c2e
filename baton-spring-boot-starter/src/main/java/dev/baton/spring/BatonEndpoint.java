package dev.baton.spring;

import dev.baton.Baton;
import dev.baton.LeaseInfo;
import dev.baton.QueueStats;
import dev.baton.ScheduleInfo;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;

/** {@code /actuator/baton}: this node, every node, the leases with their owners, queue depths and schedules. */
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
        List<Map<String, Object>> nodes = new ArrayList<>();
        baton.nodes().list().forEach(n -> {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("id", n.id());
            m.put("state", n.stale() ? "STALE" : n.state().name());
            m.put("heartbeatAt", n.heartbeatAt().toString());
            nodes.add(m);
        });
        out.put("nodes", nodes);
        List<Map<String, Object>> leases = new ArrayList<>();
        for (LeaseInfo l : baton.leases().list()) {
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
            m.put("failed", q.failed());
            m.put("paused", q.paused());
            m.put("oldestAvailableRunAt", q.oldestAvailableRunAt().map(Object::toString).orElse(null));
            queues.add(m);
        }
        out.put("queues", queues);
        List<Map<String, Object>> schedules = new ArrayList<>();
        for (ScheduleInfo s : baton.schedules().list()) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("name", s.name());
            m.put("spec", s.spec());
            m.put("nextRunAt", String.valueOf(s.nextRunAt()));
            m.put("paused", s.paused());
            schedules.add(m);
        }
        out.put("schedules", schedules);
        return out;
    }
}
