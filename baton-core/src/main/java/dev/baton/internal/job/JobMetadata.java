package dev.baton.internal.job;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.baton.RetryPolicy;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A job's metadata as stored: a flat JSON object of strings, or null (SQL NULL) when empty. A per-job
 * retry policy travels in it under {@link #RETRY_POLICY}, so the claim returns it with no column of its own
 * (decision 0020); {@link #parse} leaves that entry out of what handlers and {@code JobInfo} see.
 */
public final class JobMetadata {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final TypeReference<LinkedHashMap<String, String>> MAP = new TypeReference<>() {};

    private JobMetadata() {}

    /** The entry that carries a job's own retry policy (see {@link #policyText}). */
    public static final String RETRY_POLICY = "baton.retryPolicy";

    /** The column value for {@code metadata} with the job's own retry policy (null: none); null when empty. */
    public static String json(Map<String, String> metadata, RetryPolicy retryPolicy) {
        if (retryPolicy == null) {
            return json(metadata);
        }
        Map<String, String> with = new LinkedHashMap<>(metadata);
        with.put(RETRY_POLICY, policyText(retryPolicy));
        return json(with);
    }

    /** A policy as stored: {@code base_ms=1000;factor=2.0;max_ms=3600000;jitter=0.2}. */
    static String policyText(RetryPolicy p) {
        return "base_ms=" + p.base().toMillis() + ";factor=" + p.factor() + ";max_ms="
                + p.max().toMillis() + ";jitter=" + p.jitter();
    }

    /**
     * The job's own retry policy in a stored column, or null: none, or one this version cannot read (then
     * the handler's policy applies, as on a node that predates the option).
     */
    public static RetryPolicy retryPolicy(String json) {
        if (json == null || !json.contains(RETRY_POLICY)) {
            return null; // most jobs: no parse at all
        }
        Map<String, String> all;
        try {
            all = JSON.readValue(json, MAP);
        } catch (JsonProcessingException e) {
            return null;
        }
        String text = all.get(RETRY_POLICY);
        if (text == null) {
            return null;
        }
        try {
            Map<String, String> f = new LinkedHashMap<>();
            for (String part : text.split(";")) {
                int eq = part.indexOf('=');
                f.put(part.substring(0, eq), part.substring(eq + 1));
            }
            return new RetryPolicy(
                    Duration.ofMillis(Long.parseLong(f.get("base_ms"))),
                    Double.parseDouble(f.get("factor")),
                    Duration.ofMillis(Long.parseLong(f.get("max_ms"))),
                    Double.parseDouble(f.get("jitter")));
        } catch (RuntimeException e) {
            return null;
        }
    }

    /** The column value for {@code metadata}: null when empty. */
    public static String json(Map<String, String> metadata) {
        if (metadata.isEmpty()) {
            return null;
        }
        try {
            return JSON.writeValueAsString(metadata);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("metadata of strings could not be written as JSON", e);
        }
    }

    /**
     * The metadata a stored column holds (unmodifiable; empty for null). Values that are not strings (a
     * row written by hand) are read as their JSON text.
     */
    public static Map<String, String> parse(String json) {
        if (json == null) {
            return Map.of();
        }
        try {
            LinkedHashMap<String, String> all = JSON.readValue(json, MAP);
            all.remove(RETRY_POLICY);
            return Collections.unmodifiableMap(all);
        } catch (JsonProcessingException e) {
            return Map.of("baton.unreadable", json);
        }
    }
}
