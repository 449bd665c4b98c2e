package dev.baton.examples.audit.config;

import java.util.HashMap;
import java.util.Map;

/** Decoy: an enum with a lookup map built once in its static initializer. */
public enum Region {
    EU("eu"),
    US("us");

    private static final Map<String, Region> BY_CODE = new HashMap<>();

    static {
        for (Region r : values()) {
            BY_CODE.put(r.code, r);
        }
    }

    private final String code;

    Region(String code) {
        this.code = code;
    }

    public static Region of(String code) {
        return BY_CODE.get(code);
    }
}
