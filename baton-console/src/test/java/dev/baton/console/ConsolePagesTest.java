package dev.baton.console;

import static dev.baton.console.Fixture.XSS;
import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.testkit.BatonPostgres;
import java.net.http.HttpResponse;
import java.util.List;
import org.jsoup.Jsoup;
import org.jsoup.nodes.Document;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Every page of the console renders against a populated schema (HTTP and jsoup, no browser), shows what it
 * should, and shows attacker-controlled text as text. To see the escaping tests fail, switch one {@code th:text}
 * of job.html, jobs.html or nodes.html to {@code th:utext}: a {@code <script>} element appears in the DOM.
 */
class ConsolePagesTest {
    @RegisterExtension
    static final BatonPostgres PG = new BatonPostgres();

    static final String TOKEN = "test-token-0123456789abcdef";
    static Fixture fixture;
    static ConsoleJetty jetty;
    static Client client;

    @BeforeAll
    static void start() throws Exception {
        fixture = Fixture.populate(PG);
        jetty = ConsoleJetty.start(
                new BatonConsoleServlet(fixture.tool, ConsoleSettings.withActions(ConsoleAccess.token(TOKEN))));
        client = new Client(jetty);
        assertThat(client.signIn(TOKEN).statusCode()).isEqualTo(303);
    }

    @AfterAll
    static void stop() {
        if (jetty != null) {
            jetty.close();
        }
        if (fixture != null) {
            fixture.close();
        }
    }

    /** Every page, as an operator opens it. */
    static List<String> pages() {
        return List.of(
                "/",
                "/jobs",
                "/jobs?state=failed&queue=mail",
                "/jobs/" + fixture.xssJob,
                "/schedules",
                "/leases",
                "/lease?name=orders-sweep",
                "/lease?name=" + java.net.URLEncoder.encode(XSS, java.nio.charset.StandardCharsets.UTF_8),
                "/lease/expire?name=orders-sweep&generation=2",
                "/nodes",
                "/controls");
    }

    @Test
    void everyPageRendersWhatItShows() {
        Document overview = client.page("/");
        assertThat(overview.select("#queues td").eachText()).contains("mail", "reports");
        assertThat(overview.select("svg.chart rect.bar")).hasSize(2 * 60);
        assertThat(overview.select("#held-leases").text()).contains("orders-sweep", "node-b");

        Document jobs = client.page("/jobs");
        assertThat(jobs.select("#jobs tbody tr")).hasSize(13);
        assertThat(jobs.select("#jobs tbody tr").first().attr("data-id")).isEqualTo("" + fixture.xssJob);

        Document failedMail = client.page("/jobs?state=failed&queue=mail");
        assertThat(failedMail.select("#jobs tbody tr").eachAttr("data-id"))
                .allMatch(id -> fixture.state(Long.parseLong(id)).equals("failed"));
        assertThat(failedMail.select("input[name=state][checked]").eachAttr("value"))
                .containsExactly("failed");

        Document job = client.page("/jobs/" + fixture.failed.get(0));
        assertThat(job.select(".error-entry").text()).contains("read timed out after 30 s", "node-1");
        assertThat(job.select(".error-entry pre").text()).contains("at app.Handler.handle(Handler.java:42)");

        assertThat(client.page("/schedules").select("#schedules").text())
                .contains("nightly-report", "0 3 * * *", "report.build");
        assertThat(client.page("/leases").select("#leases").text()).contains("orders-sweep");

        Document lease = client.page("/lease?name=orders-sweep");
        assertThat(lease.select("#terms tbody tr")).hasSize(2);
        assertThat(lease.select("#terms").text()).contains("node-a", "node-b", "released");
        assertThat(lease.select("svg.timeline rect.term")).hasSize(2);

        Document expire = client.page("/lease/expire?name=orders-sweep&generation=2");
        assertThat(expire.select("#consequences").text()).isEqualTo(dev.baton.Controls.EXPIRE_LEASE_CONSEQUENCES);
        assertThat(expire.select("#confirm-expire").text()).isEqualTo("Expire generation 2");

        Document nodes = client.page("/nodes");
        assertThat(nodes.select("#nodes tbody tr")).hasSize(1);
        assertThat(nodes.select("#nodes").text()).contains("shop@1.0", "drain node by ops-alice");
        // Stopped, but the owner of a lease it acquired directly (under its own id) until that expires.
        assertThat(nodes.select("#nodes .role").text()).isEqualTo("CURRENT_OWNER");
        assertThat(nodes.select("#versions").text()).contains("shop@1.0");

        Document controls = client.page("/controls");
        assertThat(controls.select("#standing").text()).contains("disable kind", "report.build", "drain node");
        assertThat(controls.select("#audit tbody tr")).hasSize(2);
    }

    @Test
    void attackerControlledTextIsShownAsText() {
        for (String path : pages()) {
            HttpResponse<String> r = client.get(path);
            assertThat(r.statusCode()).as(path).isEqualTo(200);
            Document doc = Jsoup.parse(r.body());
            assertThat(doc.select("script")).as("script elements on " + path).isEmpty();
            assertThat(doc.getAllElements().stream()
                            .flatMap(e -> e.attributes().asList().stream())
                            .filter(a -> a.getKey()
                                    .toLowerCase(java.util.Locale.ROOT)
                                    .startsWith("on")))
                    .as("event handler attributes on " + path)
                    .isEmpty();
        }
        // Shown literally where it was stored: payload, kind, metadata, error class and message, node id,
        // lease name and owner, a control's reason and target.
        Document job = client.page("/jobs/" + fixture.xssJob);
        assertThat(job.select("#payload").text()).contains(XSS);
        assertThat(job.select("#kind").text()).isEqualTo(XSS);
        assertThat(job.select("#metadata td").text()).isEqualTo(XSS);
        assertThat(job.select(".error-entry .msg").text()).isEqualTo(XSS);
        assertThat(job.select(".error-entry code").text()).isEqualTo("app." + XSS);
        assertThat(client.page("/jobs").select("#jobs").text()).contains(XSS);
        assertThat(client.page("/nodes").select("#nodes td").eachText()).contains(XSS);
        assertThat(client.page("/").select("#held-leases td").eachText()).contains(XSS);
        assertThat(client.page("/controls").select("#audit td.msg").eachText()).contains(XSS);
        // Escaped in the markup itself, not only in the parsed DOM.
        assertThat(client.get("/jobs/" + fixture.xssJob).body())
                .contains("&lt;script&gt;alert(1)&lt;/script&gt;")
                .doesNotContain(XSS);
    }

    @Test
    void noPageShowsTheDatabasePassword() {
        for (String path : pages()) {
            assertThat(client.get(path).body())
                    .as(path)
                    .doesNotContain(Fixture.PASSWORD)
                    .doesNotContain("jdbc:");
        }
    }

    @Test
    void everyResponseCarriesTheSecurityHeaders() {
        for (String path : List.of("/", "/jobs", "/nodes", "/no-such-page", "/static/console.css")) {
            HttpResponse<String> r = client.get(path);
            assertThat(r.headers().firstValue("Content-Security-Policy"))
                    .as(path)
                    .hasValueSatisfying(
                            v -> assertThat(v).startsWith("default-src 'self'").contains("script-src 'none'"));
            assertThat(r.headers().firstValue("X-Frame-Options")).as(path).contains("DENY");
            assertThat(r.headers().firstValue("X-Content-Type-Options"))
                    .as(path)
                    .contains("nosniff");
            assertThat(r.headers().firstValue("Referrer-Policy")).as(path).contains("no-referrer");
        }
        assertThat(client.get("/no-such-page").statusCode()).isEqualTo(404);
        HttpResponse<String> put =
                client.send(java.net.http.HttpRequest.newBuilder(java.net.URI.create(jetty.url("/jobs")))
                        .PUT(java.net.http.HttpRequest.BodyPublishers.noBody())
                        .build());
        assertThat(put.statusCode()).isEqualTo(405);
        assertThat(put.headers().firstValue("X-Frame-Options")).contains("DENY");
    }

    @Test
    void theCreatedRangeAndTheKeysFilter() {
        assertThat(client.page("/jobs?from=2000-01-01T00:00&to=2000-01-02T00:00")
                        .select("#jobs tbody tr"))
                .isEmpty();
        assertThat(client.page("/jobs?from=2000-01-01T00:00:00Z&error=timed+out")
                        .select("#jobs tbody tr"))
                .hasSize(6);
        assertThat(client.page("/jobs?ikey=no-such-key").select("#jobs tbody tr"))
                .isEmpty();
        HttpResponse<String> bad = client.get("/jobs?from=yesterday");
        assertThat(bad.statusCode()).isEqualTo(400);
        assertThat(Jsoup.parse(bad.body()).select("#problem").text())
                .isEqualTo("from must be a time like 2026-01-02T03:04 (UTC) or 2026-01-02T03:04:05Z, but was "
                        + "'yesterday'");
        HttpResponse<String> reversed = client.get("/jobs?from=2001-01-01T00:00&to=2000-01-01T00:00");
        assertThat(reversed.statusCode()).isEqualTo(400);
        assertThat(Jsoup.parse(reversed.body()).select("#problem").text()).contains("must be before createdTo");
    }

    @Test
    void theNextPageLinkPagesByCursor() {
        List<String> seen = new java.util.ArrayList<>();
        String next = "/jobs?size=5";
        int pages = 0;
        while (next != null) {
            Document page = client.page(next);
            seen.addAll(page.select("#jobs tbody tr").eachAttr("data-id"));
            pages++;
            var link = page.select("#next-page");
            next = link.isEmpty() ? null : link.attr("href");
        }
        assertThat(pages).isEqualTo(3);
        assertThat(seen).hasSize(13).doesNotHaveDuplicates();
        assertThat(seen.get(0)).isEqualTo("" + fixture.xssJob);

        Document first = client.page("/jobs?state=failed");
        assertThat(first.select("#jobs tbody tr")).hasSize(7);
        assertThat(first.select("#next-page")).isEmpty();
        HttpResponse<String> bad = client.get("/jobs?cursor=nonsense");
        assertThat(bad.statusCode()).isEqualTo(400);
        assertThat(Jsoup.parse(bad.body()).select("#problem").text()).contains("cursor must be null");
    }
}
