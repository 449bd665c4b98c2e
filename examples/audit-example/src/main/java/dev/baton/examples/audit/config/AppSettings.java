package dev.baton.examples.audit.config;

import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.context.annotation.Configuration;

/** Decoy: configuration maps built once and never changed, and constants. */
@Configuration
public class AppSettings {
    public static final List<String> SUPPORTED_LOCALES = List.of("en", "de", "fr");
    public static final int MAX_PAGE_SIZE = 200;
    private static final Map<String, Duration> TIMEOUTS =
            Map.of("report", Duration.ofSeconds(30), "login", Duration.ofSeconds(5));

    private final Map<String, String> regionEndpoints;

    public AppSettings() {
        Map<String, String> m = new LinkedHashMap<>();
        m.put("eu", "https://eu.example.test");
        m.put("us", "https://us.example.test");
        this.regionEndpoints = Collections.unmodifiableMap(m);
    }

    public Duration timeout(String operation) {
        return TIMEOUTS.getOrDefault(operation, Duration.ofSeconds(10));
    }

    public String endpoint(String region) {
        return regionEndpoints.get(region);
    }
}
