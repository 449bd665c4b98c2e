package dev.baton.internal.db;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

/**
 * Named SQL statements read from one resource file per table or capability ({@code sql/lease.sql}),
 * with the Baton schema substituted. Services never build SQL from strings; the only substitution
 * is the schema identifier, which {@link Identifiers#schema(String)} has validated and quoted.
 */
public final class Sql {
    private static final String NAME_MARKER = "-- name:";

    private final Map<String, String> statements;
    private final String file;

    private Sql(String file, Map<String, String> statements) {
        this.file = file;
        this.statements = statements;
    }

    /** Loads {@code dev/baton/sql/<file>} for the given (already quoted) schema identifier. */
    public static Sql load(String file, String quotedSchema) {
        String text = resource("sql/" + file).replace("${schema}", quotedSchema);
        Map<String, String> statements = new HashMap<>();
        String name = null;
        StringBuilder body = new StringBuilder();
        for (String line : text.split("\n", -1)) {
            String trimmed = line.strip();
            if (trimmed.startsWith(NAME_MARKER)) {
                put(statements, name, body);
                name = trimmed.substring(NAME_MARKER.length()).strip();
                body.setLength(0);
            } else if (name != null && !trimmed.startsWith("--")) {
                body.append(line).append('\n');
            }
        }
        put(statements, name, body);
        return new Sql(file, Map.copyOf(statements));
    }

    public String get(String name) {
        String sql = statements.get(name);
        if (sql == null) {
            throw new IllegalStateException("no statement named '" + name + "' in sql/" + file);
        }
        return sql;
    }

    public static String resource(String path) {
        try (InputStream in = Sql.class.getResourceAsStream("/dev/baton/" + path)) {
            if (in == null) {
                throw new IllegalStateException("missing resource dev/baton/" + path + " (broken jar?)");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalStateException("cannot read resource dev/baton/" + path, e);
        }
    }

    private static void put(Map<String, String> statements, String name, StringBuilder body) {
        if (name != null) {
            statements.put(name, body.toString().strip());
        }
    }
}
