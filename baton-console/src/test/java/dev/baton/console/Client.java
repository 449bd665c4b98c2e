package dev.baton.console;

import java.io.IOException;
import java.net.CookieManager;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import org.jsoup.Jsoup;
import org.jsoup.nodes.Document;

/** A cookie-keeping HTTP client for the console (one browser session), without following redirects. */
final class Client {
    private final ConsoleJetty server;
    final CookieManager cookies = new CookieManager();
    private final HttpClient http;

    Client(ConsoleJetty server) {
        this.server = server;
        this.http = HttpClient.newBuilder()
                .cookieHandler(cookies)
                .followRedirects(HttpClient.Redirect.NEVER)
                .build();
    }

    HttpResponse<String> get(String path) {
        return send(HttpRequest.newBuilder(URI.create(server.url(path))).GET().build());
    }

    /** Signs in with {@code token} through the link {@code baton console} prints. */
    HttpResponse<String> signIn(String token) {
        return get("/?token=" + URLEncoder.encode(token, StandardCharsets.UTF_8));
    }

    /** POSTs a form; a value that is a list becomes a repeated field. */
    HttpResponse<String> post(String path, Map<String, ?> form) {
        String body = form.entrySet().stream()
                .flatMap(e -> (e.getValue() instanceof List<?> l ? l : List.of(e.getValue()))
                        .stream().map(v -> enc(e.getKey()) + "=" + enc(String.valueOf(v))))
                .collect(Collectors.joining("&"));
        return send(HttpRequest.newBuilder(URI.create(server.url(path)))
                .header("Content-Type", "application/x-www-form-urlencoded")
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .build());
    }

    Document page(String path) {
        HttpResponse<String> r = get(path);
        if (r.statusCode() != 200) {
            throw new AssertionError("GET " + path + " answered " + r.statusCode() + ":\n" + r.body());
        }
        return Jsoup.parse(r.body(), server.url(path));
    }

    /** The CSRF token the console put in the forms of {@code path}. */
    String csrf(String path) {
        return page(path).select("input[name=csrf]").first().attr("value");
    }

    HttpResponse<String> send(HttpRequest r) {
        try {
            return http.send(r, HttpResponse.BodyHandlers.ofString());
        } catch (IOException e) {
            throw new IllegalStateException("request to " + r.uri() + " failed", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    private static String enc(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }
}
