package dev.baton.console;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.ControlAction;
import dev.baton.ControlRecord;
import dev.baton.LeaseInfo;
import dev.baton.testkit.BatonPostgres;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import org.jsoup.Jsoup;
import org.jsoup.nodes.Document;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Who may look and who may act: the standalone console's token, read-only mode, the CSRF token, and the
 * actions themselves through HTTP. To see {@link #actionsWithoutTheRightCsrfTokenAreRefused} fail, make
 * {@code csrfMatches} return true: the forged retry answers 303 and the job runs again.
 */
class ConsoleSecurityTest {
    @RegisterExtension
    static final BatonPostgres PG = new BatonPostgres();

    static final String TOKEN = "test-token-0123456789abcdef";
    Fixture fixture;
    ConsoleJetty jetty;

    @BeforeEach
    void populate() throws Exception {
        fixture = Fixture.populate(PG);
    }

    @AfterEach
    void stop() {
        if (jetty != null) {
            jetty.close();
        }
        fixture.close();
    }

    private Client console(ConsoleSettings settings) {
        jetty = ConsoleJetty.start(new BatonConsoleServlet(fixture.tool, settings));
        return new Client(jetty);
    }

    @Test
    void withoutTheTokenNoPageIsShown() {
        Client c = console(ConsoleSettings.withActions(ConsoleAccess.token(TOKEN)));
        for (String path : List.of("/", "/jobs", "/jobs/" + fixture.xssJob, "/nodes", "/controls", "/leases")) {
            HttpResponse<String> r = c.get(path);
            assertThat(r.statusCode()).as(path).isEqualTo(401);
            Document doc = Jsoup.parse(r.body());
            assertThat(doc.select("input[name=token]")).as(path).hasSize(1);
            assertThat(r.body()).doesNotContain("orders-sweep").doesNotContain("read timed out");
        }
        assertThat(c.signIn("wrong-token-0123456789abcdef").statusCode()).isEqualTo(401);
        assertThat(c.get("/").statusCode()).isEqualTo(401);
        // The login form signs in as the link does; the session cookie is HttpOnly and SameSite=Strict.
        HttpResponse<String> in = c.post("/login", Map.of("token", TOKEN));
        assertThat(in.statusCode()).isEqualTo(303);
        assertThat(in.headers().allValues("Set-Cookie"))
                .anySatisfy(
                        v -> assertThat(v).containsIgnoringCase("HttpOnly").containsIgnoringCase("SameSite=Strict"));
        assertThat(c.get("/").statusCode()).isEqualTo(200);
    }

    @Test
    void actionsWithoutSignInAreRefused() {
        Client c = console(ConsoleSettings.withActions(ConsoleAccess.token(TOKEN)));
        HttpResponse<String> r = c.post(
                "/actions/jobs", Map.of("op", "retry", "ids", fixture.failed.get(0), "csrf", "x", "back", "/jobs"));
        assertThat(r.statusCode()).isEqualTo(401);
        assertThat(fixture.state(fixture.failed.get(0))).isEqualTo("failed");
    }

    @Test
    void aReadOnlyConsoleRefusesEveryActionAndOffersNone() {
        Client c = console(ConsoleSettings.readOnly(ConsoleAccess.token(TOKEN)));
        c.signIn(TOKEN);
        for (String path :
                List.of("/", "/jobs", "/jobs/" + fixture.failed.get(0), "/nodes", "/controls", "/schedules")) {
            assertThat(c.page(path).select("form[method=post]")).as(path).isEmpty();
        }
        long job = fixture.failed.get(0);
        HttpResponse<String> r =
                c.post("/actions/jobs", Map.of("op", "retry", "ids", job, "csrf", "anything", "back", "/jobs"));
        assertThat(r.statusCode()).isEqualTo(403);
        assertThat(Jsoup.parse(r.body()).select("#problem").text()).contains("read-only");
        assertThat(c.post("/actions/node/drain", Map.of("node", Fixture.XSS, "csrf", ""))
                        .statusCode())
                .isEqualTo(403);
        assertThat(fixture.state(job)).isEqualTo("failed");
    }

    @Test
    void actionsWithoutTheRightCsrfTokenAreRefused() {
        Client c = console(ConsoleSettings.withActions(ConsoleAccess.token(TOKEN)));
        c.signIn(TOKEN);
        long job = fixture.failed.get(0);
        String csrf = c.csrf("/jobs");
        assertThat(csrf).hasSizeGreaterThan(30);
        HttpResponse<String> none = c.post("/actions/jobs", Map.of("op", "retry", "ids", job, "back", "/jobs"));
        assertThat(none.statusCode()).isEqualTo(403);
        assertThat(Jsoup.parse(none.body()).select("#problem").text()).contains("CSRF");
        HttpResponse<String> wrong =
                c.post("/actions/jobs", Map.of("op", "retry", "ids", job, "csrf", csrf + "x", "back", "/jobs"));
        assertThat(wrong.statusCode()).isEqualTo(403);
        // Another session's token is no good either.
        Client other = new Client(jetty);
        other.signIn(TOKEN);
        HttpResponse<String> foreign =
                other.post("/actions/jobs", Map.of("op", "retry", "ids", job, "csrf", csrf, "back", "/jobs"));
        assertThat(foreign.statusCode()).isEqualTo(403);
        assertThat(fixture.state(job)).isEqualTo("failed");

        HttpResponse<String> right =
                c.post("/actions/jobs", Map.of("op", "retry", "ids", job, "csrf", csrf, "back", "/jobs?state=failed"));
        assertThat(right.statusCode()).isEqualTo(303);
        assertThat(right.headers().firstValue("Location")).contains("/jobs?state=failed");
        assertThat(fixture.state(job)).isEqualTo("available");
        assertThat(c.page("/jobs?state=failed").select("#flash").text())
                .isEqualTo("retry 1 selected jobs: matched 1, changed 1, left alone 0");
    }

    @Test
    void bulkRetryOfEveryMatchingJobReportsTheResult() {
        Client c = console(ConsoleSettings.withActions(ConsoleAccess.token(TOKEN)));
        c.signIn(TOKEN);
        String csrf = c.csrf("/jobs?state=failed&queue=mail");
        HttpResponse<String> r = c.post(
                "/actions/jobs/matching",
                Map.of("op", "retry", "state", "failed", "queue", "mail", "csrf", csrf, "back", "/jobs"));
        assertThat(r.statusCode()).isEqualTo(303);
        long mailFailed = fixture.failed.stream()
                        .filter(id ->
                                fixture.admin.job(id).orElseThrow().queue().equals("mail"))
                        .count()
                + 1; // and the job with markup everywhere
        assertThat(c.page("/jobs").select("#flash").text())
                .startsWith("retry the jobs matching JobQuery{states=[FAILED], queue=mail")
                .endsWith("matched " + mailFailed + ", changed " + mailFailed + ", left alone 0");
        assertThat(c.page("/jobs?state=failed&queue=mail").select("#jobs tbody tr"))
                .isEmpty();
        assertThat(c.page("/jobs?state=failed").select("#jobs tbody tr")).hasSize((int) (7 - mailFailed));
    }

    @Test
    void controlsAreRecordedUnderTheOperatorsName() {
        Client c = console(ConsoleSettings.withActions(ConsoleAccess.token(TOKEN)));
        c.signIn(TOKEN);
        String csrf = c.csrf("/nodes");
        assertThat(c.post(
                                "/actions/node/resume",
                                Map.of("node", Fixture.XSS, "csrf", csrf, "operator", "alice", "back", "/nodes"))
                        .statusCode())
                .isEqualTo(303);
        assertThat(c.post(
                                "/actions/node/drain",
                                Map.of("node", "node-b", "reason", "disk full", "csrf", csrf, "back", "/nodes"))
                        .statusCode())
                .isEqualTo(303);
        LeaseInfo lease = fixture.admin.leases().inspect("orders-sweep").orElseThrow();
        assertThat(c.post(
                                "/actions/lease/expire",
                                Map.of(
                                        "name", "orders-sweep",
                                        "generation", lease.generation(),
                                        "reason", "stuck",
                                        "csrf", csrf,
                                        "operator", "bob"))
                        .statusCode())
                .isEqualTo(303);
        List<ControlRecord> audit = fixture.admin.controls().audit(null, 3).items();
        assertThat(audit)
                .extracting(ControlRecord::action, ControlRecord::createdBy)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple(ControlAction.EXPIRE_LEASE, "console:bob"),
                        org.assertj.core.groups.Tuple.tuple(ControlAction.DRAIN_NODE, "console"),
                        org.assertj.core.groups.Tuple.tuple(ControlAction.DRAIN_NODE, "ops-alice"));
        assertThat(audit.get(0).detail()).hasValueSatisfying(d -> assertThat(d).contains("ended generation"));
        assertThat(fixture.admin.leases().inspect("orders-sweep").orElseThrow().held())
                .isFalse();
        // The resume lifted the fixture's drain: recorded on it.
        assertThat(audit.get(2).liftedBy()).contains("console:alice");
    }

    @Test
    void afterAnActionTheConsoleRedirectsOnlyToItsOwnPages() {
        Client c = console(ConsoleSettings.withActions(ConsoleAccess.token(TOKEN)));
        c.signIn(TOKEN);
        String csrf = c.csrf("/jobs");
        for (String back : List.of("//evil.example/x", "https://evil.example/", "/\\evil.example", "jobs")) {
            HttpResponse<String> r = c.post(
                    "/actions/jobs", Map.of("op", "retry", "ids", fixture.failed.get(1), "csrf", csrf, "back", back));
            assertThat(r.headers().firstValue("Location")).as(back).contains("/");
        }
        assertThat(BatonConsoleServlet.back("//evil.example")).isEqualTo("/");
        assertThat(BatonConsoleServlet.back("/jobs?state=failed")).isEqualTo("/jobs?state=failed");
    }
}
