package dev.baton.internal.job;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/** A job's metadata as stored: a flat JSON object of strings, or null (SQL NULL) when empty. */
public final class JobMetadata {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final TypeReference<LinkedHashMap<String, String>> MAP = new TypeReference<>() {};

    private JobMetadata() {}

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
            return Collections.unmodifiableMap(JSON.readValue(json, MAP));
        } catch (JsonProcessingException e) {
            return Map.of("baton.unreadable", json);
        }
    }
}
