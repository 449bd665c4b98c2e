package dev.baton.cli;

import dev.baton.Baton;
import dev.baton.ControlRecord;
import dev.baton.FinishedStats;
import dev.baton.LeaseInfo;
import dev.baton.NodeInfo;
import dev.baton.NodeState;
import dev.baton.OwnershipView;
import dev.baton.Page;
import dev.baton.QueueStats;
import dev.baton.ScheduleInfo;
import dev.baton.ScheduleOrigin;
import dev.baton.audit.TextTable;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import javax.sql.DataSource;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(
        name = "status",
        mixinStandardHelpOptions = true,
        header = "Shows nodes, leases, queues, schedules, stuck and failed jobs.",
        description = {
            "Shows the state of a Baton schema right now, on the database clock: every node with its status "
                    + "(active, draining, stale: heartbeat overdue and never stopped, stopped) and role; every lease with "
                    + "its current authorized owner, generation (fencing token) and time left; jobs per queue by state; "
                    + "schedules with their next run; stuck jobs (running with an expired attempt lease: their node "
                    + "died or hangs; the maintenance leader will rescue them) and the latest failed jobs. Read-only."
        },
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {"0:printed", "2:usage error, database unreachable, or the schema is not installed"})
final class StatusCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Mixin
    DbOptions db;

    @Option(names = "--json", description = "Print JSON instead of tables.")
    boolean json;

    @Override
    public Integer call() {
        String url = db.url();
        String schema = db.schema();
        DataSource ds = Db.simple(url);
        Db.probe(ds, url);
        requireInstalled(ds, schema);
        // Never started (so nothing to close): reading leases and nodes needs no registration, heartbeat or listener.
        Baton baton = Baton.builder(ds).schema(schema).migrateOnStart(false).build();
        OwnershipView view = baton.nodes().ownership();
        List<QueueStats> queues = baton.jobs().stats();
        // An operator's look: counting the finished jobs kept for their retention is fine here (not polled).
        Map<String, FinishedStats> finished = new LinkedHashMap<>();
        baton.jobs().finishedStats().forEach(f -> finished.put(f.queue(), f));
        List<ScheduleInfo> schedules =
                baton.schedules().list(null, Page.MAX_LIMIT).items();
        Problems problems = problems(ds, schema);
        List<ControlRecord> controls = baton.controls().standing();
        PrintWriter out = spec.commandLine().getOut();
        out.print(
                json
                        ? Json.write(toJson(schema, view, controls, queues, finished, schedules, problems))
                        : table(schema, view, controls) + table(view, queues, finished, schedules, problems));
        out.flush();
        return Main.EXIT_OK;
    }

    static void requireInstalled(DataSource ds, String schema) {
        try (Connection c = ds.getConnection();
                PreparedStatement ps = c.prepareStatement(
                        "SELECT to_regclass(quote_ident(?) || '.lease') IS NOT NULL AND to_regclass(quote_ident(?) || '.node') IS NOT NULL")) {
            ps.setString(1, schema);
            ps.setString(2, schema);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                if (!rs.getBoolean(1)) {
                    throw CliException.usage("schema '" + schema + "' has no Baton tables; run `baton migrate --schema "
                            + schema + " --jdbc-url ...` first, or pass the right --schema");
                }
            }
        } catch (SQLException e) {
            throw new CliException(Main.EXIT_USAGE, "could not read schema '" + schema + "': " + Db.rootMessage(e), e);
        }
    }

    private static String table(String schema, OwnershipView view, List<ControlRecord> controls) {
        StringBuilder sb = new StringBuilder();
        sb.append("Baton schema '").append(schema).append("'");
        if (!view.dbNow().equals(Instant.EPOCH)) { // EPOCH: nothing was read that carries the database clock
            sb.append(", database time ").append(view.dbNow());
        }
        sb.append("\n\n");
        List<String[]> leaseRows = new ArrayList<>();
        leaseRows.add(new String[] {"LEASE", "OWNER", "GENERATION", "TIME LEFT", "ACQUIRED", "STATE"});
        for (OwnershipView.LeaseOwnership l : view.leases()) {
            LeaseInfo i = l.lease();
            String state = l.authorizedOwner().isPresent()
                    ? (l.ownerNodeKnown() ? "held" : "held (owner not a registered node)")
                    : i.owner().isPresent() ? "expired (owner " + i.owner().get() + ")" : "free (released)";
            leaseRows.add(new String[] {
                i.name(),
                l.authorizedOwner().orElse("-"),
                Long.toString(i.generation()),
                l.authorizedOwner().isPresent() ? Durations.human(i.remaining()) : "-",
                ago(i.acquiredAt(), view.dbNow()),
                state
            });
        }
        sb.append("LEASES (").append(view.leases().size()).append(")\n");
        if (view.leases().isEmpty()) {
            sb.append("  none\n");
        } else {
            TextTable.render(sb, leaseRows);
        }
        sb.append('\n');
        List<String[]> nodeRows = new ArrayList<>();
        nodeRows.add(new String[] {
            "NODE", "STATUS", "ROLE", "VERSION", "HEARTBEAT", "HOST", "PID", "JOBS", "LEASES", "HELD BY"
        });
        for (OwnershipView.NodeStatus n : view.nodes()) {
            NodeInfo i = n.node();
            nodeRows.add(new String[] {
                i.id(),
                nodeStatus(i),
                n.role().name(),
                i.application().map(a -> a + "@" + i.version().orElse("?")).orElse("-"),
                ago(i.heartbeatAt(), i.dbNow()),
                i.host().orElse("-"),
                i.pid().map(String::valueOf).orElse("-"),
                Long.toString(n.runningJobs()),
                n.ownedLeases().isEmpty() ? "-" : String.join(",", n.ownedLeases()),
                n.heldBy().map(StatusCommand::heldBy).orElse("-")
            });
        }
        sb.append("NODES (").append(view.nodes().size()).append(")\n");
        if (view.nodes().isEmpty()) {
            sb.append("  none\n");
        } else {
            TextTable.render(sb, nodeRows);
        }
        sb.append('\n');
        sb.append("CONTROLS (").append(controls.size()).append(")\n");
        if (controls.isEmpty()) {
            sb.append("  none\n");
        } else {
            List<String[]> rows = new ArrayList<>();
            rows.add(new String[] {"ID", "ACTION", "TARGET", "BY", "AT", "REASON"});
            for (ControlRecord r : controls) {
                rows.add(new String[] {
                    Long.toString(r.id()),
                    r.action().name(),
                    r.target(),
                    r.createdBy(),
                    r.createdAt().toString(),
                    r.reason().orElse("-")
                });
            }
            TextTable.render(sb, rows);
        }
        return sb.toString();
    }

    /** "drain_node by alice 2026-…": what holds a node, for the table. */
    static String heldBy(ControlRecord r) {
        return r.action().name().toLowerCase(java.util.Locale.ROOT) + " by " + r.createdBy() + " " + r.createdAt();
    }

    private static String ago(Instant then, Instant now) {
        Duration d = Duration.between(then, now);
        return d.isNegative() ? "just now" : Durations.human(d) + " ago";
    }

    /** active, draining, stale (heartbeat overdue, never stopped) or stopped. */
    static String nodeStatus(NodeInfo i) {
        if (i.state() == NodeState.STOPPED) {
            return "stopped";
        }
        if (i.stale()) {
            return "stale";
        }
        return i.state() == NodeState.DRAINING ? "draining" : "active";
    }

    /** Stuck (running, attempt lease expired) and failed jobs: the total and the first few of each. */
    record Problems(
            long stuck, List<Map<String, Object>> stuckJobs, long failed, List<Map<String, Object>> failedJobs) {}

    static final int LISTED = 10;

    private static Problems problems(DataSource ds, String schema) {
        String q = "\"" + schema + "\".job";
        try (Connection c = ds.getConnection()) {
            List<Map<String, Object>> stuck = rows(
                    c,
                    "SELECT id, queue, kind, attempt, claimed_by, "
                            + "(extract(epoch FROM clock_timestamp() - lease_expires_at) * 1000)::bigint AS overdue_ms FROM "
                            + q
                            + " WHERE state = 'running' AND lease_expires_at < clock_timestamp() ORDER BY lease_expires_at LIMIT "
                            + LISTED);
            long stuckCount = count(
                    c,
                    "SELECT count(*) FROM " + q + " WHERE state = 'running' AND lease_expires_at < clock_timestamp()");
            List<Map<String, Object>> failed = rows(
                    c,
                    "SELECT id, queue, kind, attempt, finished_at::text AS finished_at, "
                            + "errors -> -1 ->> 'message' AS last_error FROM " + q + " WHERE state = 'failed' "
                            + "ORDER BY finished_at DESC NULLS LAST, id DESC LIMIT " + LISTED);
            long failedCount = count(c, "SELECT count(*) FROM " + q + " WHERE state = 'failed'");
            return new Problems(stuckCount, stuck, failedCount, failed);
        } catch (SQLException e) {
            throw new CliException(
                    Main.EXIT_USAGE, "could not read jobs of schema '" + schema + "': " + Db.rootMessage(e), e);
        }
    }

    private static List<Map<String, Object>> rows(Connection c, String sql) throws SQLException {
        List<Map<String, Object>> out = new ArrayList<>();
        try (PreparedStatement ps = c.prepareStatement(sql);
                ResultSet rs = ps.executeQuery()) {
            int n = rs.getMetaData().getColumnCount();
            while (rs.next()) {
                Map<String, Object> m = new LinkedHashMap<>();
                for (int i = 1; i <= n; i++) {
                    m.put(rs.getMetaData().getColumnLabel(i), rs.getObject(i));
                }
                out.add(m);
            }
        }
        return out;
    }

    private static long count(Connection c, String sql) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql);
                ResultSet rs = ps.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private static String table(
            OwnershipView view,
            List<QueueStats> queues,
            Map<String, FinishedStats> finished,
            List<ScheduleInfo> schedules,
            Problems p) {
        StringBuilder sb = new StringBuilder("\n");
        java.util.Set<String> names = new java.util.TreeSet<>(finished.keySet());
        Map<String, QueueStats> depth = new LinkedHashMap<>();
        queues.forEach(q -> depth.put(q.queue(), q));
        names.addAll(depth.keySet());
        sb.append("QUEUES (").append(names.size()).append(")\n");
        if (names.isEmpty()) {
            sb.append("  none\n");
        } else {
            List<String[]> rows = new ArrayList<>();
            rows.add(new String[] {
                "QUEUE", "AVAILABLE", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED", "OLDEST WAITING", "PAUSED"
            });
            for (String q : names) {
                QueueStats qs = depth.get(q);
                FinishedStats f = finished.getOrDefault(q, new FinishedStats(q, 0, 0, 0));
                rows.add(new String[] {
                    q,
                    n(qs == null ? 0 : qs.available()),
                    n(qs == null ? 0 : qs.running()),
                    n(f.succeeded()),
                    n(f.failed()),
                    n(f.cancelled()),
                    qs == null
                            ? "-"
                            : qs.oldestAvailableRunAt()
                                    .map(t -> ago(t, view.dbNow()))
                                    .orElse("-"),
                    qs != null && qs.paused() ? "paused" : "-"
                });
            }
            TextTable.render(sb, rows);
        }
        sb.append('\n');
        sb.append("SCHEDULES (").append(schedules.size()).append(")\n");
        if (schedules.isEmpty()) {
            sb.append("  none\n");
        } else {
            List<String[]> rows = new ArrayList<>();
            rows.add(new String[] {"SCHEDULE", "ORIGIN", "SPEC", "JOB", "NEXT RUN", "LAST RUN", "LAST JOB", "STATE"});
            for (ScheduleInfo si : schedules) {
                rows.add(new String[] {
                    si.name(),
                    origin(si),
                    spec(si),
                    si.jobKind(),
                    si.enabled() && !si.paused()
                            ? si.nextRunAt() + " (" + until(si.nextRunAt(), view.dbNow()) + ")"
                            : "-",
                    si.lastFiredAt().map(t -> ago(t, view.dbNow())).orElse("never"),
                    si.lastJobState()
                            .map(st -> st.name().toLowerCase(java.util.Locale.ROOT))
                            .orElse("-"),
                    !si.enabled()
                            ? "disabled"
                            : si.paused()
                                    ? "paused"
                                    : si.failing()
                                            ? "FAILING (" + si.errorCount() + "x since "
                                                    + ago(si.failingSince().orElseThrow(), view.dbNow()) + ")"
                                            : "enabled"
                });
            }
            TextTable.render(sb, rows);
            for (ScheduleInfo si : schedules) {
                si.lastError()
                        .ifPresent(e -> sb.append("  ")
                                .append(si.name())
                                .append(" cannot fire: ")
                                .append(e)
                                .append('\n'));
            }
        }
        sb.append('\n');
        sb.append("STUCK JOBS (").append(p.stuck()).append(": running with an expired attempt lease)\n");
        if (p.stuck() == 0) {
            sb.append("  none\n");
        } else {
            List<String[]> rows = new ArrayList<>();
            rows.add(new String[] {"JOB", "QUEUE", "KIND", "ATTEMPT", "CLAIMED BY", "LEASE EXPIRED"});
            for (Map<String, Object> m : p.stuckJobs()) {
                rows.add(new String[] {
                    String.valueOf(m.get("id")),
                    String.valueOf(m.get("queue")),
                    String.valueOf(m.get("kind")),
                    String.valueOf(m.get("attempt")),
                    String.valueOf(m.get("claimed_by")),
                    Durations.human(Duration.ofMillis(((Number) m.get("overdue_ms")).longValue())) + " ago"
                });
            }
            TextTable.render(sb, rows);
        }
        sb.append('\n');
        sb.append("FAILED JOBS (")
                .append(p.failed())
                .append(p.failed() > LISTED ? ", latest " + LISTED : "")
                .append(")\n");
        if (p.failed() == 0) {
            sb.append("  none\n");
        } else {
            List<String[]> rows = new ArrayList<>();
            rows.add(new String[] {"JOB", "QUEUE", "KIND", "ATTEMPTS", "FINISHED", "LAST ERROR"});
            for (Map<String, Object> m : p.failedJobs()) {
                String err = m.get("last_error") == null ? "-" : String.valueOf(m.get("last_error"));
                rows.add(new String[] {
                    String.valueOf(m.get("id")),
                    String.valueOf(m.get("queue")),
                    String.valueOf(m.get("kind")),
                    String.valueOf(m.get("attempt")),
                    String.valueOf(m.get("finished_at")),
                    err.length() > 80 ? err.substring(0, 77) + "..." : err
                });
            }
            TextTable.render(sb, rows);
        }
        return sb.toString();
    }

    /**
     * Who defines a schedule: {@code shop 1.4} (the declaring application and the version whose definition
     * is stored), or {@code runtime r12 by alice} (its revision and the author of its last change).
     */
    static String origin(ScheduleInfo si) {
        if (si.origin() == ScheduleOrigin.RUNTIME) {
            return "runtime r" + si.revision()
                    + si.changedBy().map(b -> " by " + b).orElse("");
        }
        return si.ownerApp() + " " + si.definitionVersion();
    }

    private static String spec(ScheduleInfo si) {
        if (si.specKind().equals("interval")) {
            try {
                return "every " + Durations.human(Duration.ofMillis(Long.parseLong(si.spec())));
            } catch (NumberFormatException e) {
                return "interval " + si.spec();
            }
        }
        return "cron " + si.spec() + (si.timeZone().equals("UTC") ? "" : " " + si.timeZone());
    }

    private static String n(long v) {
        return String.format(java.util.Locale.ROOT, "%,d", v);
    }

    private static String until(Instant then, Instant now) {
        Duration d = Duration.between(now, then);
        return d.isNegative() ? "due " + Durations.human(d.negated()) + " ago" : "in " + Durations.human(d);
    }

    private static Map<String, Object> toJson(
            String schema,
            OwnershipView view,
            List<ControlRecord> controls,
            List<QueueStats> queues,
            Map<String, FinishedStats> finished,
            List<ScheduleInfo> schedules,
            Problems p) {
        Map<String, Object> root = toJson(schema, view, controls);
        List<Object> qs = new ArrayList<>();
        Map<String, QueueStats> depth = new LinkedHashMap<>();
        queues.forEach(q -> depth.put(q.queue(), q));
        java.util.Set<String> names = new java.util.TreeSet<>(finished.keySet());
        names.addAll(depth.keySet());
        for (String name : names) {
            QueueStats q = depth.get(name);
            FinishedStats f = finished.getOrDefault(name, new FinishedStats(name, 0, 0, 0));
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("queue", name);
            m.put("available", q == null ? 0 : q.available());
            m.put("running", q == null ? 0 : q.running());
            m.put("succeeded", f.succeeded());
            m.put("failed", f.failed());
            m.put("cancelled", f.cancelled());
            m.put(
                    "oldestAvailableRunAt",
                    q == null
                            ? null
                            : q.oldestAvailableRunAt().map(Instant::toString).orElse(null));
            m.put("paused", q != null && q.paused());
            qs.add(m);
        }
        root.put("queues", qs);
        List<Object> ss = new ArrayList<>();
        for (ScheduleInfo si : schedules) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("name", si.name());
            m.put("origin", si.origin().name().toLowerCase(java.util.Locale.ROOT));
            m.put("ownerApp", si.ownerApp());
            m.put("definitionVersion", si.definitionVersion());
            m.put("revision", si.origin() == ScheduleOrigin.RUNTIME ? si.revision() : null);
            m.put("changedBy", si.changedBy().orElse(null));
            m.put("changedAt", si.changedAt().map(Instant::toString).orElse(null));
            m.put("specKind", si.specKind());
            m.put("spec", si.spec());
            m.put("timeZone", si.timeZone());
            m.put("jobKind", si.jobKind());
            m.put("queue", si.queue());
            m.put("enabled", si.enabled());
            m.put("paused", si.paused());
            m.put("nextRunAt", si.nextRunAt().toString());
            m.put("lastDueAt", si.lastDueAt().map(Instant::toString).orElse(null));
            m.put("lastFiredAt", si.lastFiredAt().map(Instant::toString).orElse(null));
            m.put("lastJobId", si.lastJobId().orElse(null));
            m.put("lastJobState", si.lastJobState().map(Enum::name).orElse(null));
            m.put("misfiredTotal", si.misfiredTotal());
            m.put("failing", si.failing());
            m.put("failingSince", si.failingSince().map(Instant::toString).orElse(null));
            m.put("errorCount", si.errorCount());
            m.put("lastError", si.lastError().orElse(null));
            ss.add(m);
        }
        root.put("schedules", ss);
        Map<String, Object> stuck = new LinkedHashMap<>();
        stuck.put("count", p.stuck());
        stuck.put("jobs", new ArrayList<Object>(p.stuckJobs()));
        root.put("stuckJobs", stuck);
        Map<String, Object> failed = new LinkedHashMap<>();
        failed.put("count", p.failed());
        failed.put("latest", new ArrayList<Object>(p.failedJobs()));
        root.put("failedJobs", failed);
        return root;
    }

    private static Map<String, Object> toJson(String schema, OwnershipView view, List<ControlRecord> controls) {
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("schema", schema);
        root.put(
                "dbNow",
                view.dbNow().equals(Instant.EPOCH) ? null : view.dbNow().toString());
        List<Object> leases = new ArrayList<>();
        for (OwnershipView.LeaseOwnership l : view.leases()) {
            LeaseInfo i = l.lease();
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("name", i.name());
            m.put("authorizedOwner", l.authorizedOwner().orElse(null));
            m.put("ownerNodeKnown", l.ownerNodeKnown());
            m.put("recordedOwner", i.owner().orElse(null));
            m.put("generation", i.generation());
            m.put("held", i.held());
            m.put("remainingMs", i.remaining().toMillis());
            m.put("acquiredAt", i.acquiredAt().toString());
            m.put("renewedAt", i.renewedAt().toString());
            m.put("expiresAt", i.expiresAt().toString());
            leases.add(m);
        }
        root.put("leases", leases);
        List<Object> nodes = new ArrayList<>();
        for (OwnershipView.NodeStatus n : view.nodes()) {
            NodeInfo i = n.node();
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("id", i.id());
            m.put("status", nodeStatus(i));
            m.put("role", n.role().name());
            m.put("state", i.state().name());
            m.put("ownedLeases", List.copyOf(n.ownedLeases()));
            m.put("startedAt", i.startedAt().toString());
            m.put("heartbeatAt", i.heartbeatAt().toString());
            m.put("heartbeatIntervalMs", i.heartbeatInterval().toMillis());
            m.put("stoppedAt", i.stoppedAt().map(Instant::toString).orElse(null));
            m.put("host", i.host().orElse(null));
            m.put("pid", i.pid().orElse(null));
            m.put("protocolVersion", i.protocolVersion());
            m.put("application", i.application().orElse(null));
            m.put("version", i.version().orElse(null));
            m.put("runningJobs", n.runningJobs());
            m.put("heldBy", n.heldBy().map(StatusCommand::control).orElse(null));
            nodes.add(m);
        }
        root.put("nodes", nodes);
        root.put("controls", controls.stream().map(StatusCommand::control).toList());
        return root;
    }

    /** A control as the JSON output shows it. */
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
