package dev.baton.testkit;

import java.util.Objects;
import java.util.Properties;
import java.util.regex.Pattern;
import org.postgresql.Driver;

/** PostgreSQL JDBC URL helpers, for tests and tools that put a proxy between a client and the server. */
public final class JdbcUrls {

    static final String PREFIX = "jdbc:postgresql:";

    private static final Pattern PASSWORD = Pattern.compile("(?i)(password=)[^&]*");

    private JdbcUrls() {}

    /** The first host and port a PgJDBC URL connects to; IPv6 literals come without brackets. */
    public record HostPort(String host, int port) {}

    /**
     * Parses host and port with PgJDBC's own parser, so that defaults (localhost, 5432) match what
     * the driver will actually do. For a multi-host URL the first host is returned.
     */
    public static HostPort hostPort(String url) {
        Objects.requireNonNull(url, "url");
        Properties props = Driver.parseURL(url, new Properties());
        if (props == null) {
            throw new IllegalArgumentException("not a valid PostgreSQL JDBC URL: '" + redact(url) + "'");
        }
        String host = firstOf(props.getProperty("PGHOST", "localhost"));
        String port = firstOf(props.getProperty("PGPORT", "5432"));
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        try {
            return new HostPort(host, Integer.parseInt(port));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("bad port '" + port + "' in JDBC URL '" + redact(url) + "'", e);
        }
    }

    /**
     * Rewrites the host list of {@code url} to the single {@code host:port}, keeping the database
     * and query string verbatim. A host-less URL ({@code jdbc:postgresql:db}) gains an authority.
     */
    public static String via(String url, String host, int port) {
        Objects.requireNonNull(url, "url");
        Objects.requireNonNull(host, "host");
        if (host.isBlank()) {
            throw new IllegalArgumentException("host must not be blank, was '" + host + "'");
        }
        if (port < 1 || port > 65535) {
            throw new IllegalArgumentException("port must be in 1..65535, was " + port);
        }
        // Validate with the driver first, so we never rewrite something it would reject anyway.
        hostPort(url);
        String authority = (host.indexOf(':') >= 0 && !host.startsWith("[") ? "[" + host + "]" : host) + ":" + port;
        String rest = url.substring(PREFIX.length());
        String tail; // "/database?query" (or "/?query", or "")
        if (rest.startsWith("//")) {
            int slash = rest.indexOf('/', 2);
            // hostPort() above guarantees the slash after the authority exists.
            tail = rest.substring(slash);
        } else {
            tail = rest.startsWith("/") ? rest : "/" + rest;
        }
        return PREFIX + "//" + authority + tail;
    }

    /** Whether the URL's query string names a user; PgJDBC would otherwise fall back to others. */
    static boolean hasUser(String url) {
        Properties props = Driver.parseURL(url, new Properties());
        return props != null && props.getProperty("user") != null;
    }

    /** Hides any password so that a URL can go into logs and exception messages. */
    static String redact(String url) {
        return url == null ? null : PASSWORD.matcher(url).replaceAll("$1***");
    }

    private static String firstOf(String commaSeparated) {
        int comma = commaSeparated.indexOf(',');
        return comma < 0 ? commaSeparated : commaSeparated.substring(0, comma);
    }
}
