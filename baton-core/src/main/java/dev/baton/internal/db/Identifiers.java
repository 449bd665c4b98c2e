package dev.baton.internal.db;

import java.util.regex.Pattern;

/** Validation of the names Baton accepts from users. */
public final class Identifiers {
    private static final Pattern SCHEMA = Pattern.compile("[a-z_][a-z0-9_]{0,62}");
    public static final int MAX_NAME_LENGTH = 200;
    /** PostgreSQL's limit on identifiers, channel names included (NAMEDATALEN - 1). */
    public static final int MAX_IDENTIFIER_BYTES = 63;

    private Identifiers() {}

    /**
     * Validates a schema name and returns it double-quoted for use in SQL. Only lower-case letters,
     * digits and underscores are allowed, so the quoted form is exactly the name PostgreSQL stores.
     */
    public static String schema(String schema) {
        if (schema == null || !SCHEMA.matcher(schema).matches()) {
            throw new IllegalArgumentException("schema must match [a-z_][a-z0-9_]{0,62} (lower-case letters, digits, "
                    + "underscore; at most 63 characters), but was " + (schema == null ? "null" : "'" + schema + "'"));
        }
        return '"' + schema + '"';
    }

    /**
     * The NOTIFY channel of {@code kind} for a (validated) schema, within PostgreSQL's identifier limit of
     * 63 bytes: {@code <schema>.<kind>} when it fits (for every kind Baton uses, any schema of up to 54
     * characters); otherwise a prefix of the schema, a 32-bit hash of the whole name and the kind. Two long
     * schemas with one prefix share a channel only if their hashes collide too, and then merely wake each
     * other's nodes. Every node derives the same name.
     */
    public static String channel(String schema, String kind) {
        String plain = schema + "." + kind;
        if (plain.length() <= MAX_IDENTIFIER_BYTES) {
            return plain;
        }
        String hash = String.format("%08x", schema.hashCode());
        int keep = MAX_IDENTIFIER_BYTES - kind.length() - hash.length() - 2;
        return schema.substring(0, keep) + "~" + hash + "." + kind;
    }

    /** Validates a lease name, owner id or node id: 1 to 200 characters, no control characters. */
    public static String name(String what, String value) {
        if (value == null || value.isEmpty() || value.length() > MAX_NAME_LENGTH) {
            throw new IllegalArgumentException(what + " must be 1 to " + MAX_NAME_LENGTH + " characters, but was "
                    + (value == null ? "null" : value.isEmpty() ? "empty" : value.length() + " characters"));
        }
        for (int i = 0; i < value.length(); i++) {
            if (Character.isISOControl(value.charAt(i))) {
                throw new IllegalArgumentException(what + " must not contain control characters, but '"
                        + value.replaceAll("\\p{Cntrl}", "?") + "' has one at index " + i);
            }
        }
        return value;
    }
}
