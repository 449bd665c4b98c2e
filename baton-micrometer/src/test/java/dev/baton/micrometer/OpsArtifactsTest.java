package dev.baton.micrometer;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.baton.Baton;
import dev.baton.JobHandler;
import dev.baton.JobRequest;
import dev.baton.Leadership;
import dev.baton.LeadershipConfig;
import dev.baton.NotificationMode;
import dev.baton.RateLimiter;
import dev.baton.RetryPolicy;
import dev.baton.WorkerConfig;
import dev.baton.testkit.BatonPostgres;
import dev.baton.testkit.FaultProxy;
import dev.baton.testkit.TestTimeouts;
import io.micrometer.core.instrument.Meter;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.snakeyaml.engine.v2.api.Load;
import org.snakeyaml.engine.v2.api.LoadSettings;

/**
 * The operator artifacts in {@code ops/} (the Grafana dashboard and the Prometheus alert rules) refer only
 * to metrics Baton emits, with label names and label values Baton emits.
 *
 * <p>How. Both files are loaded and their structure checked (every panel has queries with an
 * {@code expr}; every rule has {@code alert}, {@code expr}, {@code for}, {@code labels.severity} and
 * {@code annotations.summary}). Then two real nodes report into one {@link PrometheusMeterRegistry} and are
 * driven until every meter of {@link BatonMicrometer#METER_NAMES} exists, including the ones that only a
 * fault produces: node A reaches the database through a {@link FaultProxy}; when the proxy black-holes,
 * A's leader steps down on its deadline ({@code reason="deadline"}), its running job stops itself
 * ({@code outcome="self_stopped"}), its renewals go unconfirmed and its rate limiter falls back; node B
 * (direct connections) then rescues the job. A broken schedule row fails to fire, and a job of a kind no
 * node handles is reported. The registry's Prometheus scrape is then the truth: every {@code baton_...}
 * name in a PromQL expression must be a sample name in it, and every label matcher on such a name must
 * use a label that series has (and, for a literal {@code =} matcher, a value that series has taken).
 *
 * <p>Seen failing: with a bogus {@code baton_jobs_completed_totl} added to a dashboard panel, and with
 * {@code baton_jobs_claim_latency_seconds_bucket} (no histogram buckets are published) in an alert,
 * {@link #everyMetricTheDashboardAndTheAlertsReferenceIsEmittedByARealNode} failed naming the expression;
 * with {@code reason="deadlines"} it failed on the label value.
 */
class OpsArtifactsTest {
    @RegisterExtension
    static final BatonPostgres PG = new BatonPostgres();

    static final Duration WAIT = TestTimeouts.scaled(Duration.ofSeconds(15));

    /** A Prometheus metric name of Baton's, as written in PromQL. */
    static final Pattern METRIC = Pattern.compile("\\bbaton_[a-z0-9_]+");

    /** A selector with label matchers: {@code baton_x{a="b", c=~"$d"}}. */
    static final Pattern SELECTOR = Pattern.compile("\\b(baton_[a-z0-9_]+)\\s*\\{([^}]*)}");

    /** One label matcher inside braces. */
    static final Pattern MATCHER =
            Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)\\s*(=~|!~|!=|=)\\s*\"((?:[^\"\\\\]|\\\\.)*)\"");

    /** Label names after {@code by} / {@code without}, e.g. {@code sum by (queue, kind) (...)}. */
    static final Pattern GROUPING = Pattern.compile("\\b(?:by|without)\\s*\\(([^)]*)\\)");

    /** One sample line of the text exposition format: name, optional labels, value. */
    static final Pattern SAMPLE = Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\\{(.*)})?\\s+\\S+.*$");

    static final Pattern SAMPLE_LABEL = Pattern.compile("([a-zA-Z_][a-zA-Z0-9_]*)=\"((?:[^\"\\\\]|\\\\.)*)\"");

    record Payload(int n) {}

    /** A PromQL expression and where it was found, for failure messages. */
    record Expr(String where, String promql) {}

    String schema;
    HikariDataSource direct;
    final List<AutoCloseable> closeLater = new ArrayList<>();

    @BeforeEach
    void setUp() {
        schema = PG.freshSchemaName();
        direct = PG.newPool("ops-test", 10);
    }

    @AfterEach
    void tearDown() throws Exception {
        Deque<AutoCloseable> stack = new ArrayDeque<>(closeLater);
        while (!stack.isEmpty()) {
            stack.removeLast().close();
        }
        direct.close();
        PG.dropSchema(schema);
    }

    @Test
    void theDashboardIsAGrafanaDashboardWhosePanelsAllQueryPrometheus() throws IOException {
        JsonNode dashboard = new ObjectMapper().readTree(Files.readString(opsFile("grafana/baton-dashboard.json")));
        assertThat(dashboard.path("title").asText()).isNotBlank();
        assertThat(dashboard.path("uid").asText()).isNotBlank();
        assertThat(dashboard.path("schemaVersion").isInt()).isTrue();
        Set<String> variables = new TreeSet<>();
        for (JsonNode v : dashboard.path("templating").path("list")) {
            variables.add(v.path("name").asText());
        }
        assertThat(variables).contains("DS_PROMETHEUS", "queue", "kind");
        List<JsonNode> panels = panels(dashboard);
        assertThat(panels).hasSizeGreaterThanOrEqualTo(10);
        for (JsonNode p : panels) {
            String title = p.path("title").asText();
            assertThat(title).as("panel %s has a title", p.path("id")).isNotBlank();
            assertThat(p.path("datasource").path("uid").asText())
                    .as("datasource of panel '%s'", title)
                    .isEqualTo("${DS_PROMETHEUS}");
            assertThat(p.path("targets").isArray() && !p.path("targets").isEmpty())
                    .as("panel '%s' has queries", title)
                    .isTrue();
            for (JsonNode t : p.path("targets")) {
                assertThat(t.path("expr").asText())
                        .as("query %s of panel '%s'", t.path("refId"), title)
                        .isNotBlank();
                assertThat(t.path("expr").asText()).as("panel '%s'", title).containsPattern(METRIC);
            }
        }
    }

    @Test
    void theAlertRulesAreAPrometheusRuleFileWithSeverityAndSummaryOnEveryRule() throws IOException {
        Map<String, Object> file = rules();
        List<Map<String, Object>> groups = list(file.get("groups"));
        assertThat(groups).extracting(g -> g.get("name")).contains("baton");
        int count = 0;
        for (Map<String, Object> g : groups) {
            for (Map<String, Object> r : list(g.get("rules"))) {
                count++;
                String alert = String.valueOf(r.get("alert"));
                assertThat(r.get("alert")).as("rule %s has a name", r).isInstanceOf(String.class);
                assertThat(String.valueOf(r.get("expr"))).as("%s: expr", alert).containsPattern(METRIC);
                assertThat(String.valueOf(r.get("for"))).as("%s: for", alert).matches("\\d+[smh]");
                assertThat(map(r.get("labels")).get("severity"))
                        .as("%s: labels.severity", alert)
                        .isIn("critical", "warning", "info");
                assertThat(String.valueOf(map(r.get("annotations")).get("summary")))
                        .as("%s: annotations.summary", alert)
                        .isNotBlank()
                        .isNotEqualTo("null");
                assertThat(String.valueOf(map(r.get("annotations")).get("description")))
                        .as("%s: annotations.description", alert)
                        .isNotBlank()
                        .isNotEqualTo("null");
            }
        }
        assertThat(count).isGreaterThanOrEqualTo(7);
    }

    @Test
    void everyMetricTheDashboardAndTheAlertsReferenceIsEmittedByARealNode() throws Exception {
        List<Expr> exprs = new ArrayList<>();
        exprs.addAll(dashboardExprs());
        exprs.addAll(ruleExprs());
        Set<String> referenced = new TreeSet<>();
        for (Expr e : exprs) {
            Matcher m = METRIC.matcher(e.promql());
            while (m.find()) {
                referenced.add(m.group());
            }
        }
        assertThat(referenced).isNotEmpty();

        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        Map<String, Map<String, Set<String>>> scraped = driveEveryMeterAndScrape(registry);
        System.out.println("Baton series in the scrape: " + scraped.keySet());

        // The scrape has every meter Baton defines, in Prometheus naming: the drive above is complete.
        for (String meter : BatonMicrometer.METER_NAMES) {
            String family = prometheusFamily(registry, meter);
            assertThat(scraped.keySet())
                    .as("meter %s (Prometheus family %s) in the scrape", meter, family)
                    .anyMatch(n -> n.equals(family) || n.startsWith(family + "_"));
        }

        // Every name an expression uses is a series the node exposed.
        for (Expr e : exprs) {
            Matcher m = METRIC.matcher(e.promql());
            while (m.find()) {
                assertThat(scraped)
                        .as(
                                "%s uses %s, which Baton does not emit (scraped: %s):%n%s",
                                e.where(), m.group(), scraped.keySet(), e.promql())
                        .containsKey(m.group());
            }
            checkLabels(e, scraped);
        }

        // And every meter Baton defines is shown somewhere on the dashboard.
        Set<String> onDashboard = new TreeSet<>();
        for (Expr e : dashboardExprs()) {
            Matcher m = METRIC.matcher(e.promql());
            while (m.find()) {
                onDashboard.add(m.group());
            }
        }
        for (String meter : BatonMicrometer.METER_NAMES) {
            String family = prometheusFamily(registry, meter);
            assertThat(onDashboard)
                    .as("meter %s (%s) on the dashboard", meter, family)
                    .anyMatch(n -> n.equals(family) || n.startsWith(family + "_"));
        }
    }

    /** Label names in matchers and groupings exist on the series; literal {@code =} values were seen. */
    private static void checkLabels(Expr e, Map<String, Map<String, Set<String>>> scraped) {
        Matcher s = SELECTOR.matcher(e.promql());
        while (s.find()) {
            Map<String, Set<String>> labels = scraped.getOrDefault(s.group(1), Map.of());
            Matcher m = MATCHER.matcher(s.group(2));
            while (m.find()) {
                String label = m.group(1);
                assertThat(labels)
                        .as("%s: label '%s' on %s (it has %s)", e.where(), label, s.group(1), labels.keySet())
                        .containsKey(label);
                String value = m.group(3);
                if (m.group(2).equals("=") && !value.contains("$")) {
                    assertThat(labels.get(label))
                            .as("%s: %s{%s=\"%s\"} never seen", e.where(), s.group(1), label, value)
                            .contains(value);
                }
            }
        }
        Set<String> allLabels = new TreeSet<>();
        Matcher names = METRIC.matcher(e.promql());
        while (names.find()) {
            allLabels.addAll(scraped.getOrDefault(names.group(), Map.of()).keySet());
        }
        Matcher g = GROUPING.matcher(e.promql());
        while (g.find()) {
            for (String label : g.group(1).split(",")) {
                String l = label.trim();
                if (!l.isEmpty()) {
                    assertThat(allLabels)
                            .as("%s: grouping label '%s' on none of its metrics", e.where(), l)
                            .contains(l);
                }
            }
        }
    }

    /**
     * Two nodes into {@code registry} until every Baton meter exists, then the scrape: sample name to label
     * name to the values seen.
     */
    private Map<String, Map<String, Set<String>>> driveEveryMeterAndScrape(PrometheusMeterRegistry registry)
            throws Exception {
        BatonMicrometer metrics = new BatonMicrometer(registry);
        LeadershipConfig fastLeadership = LeadershipConfig.builder()
                .leaseTtl(Duration.ofSeconds(1))
                .renewInterval(Duration.ofMillis(150))
                .pollInterval(Duration.ofMillis(100))
                .build();
        NotificationMode notifications = PG.pooled() ? NotificationMode.POLL : NotificationMode.AUTO;

        // Node A: every connection through the proxy. It runs the "hold" job's first attempt and a leader.
        FaultProxy proxy = later(FaultProxy.start(PG.host(), PG.port()));
        HikariDataSource aMain = later(proxiedPool("ops-a-main", proxy, 6));
        HikariDataSource aCoord = later(proxiedPool("ops-a-coord", proxy, 3));
        CountDownLatch holdStarted = new CountDownLatch(1);
        Baton a = later(Baton.builder(aMain)
                        .schema(schema)
                        .nodeId("ops-a")
                        .coordinationDataSource(aCoord)
                        .metrics(metrics)
                        .notifications(notifications)
                        .nodeHeartbeat(Duration.ofMillis(200))
                        .maintenance(fastLeadership)
                        .worker(WorkerConfig.builder()
                                .queue("hold", 1)
                                .jobLease(Duration.ofSeconds(2))
                                .heartbeatInterval(Duration.ofMillis(150))
                                .pollInterval(Duration.ofMillis(50))
                                .rescueInterval(Duration.ofMillis(300))
                                .build())
                        .handle("hold", Payload.class, (p, ctx) -> {
                            if (ctx.attempt() == 1) {
                                holdStarted.countDown();
                                while (!ctx.awaitCancellation(Duration.ofMillis(20))) {
                                    // holds its slot until it stops itself
                                }
                            }
                        })
                        .build())
                .start();
        Leadership leader = later(a.leadership("ops.leader", fastLeadership, ctx -> {
                    while (!ctx.awaitCancellation(Duration.ofMillis(50))) {
                        // leads until its term ends
                    }
                })
                .start());
        RateLimiter limiter =
                a.coordination().rateLimiter("ops.limiter", 100, Duration.ofMinutes(1), 10, Duration.ofMillis(200));
        assertThat(limiter.tryAcquire("k").fallback()).isFalse();
        a.jobs().enqueue(JobRequest.of("hold", new Payload(0)).queue("hold"));
        assertThat(holdStarted.await(WAIT.toMillis(), TimeUnit.MILLISECONDS))
                .as("node A runs the first attempt of 'hold'")
                .isTrue();

        // Node B: direct connections; succeeds, fails, retries, sweeps, and later rescues A's job.
        AtomicBoolean flakyFailed = new AtomicBoolean();
        Baton b = later(Baton.builder(direct)
                        .schema(schema)
                        .nodeId("ops-b")
                        .metrics(metrics)
                        .notifications(notifications)
                        .nodeHeartbeat(Duration.ofMillis(200))
                        .maintenance(fastLeadership)
                        .worker(WorkerConfig.builder()
                                .queue("default", 2)
                                .queue("hold", 1)
                                .jobLease(Duration.ofSeconds(2))
                                .heartbeatInterval(Duration.ofMillis(150))
                                .pollInterval(Duration.ofMillis(50))
                                .rescueInterval(Duration.ofMillis(300))
                                .build())
                        .handle("ok", Payload.class, (p, ctx) -> {})
                        .handle(
                                "bad",
                                Payload.class,
                                (p, ctx) -> {
                                    throw new JobHandler.PermanentFailure("permanently bad");
                                },
                                RetryPolicy.immediate())
                        .handle(
                                "flaky",
                                Payload.class,
                                (p, ctx) -> {
                                    if (flakyFailed.compareAndSet(false, true)) {
                                        throw new IllegalStateException("fails once");
                                    }
                                },
                                RetryPolicy.immediate())
                        .handle("hold", Payload.class, (p, ctx) -> {})
                        .sweep("ops-tick", Duration.ofMillis(300), ctx -> {})
                        .build())
                .start();
        AutoCloseable depth = later(metrics.bindQueueDepth(b.jobs(), Duration.ofSeconds(1)));
        b.jobs().enqueue(JobRequest.of("ok", new Payload(1)));
        b.jobs().enqueue(JobRequest.of("bad", new Payload(2)));
        b.jobs().enqueue(JobRequest.of("flaky", new Payload(3)));
        b.jobs().enqueue(JobRequest.of("nobody-handles-this", new Payload(4)));
        insertBrokenSchedule("ops-broken");

        Awaitility.await().atMost(WAIT).untilAsserted(() -> {
            assertThat(count(registry, BatonMicrometer.JOBS_COMPLETED, "kind", "ok", "outcome", "succeeded"))
                    .isEqualTo(1);
            assertThat(count(registry, BatonMicrometer.JOBS_COMPLETED, "kind", "bad", "outcome", "failed"))
                    .isEqualTo(1);
            assertThat(count(registry, BatonMicrometer.JOBS_COMPLETED, "kind", "flaky", "outcome", "retried"))
                    .isEqualTo(1);
            assertThat(count(registry, BatonMicrometer.JOBS_COMPLETED, "kind", "flaky", "outcome", "succeeded"))
                    .isEqualTo(1);
            assertThat(count(registry, BatonMicrometer.UNHANDLED_KINDS, "kind", "nobody-handles-this"))
                    .isPositive();
            assertThat(count(registry, BatonMicrometer.SCHEDULE_FAILURES, "schedule", "ops-broken"))
                    .isPositive();
            assertThat(registry.find(BatonMicrometer.SCHEDULE_FIRE_DELAY).timer())
                    .isNotNull();
            assertThat(registry.find(BatonMicrometer.LEASE_RENEW)
                            .tag("lease", "ops.leader")
                            .tag("outcome", "confirmed")
                            .timer())
                    .isNotNull();
        });

        // The partition: A's leader and A's job stop themselves, its renewals go unconfirmed, its
        // limiter decides locally.
        proxy.blackHole();
        assertThat(limiter.tryAcquire("k").fallback()).isTrue();
        Awaitility.await().atMost(WAIT).untilAsserted(() -> {
            assertThat(count(registry, BatonMicrometer.LEADERSHIP_REVOKED, "lease", "ops.leader", "reason", "deadline"))
                    .isEqualTo(1);
            assertThat(count(registry, BatonMicrometer.JOBS_COMPLETED, "kind", "hold", "outcome", "self_stopped"))
                    .isEqualTo(1);
        });
        assertThat(leader.isLeader()).isFalse();
        proxy.heal();
        proxy.resetAll();
        aMain.getHikariPoolMXBean().softEvictConnections();
        aCoord.getHikariPoolMXBean().softEvictConnections();

        // Once the stopped attempt's lease has expired, the maintenance leader rescues the job and it runs again.
        Awaitility.await().atMost(WAIT).untilAsserted(() -> {
            assertThat(count(registry, BatonMicrometer.JOBS_RESCUED, "kind", "hold", "result", "requeued"))
                    .isEqualTo(1);
            assertThat(count(registry, BatonMicrometer.JOBS_COMPLETED, "kind", "hold", "outcome", "succeeded"))
                    .isEqualTo(1);
            assertThat(registry.find(BatonMicrometer.LEASE_RENEW)
                            .tag("lease", "ops.leader")
                            .tag("outcome", "unconfirmed")
                            .timer())
                    .isNotNull();
            assertThat(registry.find(BatonMicrometer.QUEUE_DEPTH)
                            .tag("queue", "default")
                            .tag("state", "available")
                            .gauge())
                    .isNotNull();
            assertThat(registry.find(BatonMicrometer.QUEUE_LAG)
                            .tag("queue", "default")
                            .gauge())
                    .isNotNull();
        });
        return parseScrape(registry.scrape());
    }

    private static double count(PrometheusMeterRegistry registry, String name, String... tags) {
        return registry.find(name).tags(tags).counters().stream()
                .mapToDouble(io.micrometer.core.instrument.Counter::count)
                .sum();
    }

    /** The Prometheus name of one of Baton's meters, as the registry renders it (without sample suffixes). */
    private static String prometheusFamily(PrometheusMeterRegistry registry, String meter) {
        Meter m = registry.getMeters().stream()
                .filter(x -> x.getId().getName().equals(meter))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no meter " + meter + " was registered"));
        String name = registry.config()
                .namingConvention()
                .name(meter, m.getId().getType(), m.getId().getBaseUnit());
        return name.endsWith("_total") ? name.substring(0, name.length() - "_total".length()) : name;
    }

    private static Map<String, Map<String, Set<String>>> parseScrape(String scrape) {
        Map<String, Map<String, Set<String>>> series = new TreeMap<>();
        for (String line : scrape.split("\n")) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            Matcher m = SAMPLE.matcher(line);
            assertThat(m.matches()).as("a sample line: %s", line).isTrue();
            Map<String, Set<String>> labels = series.computeIfAbsent(m.group(1), k -> new TreeMap<>());
            if (m.group(2) != null) {
                Matcher l = SAMPLE_LABEL.matcher(m.group(2));
                while (l.find()) {
                    labels.computeIfAbsent(l.group(1), k -> new TreeSet<>()).add(l.group(2));
                }
            }
        }
        return series;
    }

    /** A schedule row as a corrupted table (or another version) left it, due now: it cannot fire. */
    private void insertBrokenSchedule(String name) throws Exception {
        try (Connection c = direct.getConnection();
                PreparedStatement ps = c.prepareStatement("INSERT INTO " + schema
                        + ".schedule (name, owner_app, spec_kind, spec, time_zone, job_kind, job_queue, job_payload, "
                        + "job_priority, job_max_attempts, misfire_policy, misfire_threshold_ms, declared_by, "
                        + "definition_version, next_run_at) VALUES (?, 'ops', 'interval', 'every-now-and-then', "
                        + "'UTC', 'ok', 'default', 'null', 50, 3, 'run_once', 60000, ARRAY['1'], '1', "
                        + "clock_timestamp() - interval '1 second')")) {
            ps.setString(1, name);
            ps.executeUpdate();
        }
    }

    /** A small pool through {@code proxy} that gives up on a dead socket within seconds. */
    private HikariDataSource proxiedPool(String name, FaultProxy proxy, int size) {
        HikariConfig cfg = new HikariConfig();
        String url = PG.jdbcUrlVia("127.0.0.1", proxy.port());
        cfg.setJdbcUrl(url + (url.contains("?") ? "&" : "?") + "socketTimeout=2&connectTimeout=2");
        cfg.setMaximumPoolSize(size);
        cfg.setMinimumIdle(0);
        cfg.setConnectionTimeout(1000);
        cfg.setPoolName(name + "-" + schema);
        return new HikariDataSource(cfg);
    }

    private <T extends AutoCloseable> T later(T closeable) {
        closeLater.add(closeable);
        return closeable;
    }

    // ------------------------------------------------------------------ the files

    /** {@code ops/<relative>} at the repository root, found from this module or the root. */
    static Path opsFile(String relative) {
        Path here = Path.of("").toAbsolutePath();
        for (Path dir = here; dir != null; dir = dir.getParent()) {
            Path candidate = dir.resolve("ops").resolve(relative);
            if (Files.isRegularFile(candidate)) {
                return candidate;
            }
        }
        throw new AssertionError("ops/" + relative + " not found above " + here);
    }

    static List<JsonNode> panels(JsonNode dashboard) {
        List<JsonNode> out = new ArrayList<>();
        for (JsonNode p : dashboard.path("panels")) {
            if (p.path("type").asText().equals("row")) {
                p.path("panels").forEach(out::add); // a collapsed row keeps its panels inside
            } else {
                out.add(p);
            }
        }
        return out;
    }

    static List<Expr> dashboardExprs() throws IOException {
        JsonNode dashboard = new ObjectMapper().readTree(Files.readString(opsFile("grafana/baton-dashboard.json")));
        List<Expr> out = new ArrayList<>();
        for (JsonNode p : panels(dashboard)) {
            for (JsonNode t : p.path("targets")) {
                out.add(new Expr(
                        "dashboard panel '" + p.path("title").asText() + "' query "
                                + t.path("refId").asText(),
                        t.path("expr").asText()));
            }
        }
        for (JsonNode v : dashboard.path("templating").path("list")) {
            if (v.path("type").asText().equals("query")) {
                JsonNode q = v.path("query");
                String text = q.isObject() ? q.path("query").asText() : q.asText();
                out.add(new Expr("dashboard variable '" + v.path("name").asText() + "'", text));
            }
        }
        return out;
    }

    static Map<String, Object> rules() throws IOException {
        Load load = new Load(LoadSettings.builder().build());
        return map(load.loadFromString(Files.readString(opsFile("prometheus/baton-alerts.yml"))));
    }

    static List<Expr> ruleExprs() throws IOException {
        List<Expr> out = new ArrayList<>();
        for (Map<String, Object> g : list(rules().get("groups"))) {
            for (Map<String, Object> r : list(g.get("rules"))) {
                out.add(new Expr("alert " + r.get("alert"), String.valueOf(r.get("expr"))));
            }
        }
        return out;
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> map(Object o) {
        assertThat(o).isInstanceOf(Map.class);
        return (Map<String, Object>) o;
    }

    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> list(Object o) {
        assertThat(o).isInstanceOf(List.class);
        return (List<Map<String, Object>>) o;
    }
}
