package dev.baton.console;

import dev.baton.Admin;
import dev.baton.ControlAction;
import dev.baton.ControlRecord;
import dev.baton.Controls;
import dev.baton.JobError;
import dev.baton.JobInfo;
import dev.baton.JobQuery;
import dev.baton.JobState;
import dev.baton.LeaseHistoryEntry;
import dev.baton.LeaseInfo;
import dev.baton.NodeInfo;
import dev.baton.OwnershipView;
import dev.baton.Page;
import dev.baton.QueueInfo;
import dev.baton.ScheduleInfo;
import dev.baton.ThroughputBucket;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;

/**
 * The view models of the console's pages: plain maps and lists of strings, numbers and booleans, read from
 * {@link Admin}. Every value is shown by the templates with {@code th:text} (escaped); nothing here builds
 * markup, and every URL built here is the console's own path with encoded parameters.
 */
final class Pages {
    /** The overview's charts: the last hour by minute. */
    static final Duration CHART_WINDOW = Duration.ofHours(1);

    static final Duration CHART_BUCKET = Duration.ofMinutes(1);
    /** Generations shown on a lease's timeline. */
    static final int TIMELINE_TERMS = 50;
    /** Rows of the leases, schedules and audit lists per page. */
    static final int LIST_PAGE = 100;
    /** The longest error message shown in the jobs list (the job's page shows it whole). */
    static final int LIST_MESSAGE_CHARS = 160;

    private static final DateTimeFormatter TIME =
            DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss'Z'", Locale.ROOT).withZone(ZoneOffset.UTC);
    private static final DateTimeFormatter HM =
            DateTimeFormatter.ofPattern("HH:mm", Locale.ROOT).withZone(ZoneOffset.UTC);

    private final Admin admin;

    Pages(Admin admin) {
        this.admin = admin;
    }

    // ---------------------------------------------------------------- overview

    void overview(Map<String, Object> m, String base) {
        List<Map<String, Object>> queues = new ArrayList<>();
        for (QueueInfo q : admin.queues()) {
            queues.add(row(
                    "name", q.stats().queue(),
                    "available", q.stats().available(),
                    "running", q.stats().running(),
                    "lag", human(q.lag()),
                    "lagging", !q.lag().isZero(),
                    "paused", q.stats().paused(),
                    "href", base + "/jobs" + query("queue", q.stats().queue())));
        }
        m.put("queues", queues);
        List<ThroughputBucket> buckets = admin.throughput(CHART_WINDOW, CHART_BUCKET);
        m.put("throughputChart", Charts.bars(buckets, b -> b.succeeded() + b.failed() + b.cancelled(), "finished"));
        m.put("failureChart", Charts.bars(buckets, b -> b.failed() + b.cancelled(), "failed or cancelled"));
        long finished = 0;
        long failed = 0;
        for (ThroughputBucket b : buckets) {
            finished += b.succeeded() + b.failed() + b.cancelled();
            failed += b.failed() + b.cancelled();
        }
        m.put("finishedLastHour", finished);
        m.put("failedLastHour", failed);
        m.put("chartFrom", buckets.isEmpty() ? "" : HM.format(buckets.get(0).start()));
        m.put(
                "chartTo",
                buckets.isEmpty()
                        ? ""
                        : HM.format(buckets.get(buckets.size() - 1).start()));
        OwnershipView view = admin.nodes().ownership();
        m.put("dbNow", time(view.dbNow()));
        m.put("nodes", nodes(view, base));
        List<Map<String, Object>> leases = new ArrayList<>();
        for (OwnershipView.LeaseOwnership l : view.leases()) {
            leases.add(leaseRow(l.lease(), base, l.authorizedOwner()));
        }
        m.put("leases", leases);
    }

    // ---------------------------------------------------------------- jobs

    /** The filters of the jobs page as given (strings, for the form and the links). */
    record JobFilter(
            Set<JobState> states,
            String queue,
            String kind,
            String from,
            String to,
            String error,
            String concurrencyKey,
            String idempotencyKey,
            String size) {

        static JobFilter of(Function<String, String> param, Function<String, String[]> params) {
            Set<JobState> states = EnumSet.noneOf(JobState.class);
            String[] given = params.apply("state");
            if (given != null) {
                for (String s : given) {
                    if (s == null || s.isBlank()) {
                        continue;
                    }
                    try {
                        states.add(JobState.valueOf(s.strip().toUpperCase(Locale.ROOT)));
                    } catch (IllegalArgumentException e) {
                        throw new IllegalArgumentException(
                                "state must be one of " + EnumSet.allOf(JobState.class) + ", but was '" + s + "'");
                    }
                }
            }
            return new JobFilter(
                    states,
                    trim(param.apply("queue")),
                    trim(param.apply("kind")),
                    trim(param.apply("from")),
                    trim(param.apply("to")),
                    trim(param.apply("error")),
                    trim(param.apply("ckey")),
                    trim(param.apply("ikey")),
                    trim(param.apply("size")));
        }

        JobQuery toQuery() {
            JobQuery q = JobQuery.all();
            if (!states.isEmpty()) {
                q = q.states(states.toArray(JobState[]::new));
            }
            if (queue != null) {
                q = q.queue(queue);
            }
            if (kind != null) {
                q = q.kind(kind);
            }
            if (from != null) {
                q = q.createdFrom(instant("from", from));
            }
            if (to != null) {
                q = q.createdTo(instant("to", to));
            }
            if (error != null) {
                q = q.errorContains(error);
            }
            if (concurrencyKey != null) {
                q = q.concurrencyKey(concurrencyKey);
            }
            if (idempotencyKey != null) {
                q = q.idempotencyKey(idempotencyKey);
            }
            if (size != null) {
                int n;
                try {
                    n = Integer.parseInt(size);
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("size must be a number of jobs per page (1 to "
                            + JobQuery.MAX_PAGE_SIZE + "), but was '" + size + "'");
                }
                q = q.pageSize(n);
            }
            return q;
        }

        /** The filters as URL parameters, in a fixed order, for links and the "all matching" form. */
        Map<String, List<String>> params() {
            Map<String, List<String>> p = new LinkedHashMap<>();
            if (!states.isEmpty()) {
                p.put(
                        "state",
                        states.stream()
                                .map(s -> s.name().toLowerCase(Locale.ROOT))
                                .toList());
            }
            put(p, "queue", queue);
            put(p, "kind", kind);
            put(p, "from", from);
            put(p, "to", to);
            put(p, "error", error);
            put(p, "ckey", concurrencyKey);
            put(p, "ikey", idempotencyKey);
            put(p, "size", size);
            return p;
        }

        private static void put(Map<String, List<String>> p, String k, String v) {
            if (v != null) {
                p.put(k, List.of(v));
            }
        }
    }

    /**
     * Parses an instant from the filter form: ISO-8601 with a zone ({@code 2026-01-02T03:04:05Z}) or a
     * {@code datetime-local} value, read as UTC (the console shows every time in UTC).
     */
    static Instant instant(String field, String text) {
        try {
            return Instant.parse(text);
        } catch (DateTimeParseException e) {
            try {
                return LocalDateTime.parse(text).toInstant(ZoneOffset.UTC);
            } catch (DateTimeParseException e2) {
                throw new IllegalArgumentException(field + " must be a time like 2026-01-02T03:04 (UTC) or "
                        + "2026-01-02T03:04:05Z, but was '" + text + "'");
            }
        }
    }

    void jobs(Map<String, Object> m, String base, JobFilter f, String cursor) {
        Map<String, List<String>> params = f.params();
        m.put("filter", filterModel(f));
        m.put("filterParams", flat(params));
        m.put("back", "/jobs" + query(params));
        List<Map<String, Object>> rows = new ArrayList<>();
        m.put("jobs", rows);
        m.put("next", "");
        JobQuery q = f.toQuery();
        m.put("queryText", q.toString());
        Page<JobInfo> page = admin.searchJobs(q, cursor);
        for (JobInfo j : page.items()) {
            Optional<JobError> last = j.errors().isEmpty()
                    ? Optional.empty()
                    : Optional.of(j.errors().get(j.errors().size() - 1));
            rows.add(row(
                    "id", j.id(),
                    "href", base + "/jobs/" + j.id(),
                    "queue", j.queue(),
                    "kind", j.kind(),
                    "state", j.state().name().toLowerCase(Locale.ROOT),
                    "attempt", j.attempt() + "/" + j.maxAttempts(),
                    "created", time(j.createdAt()),
                    "finished", j.finishedAt().map(Pages::time).orElse(""),
                    "error",
                            last.map(e -> clip(e.message(), LIST_MESSAGE_CHARS)).orElse("")));
        }
        if (page.next().isPresent()) {
            Map<String, List<String>> next = new LinkedHashMap<>(params);
            next.put("cursor", List.of(page.next().get()));
            m.put("next", base + "/jobs" + query(next));
        }
        m.put("firstPage", base + "/jobs" + query(params));
        m.put("paged", cursor != null && !cursor.isEmpty());
        m.put("maxBulk", Admin.MAX_BULK);
    }

    private static Map<String, Object> filterModel(JobFilter f) {
        Map<String, Object> m = row(
                "queue", nz(f.queue()),
                "kind", nz(f.kind()),
                "from", nz(f.from()),
                "to", nz(f.to()),
                "error", nz(f.error()),
                "ckey", nz(f.concurrencyKey()),
                "ikey", nz(f.idempotencyKey()),
                "size", nz(f.size()));
        List<Map<String, Object>> states = new ArrayList<>();
        for (JobState s : JobState.values()) {
            states.add(row(
                    "value",
                    s.name().toLowerCase(Locale.ROOT),
                    "checked",
                    f.states().contains(s)));
        }
        m.put("states", states);
        return m;
    }

    /** Job {@code id}, or false if there is none. */
    boolean job(Map<String, Object> m, long id) {
        Optional<JobInfo> found = admin.job(id);
        if (found.isEmpty()) {
            return false;
        }
        JobInfo j = found.get();
        m.put(
                "job",
                row(
                        "id", j.id(),
                        "queue", j.queue(),
                        "kind", j.kind(),
                        "state", j.state().name().toLowerCase(Locale.ROOT),
                        "priority", j.priority(),
                        "attempt", j.attempt() + " of " + j.maxAttempts(),
                        "runAt", time(j.runAt()),
                        "created", time(j.createdAt()),
                        "finished", j.finishedAt().map(Pages::time).orElse("-"),
                        "claimedBy", j.claimedBy().orElse("-"),
                        "concurrencyKey", j.concurrencyKey().orElse("-"),
                        "idempotencyKey", j.idempotencyKey().orElse("-"),
                        "stalls", j.stallCount(),
                        "cancelRequested", j.cancelRequested(),
                        "payload", j.payloadJson() == null ? "" : j.payloadJson(),
                        "retryPolicy", j.retryPolicy().map(Object::toString).orElse("the handler's")));
        List<Map<String, Object>> meta = new ArrayList<>();
        j.metadata().forEach((k, v) -> meta.add(row("key", k, "value", v)));
        m.put("metadata", meta);
        List<Map<String, Object>> errors = new ArrayList<>();
        for (JobError e : j.errors()) {
            errors.add(row(
                    "attempt", e.attempt(),
                    "at", time(e.at()),
                    "node", nz(e.node()),
                    "errorClass", nz(e.errorClass()),
                    "message", nz(e.message()),
                    "stack", nz(e.stack())));
        }
        m.put("errors", errors);
        m.put("back", "/jobs/" + j.id());
        return true;
    }

    // ---------------------------------------------------------------- schedules

    void schedules(Map<String, Object> m, String base, String after) {
        Page<ScheduleInfo> page = admin.schedules().list(after, LIST_PAGE);
        List<Map<String, Object>> rows = new ArrayList<>();
        for (ScheduleInfo s : page.items()) {
            rows.add(row(
                    "name", s.name(),
                    "spec", s.specKind() + " " + s.spec(),
                    "timeZone", s.timeZone(),
                    "jobKind", s.jobKind(),
                    "queue", s.queue(),
                    "next", s.paused() ? "paused" : time(s.nextRunAt()),
                    "lastDue", s.lastDueAt().map(Pages::time).orElse("-"),
                    "lastFired", s.lastFiredAt().map(Pages::time).orElse("-"),
                    "lastJob", s.lastJobId().map(String::valueOf).orElse(""),
                    "lastJobHref", s.lastJobId().map(id -> base + "/jobs/" + id).orElse(""),
                    "lastJobState",
                            s.lastJobState()
                                    .map(x -> x.name().toLowerCase(Locale.ROOT))
                                    .orElse(""),
                    "misfirePolicy", s.misfirePolicy(),
                    "misfired", s.misfiredTotal(),
                    "origin", s.origin().name().toLowerCase(Locale.ROOT),
                    "declaredBy", s.declaredBy().isEmpty() ? "-" : String.join(", ", s.declaredBy()),
                    "definitionVersion", s.definitionVersion(),
                    "paused", s.paused(),
                    "failing", s.failing(),
                    "lastError", s.lastError().orElse("")));
        }
        m.put("schedules", rows);
        m.put(
                "next",
                page.next().map(n -> base + "/schedules" + query("after", n)).orElse(""));
        m.put("back", "/schedules");
    }

    // ---------------------------------------------------------------- leases

    void leases(Map<String, Object> m, String base, String after) {
        Page<LeaseInfo> page = admin.leases().list(after, LIST_PAGE);
        List<Map<String, Object>> rows = new ArrayList<>();
        for (LeaseInfo l : page.items()) {
            rows.add(leaseRow(l, base, l.held() ? l.owner() : Optional.empty()));
        }
        m.put("leases", rows);
        m.put("next", page.next().map(n -> base + "/leases" + query("after", n)).orElse(""));
    }

    private static Map<String, Object> leaseRow(LeaseInfo l, String base, Optional<String> authorized) {
        String state = authorized.isPresent()
                ? "held"
                : l.owner().isPresent() ? "expired (was " + l.owner().get() + ")" : "free";
        return row(
                "name", l.name(),
                "href", base + "/lease" + query("name", l.name()),
                "owner", authorized.orElse("-"),
                "generation", l.generation(),
                "held", authorized.isPresent(),
                "state", state,
                "left", authorized.isPresent() ? human(l.remaining()) : "-",
                "acquired", time(l.acquiredAt()),
                "renewed", time(l.renewedAt()));
    }

    /** Lease {@code name} with its timeline of terms, or false if it was never acquired. */
    boolean lease(Map<String, Object> m, String base, String name) {
        Optional<LeaseInfo> found = admin.leases().inspect(name);
        if (found.isEmpty()) {
            return false;
        }
        LeaseInfo l = found.get();
        m.put("lease", leaseRow(l, base, l.held() ? l.owner() : Optional.empty()));
        m.put("ownerMeta", l.ownerMeta().orElse(""));
        m.put("dbNow", time(l.dbNow()));
        List<LeaseHistoryEntry> history = admin.leases().history(name, TIMELINE_TERMS);
        List<Map<String, Object>> terms = new ArrayList<>();
        for (LeaseHistoryEntry h : history) {
            terms.add(row(
                    "generation", h.generation(),
                    "owner", h.owner(),
                    "acquired", time(h.acquiredAt()),
                    "ended", h.endedAt().map(Pages::time).orElse(h.generation() == l.generation() ? "-" : "?"),
                    "how",
                            h.endReason()
                                    .orElse(
                                            h.generation() == l.generation()
                                                    ? (l.held() ? "current" : "expired, not taken over")
                                                    : "")));
        }
        m.put("terms", terms);
        m.put("timeline", Charts.timeline(l, history));
        m.put(
                "expireHref",
                l.held()
                        ? base + "/lease/expire"
                                + query(Map.of("name", List.of(name), "generation", List.of("" + l.generation())))
                        : "");
        return true;
    }

    /** The confirmation of an expiry: the lease's live term and what expiring it does. */
    boolean expireConfirmation(Map<String, Object> m, String base, String name, long generation) {
        Optional<LeaseInfo> found = admin.leases().inspect(name);
        if (found.isEmpty()) {
            return false;
        }
        LeaseInfo l = found.get();
        m.put("lease", leaseRow(l, base, l.held() ? l.owner() : Optional.empty()));
        m.put("generation", generation);
        m.put("current", l.held() && l.generation() == generation);
        m.put("consequences", Controls.EXPIRE_LEASE_CONSEQUENCES);
        m.put("back", "/lease" + query("name", name));
        return true;
    }

    // ---------------------------------------------------------------- nodes and controls

    void nodes(Map<String, Object> m, String base) {
        OwnershipView view = admin.nodes().ownership();
        m.put("dbNow", time(view.dbNow()));
        List<Map<String, Object>> nodes = nodes(view, base);
        m.put("nodes", nodes);
        Set<String> versions = new LinkedHashSet<>();
        for (OwnershipView.NodeStatus n : view.nodes()) {
            NodeInfo i = n.node();
            if (i.application().isPresent() && i.version().isPresent()) {
                versions.add(i.application().get() + "@" + i.version().get());
            }
        }
        List<Map<String, Object>> vs = new ArrayList<>();
        Set<String> retired = new LinkedHashSet<>();
        for (ControlRecord r : admin.controls().standing()) {
            if (r.action() == ControlAction.RETIRE_VERSION) {
                retired.add(r.target());
                versions.add(r.target());
            }
        }
        for (String v : versions) {
            int at = v.lastIndexOf('@');
            vs.add(row(
                    "target", v,
                    "app", v.substring(0, at),
                    "version", v.substring(at + 1),
                    "retired", retired.contains(v)));
        }
        m.put("versions", vs);
        m.put("back", "/nodes");
    }

    private static List<Map<String, Object>> nodes(OwnershipView view, String base) {
        List<Map<String, Object>> rows = new ArrayList<>();
        for (OwnershipView.NodeStatus n : view.nodes()) {
            NodeInfo i = n.node();
            rows.add(row(
                    "id", i.id(),
                    "state", i.state().name().toLowerCase(Locale.ROOT),
                    "role", n.role().name(),
                    "roleClass",
                            "role-" + n.role().name().toLowerCase(Locale.ROOT).replace('_', '-'),
                    "version",
                            i.application()
                                    .map(a -> a + "@" + i.version().orElse("?"))
                                    .orElse("-"),
                    "host", i.host().orElse("-"),
                    "pid", i.pid().map(String::valueOf).orElse("-"),
                    "started", time(i.startedAt()),
                    "heartbeat", human(Duration.between(i.heartbeatAt(), i.dbNow())) + " ago",
                    "running", n.runningJobs(),
                    "leases", n.ownedLeases().isEmpty() ? "-" : String.join(", ", n.ownedLeases()),
                    "heldBy", n.heldBy().map(Pages::heldBy).orElse("-"),
                    "drained",
                            n.heldBy()
                                    .map(r -> r.action() == ControlAction.DRAIN_NODE)
                                    .orElse(false),
                    "stopped", i.stoppedAt().isPresent(),
                    "jobsHref", base + "/jobs" + query("state", "running")));
        }
        return rows;
    }

    private static String heldBy(ControlRecord r) {
        return r.action().name().toLowerCase(Locale.ROOT).replace('_', ' ') + " by " + r.createdBy() + " at "
                + time(r.createdAt()) + r.reason().map(x -> ": " + x).orElse("");
    }

    void controls(Map<String, Object> m, String base, String after) {
        List<Map<String, Object>> standing = new ArrayList<>();
        for (ControlRecord r : admin.controls().standing()) {
            Map<String, Object> row = control(r);
            String lift = switch (r.action()) {
                case DRAIN_NODE -> "node/resume";
                case RETIRE_VERSION -> "version/unretire";
                case DISABLE_KIND -> "kind/enable";
                default -> "";
            };
            row.put("lift", lift);
            if (r.action() == ControlAction.RETIRE_VERSION) {
                int at = r.target().lastIndexOf('@');
                row.put("app", r.target().substring(0, Math.max(at, 0)));
                row.put("version", r.target().substring(at + 1));
            }
            standing.add(row);
        }
        m.put("standing", standing);
        Page<ControlRecord> page = admin.controls().audit(after, LIST_PAGE);
        List<Map<String, Object>> audit = new ArrayList<>();
        page.items().forEach(r -> audit.add(control(r)));
        m.put("audit", audit);
        m.put(
                "next",
                page.next().map(n -> base + "/controls" + query("after", n)).orElse(""));
        m.put("back", "/controls");
    }

    private static Map<String, Object> control(ControlRecord r) {
        return row(
                "id", r.id(),
                "action", r.action().name().toLowerCase(Locale.ROOT).replace('_', ' '),
                "target", r.target(),
                "active", r.active(),
                "reason", r.reason().orElse(""),
                "detail", r.detail().orElse(""),
                "by", r.createdBy(),
                "at", time(r.createdAt()),
                "lifted",
                        r.liftedAt()
                                .map(t -> time(t) + " by " + r.liftedBy().orElse("?"))
                                .orElse(""));
    }

    // ---------------------------------------------------------------- helpers

    static Map<String, Object> row(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put((String) kv[i], kv[i + 1]);
        }
        return m;
    }

    static String time(Instant t) {
        return t == null ? "-" : TIME.format(t);
    }

    /** A duration for people: {@code 850 ms}, {@code 12.3 s}, {@code 4 min 5 s}, {@code 2 h 3 min}, {@code 3 d 4 h}. */
    static String human(Duration d) {
        if (d.isNegative()) {
            d = Duration.ZERO;
        }
        long ms = d.toMillis();
        if (ms < 1000) {
            return ms + " ms";
        }
        if (ms < 60_000) {
            return String.format(Locale.ROOT, "%.1f s", ms / 1000.0);
        }
        long s = d.getSeconds();
        if (s < 3600) {
            return (s / 60) + " min " + (s % 60) + " s";
        }
        if (s < 86_400) {
            return (s / 3600) + " h " + (s % 3600 / 60) + " min";
        }
        return (s / 86_400) + " d " + (s % 86_400 / 3600) + " h";
    }

    static String clip(String s, int max) {
        if (s == null) {
            return "";
        }
        return s.length() <= max ? s : s.substring(0, max) + "…";
    }

    private static String nz(String s) {
        return s == null ? "" : s;
    }

    private static String trim(String s) {
        return s == null || s.isBlank() ? null : s.strip();
    }

    static String query(String k, String v) {
        return query(Map.of(k, List.of(v)));
    }

    static String query(Map<String, List<String>> params) {
        StringBuilder sb = new StringBuilder();
        for (Map.Entry<String, List<String>> e : params.entrySet()) {
            for (String v : e.getValue()) {
                sb.append(sb.length() == 0 ? '?' : '&')
                        .append(enc(e.getKey()))
                        .append('=')
                        .append(enc(v));
            }
        }
        return sb.toString();
    }

    /** The parameters as name/value pairs, for hidden form fields. */
    private static List<Map<String, Object>> flat(Map<String, List<String>> params) {
        List<Map<String, Object>> out = new ArrayList<>();
        params.forEach((k, vs) -> vs.forEach(v -> out.add(row("name", k, "value", v))));
        return out;
    }

    static String enc(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }
}
