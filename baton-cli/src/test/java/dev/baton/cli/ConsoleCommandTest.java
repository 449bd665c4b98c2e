package dev.baton.cli;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.Baton;
import dev.baton.testkit.BatonPostgres;
import java.net.CookieManager;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import org.jsoup.Jsoup;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

class ConsoleCommandTest {
    @RegisterExtension
    static final BatonPostgres PG = new BatonPostgres();

    private String schema;

    @BeforeEach
    void freshSchema() {
        schema = PG.freshSchemaName();
    }

    @AfterEach
    void dropSchema() {
        PG.dropSchema(schema);
    }

    @Test
    void servesTheConsoleBehindTheTokenItPrintsReadOnlyByDefault() throws Exception {
        Baton.migrate(PG.dataSource(), schema);
        try (ConsoleCommand.Running console = ConsoleCommand.start(PG.jdbcUrl(), schema, "127.0.0.1", 0, false)) {
            assertThat(console.signInUrl()).startsWith("http://127.0.0.1:").contains("/?token=" + console.token);
            assertThat(console.token).hasSizeGreaterThanOrEqualTo(32);
            HttpClient http = HttpClient.newBuilder()
                    .cookieHandler(new CookieManager())
                    .followRedirects(HttpClient.Redirect.NORMAL)
                    .build();
            HttpResponse<String> without = http.send(
                    HttpRequest.newBuilder(URI.create(console.url("/nodes"))).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(without.statusCode()).isEqualTo(401);
            HttpResponse<String> in = http.send(
                    HttpRequest.newBuilder(URI.create(console.signInUrl())).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(in.statusCode()).isEqualTo(200);
            assertThat(Jsoup.parse(in.body()).select("h1").text()).startsWith("Overview");
            assertThat(Jsoup.parse(in.body()).select(".mode").text()).isEqualTo("read-only");
            HttpResponse<String> post = http.send(
                    HttpRequest.newBuilder(URI.create(console.url("/actions/node/drain")))
                            .header("Content-Type", "application/x-www-form-urlencoded")
                            .POST(HttpRequest.BodyPublishers.ofString("node=x&csrf=y"))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(post.statusCode()).isEqualTo(403);
        }
    }

    @Test
    void refusesASchemaWithoutBatonsTables() {
        CliRun r = CliRun.of("console", "--jdbc-url", PG.jdbcUrl(), "--schema", schema, "--port", "0");
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(Main.EXIT_USAGE);
        assertThat(r.err()).contains("schema '" + schema + "' has no Baton tables");
    }

    @Test
    void refusesABadPort() {
        CliRun r = CliRun.of("console", "--jdbc-url", PG.jdbcUrl(), "--port", "70000");
        assertThat(r.exitCode()).as(r.toString()).isEqualTo(Main.EXIT_USAGE);
        assertThat(r.err()).contains("--port must be 0 to 65535, but was 70000");
    }
}
