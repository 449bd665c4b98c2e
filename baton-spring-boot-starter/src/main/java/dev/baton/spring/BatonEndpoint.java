package dev.baton.spring;

import dev.baton.Baton;
import dev.baton.ControlRecord;
import dev.baton.LeaseInfo;
import dev.baton.OwnershipView;
import dev.baton.QueueStats;
import dev.baton.ScheduleInfo;
import dev.baton.ScheduleOrigin;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;

/**
 * {@code /actuator/baton}: this node, the nodes (every one not stopped, then the most recently stopped),
 * the leases held with their owners, queue depths and schedules (the first page of each list). Instants
 * are ISO-8601 text in UTC; absent values are {@code null}. Works on Spring Boot 3 and 4 (the endpoint
 * annotations are the same in both).
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
            m.put("version", s.node().version().orElse(null));
            m.put("runningJobs", s.runningJobs());
            m.put("heartbeatAt", s.node().heartbeatAt().toString());
            m.put("heldBy", s.heldBy().map(BatonEndpoint::control).orElse(null));
            nodes.add(m);
        });
        out.put("nodes", nodes);
        out.put("heldByOperator", baton.heldByOperator());
        out.put(
                "controls",
                baton.controls().standing().stream().map(BatonEndpoint::control).toList());
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
            schedules.add(schedule(s));
        }
        out.put("schedules", schedules);
        return out;
    }

    /**
     * One schedule: where it comes from ({@code origin} declared or runtime; the declaring {@code ownerApp}
     * and the {@code definitionVersion} stored, or a runtime schedule's {@code revision} and who changed it
     * last, when), its spec in words ({@code every 5s}, {@code cron '0 3 * * *' Europe/Berlin}) and in
     * parts ({@code kind}, {@code expression} for cron, {@code intervalMs} for intervals, {@code zone}),
     * the next run, the last run (its due instant, when it fired, the job and that job's current state),
     * the instants dropped by the misfire policy, and whether it is paused, disabled or failing. Every
     * key is always present; a value that does not exist (no run yet) is {@code null}.
     */
    static Map<String, Object> schedule(ScheduleInfo s) {
        boolean interval = "interval".equals(s.specKind());
        Long intervalMs = interval ? intervalMs(s.spec()) : null;
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("name", s.name());
        boolean runtime = s.origin() == ScheduleOrigin.RUNTIME;
        m.put("origin", runtime ? "runtime" : "declared");
        m.put("ownerApp", runtime ? null : s.ownerApp());
        m.put("definitionVersion", s.definitionVersion());
        m.put("revision", runtime ? s.revision() : null);
        m.put("changedBy", s.changedBy().orElse(null));
        m.put("changedAt", s.changedAt().map(Object::toString).orElse(null));
        m.put("spec", describe(s, intervalMs));
        m.put("kind", s.specKind());
        m.put("expression", interval ? null : s.spec());
        m.put("intervalMs", intervalMs);
        m.put("zone", s.timeZone());
        m.put("job", s.jobKind());
        m.put("queue", s.queue());
        m.put("misfirePolicy", s.misfirePolicy());
        m.put("nextRunAt", text(s.nextRunAt()));
        m.put("lastDueAt", s.lastDueAt().map(Object::toString).orElse(null));
        m.put("lastRunAt", s.lastFiredAt().map(Object::toString).orElse(null));
        m.put("lastJobId", s.lastJobId().orElse(null));
        m.put("lastState", s.lastJobState().map(Enum::name).orElse(null));
        m.put("misfires", s.misfiredTotal());
        m.put("enabled", s.enabled());
        m.put("paused", s.paused());
        m.put("failing", s.failing());
        m.put("failingSince", s.failingSince().map(Object::toString).orElse(null));
        m.put("errorCount", s.errorCount());
        m.put("lastError", s.lastError().orElse(null));
        return m;
    }

    /** {@code every 5s}, {@code every 1500ms}, {@code cron '0 3 * * *' Europe/Berlin}; the stored text otherwise. */
    static String describe(ScheduleInfo s, Long intervalMs) {
        if ("cron".equals(s.specKind())) {
            return "cron '" + s.spec() + "' " + s.timeZone();
        }
        if (intervalMs != null) {
            return "every " + duration(intervalMs);
        }
        return s.specKind() + " '" + s.spec() + "'";
    }

    /** The largest whole unit: {@code 2d}, {@code 3h}, {@code 10m}, {@code 5s}, else milliseconds. */
    static String duration(long ms) {
        long[] sizes = {86_400_000L, 3_600_000L, 60_000L, 1_000L};
        String[] units = {"d", "h", "m", "s"};
        for (int i = 0; i < sizes.length; i++) {
            if (ms > 0 && ms % sizes[i] == 0) {
                return ms / sizes[i] + units[i];
            }
        }
        return ms + "ms";
    }

    private static Long intervalMs(String spec) {
        try {
            return Long.valueOf(spec.trim());
        } catch (RuntimeException e) {
            return null; // a stored row Baton would not write; shown as stored
        }
    }

    private static String text(Object o) {
        return o == null ? null : o.toString();
    }

    /** An operator's control as the endpoint shows it. */
    static Map<String, Object> control(ControlRecord r) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("id", r.id());
        m.put("action", r.action().name());
        m.put("target", r.target());
        m.put("by", r.createdBy());
        m.put("at", r.createdAt().toString());
        m.put("reason", r.reason().orElse(null));
        return m;
    }
}
