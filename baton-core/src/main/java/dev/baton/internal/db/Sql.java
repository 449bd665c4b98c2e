package dev.baton.internal.db;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Named SQL statements read from one resource file per table or capability ({@code sql/lease.sql}),
 * with the Baton schema substituted. Services never build SQL from strings; the only substitution
 * is the schema identifier, which {@link Identifiers#schema(String)} has validated and quoted.
 *
 * <p>A statement names its parameters ({@code :owner_id}; {@code ::type} stays a cast) and is bound by
 * name through a {@link SqlCall}: a name used twice is bound once, and running a call with a parameter
 * left unbound fails before anything reaches the database. A statement may instead use positional
 * {@code ?} parameters (never both), read with {@link #get(String)}.
 */
public final class Sql {
    private static final String NAME_MARKER = "-- name:";

    /**
     * One statement: the text sent to the driver, the parameter name at each {@code ?} position, and the
     * positions of each name (0-based), computed once here rather than at every call.
     */
    record Parsed(String jdbc, List<String> params, Map<String, int[]> positions) {
        Parsed(String jdbc, List<String> params) {
            this(jdbc, params, positionsOf(params));
        }

        private static Map<String, int[]> positionsOf(List<String> params) {
            Map<String, List<Integer>> at = new LinkedHashMap<>();
            for (int i = 0; i < params.size(); i++) {
                at.computeIfAbsent(params.get(i), k -> new ArrayList<>()).add(i);
            }
            Map<String, int[]> out = new LinkedHashMap<>();
            at.forEach((name, list) ->
                    out.put(name, list.stream().mapToInt(Integer::intValue).toArray()));
            return Collections.unmodifiableMap(out);
        }
    }

    private final Map<String, Parsed> statements;
    private final String file;

    private Sql(String file, Map<String, Parsed> statements) {
        this.file = file;
        this.statements = statements;
    }

    /** Loads {@code dev/baton/sql/<file>} for the given (already quoted) schema identifier. */
    public static Sql load(String file, String quotedSchema) {
        String text = resource("sql/" + file).replace("${schema}", quotedSchema);
        Map<String, Parsed> statements = new HashMap<>();
        String name = null;
        StringBuilder body = new StringBuilder();
        for (String line : text.split("\n", -1)) {
            String trimmed = line.strip();
            if (trimmed.startsWith(NAME_MARKER)) {
                put(file, statements, name, body);
                name = trimmed.substring(NAME_MARKER.length()).strip();
                body.setLength(0);
            } else if (name != null && !trimmed.startsWith("--")) {
                body.append(line).append('\n');
            }
        }
        put(file, statements, name, body);
        return new Sql(file, Map.copyOf(statements));
    }

    /** The names of the file's statements. */
    public Set<String> names() {
        return statements.keySet();
    }

    /** The statement's text as sent to the driver (for statements with positional parameters). */
    public String get(String name) {
        return parsed(name).jdbc();
    }

    /** Prepares the statement on {@code c}, to be bound by parameter name. */
    public SqlCall prepare(Connection c, String name) throws SQLException {
        Parsed p = parsed(name);
        return new SqlCall(file + "#" + name, c.prepareStatement(p.jdbc()), p.positions(), 0, 0);
    }

    /**
     * Prepares the statement so that the server abandons it after {@code millis} (when positive), as
     * {@link Jdbc#prepareBounded} does: only in Baton's own transactions, never on a caller's connection.
     */
    public SqlCall prepareBounded(Connection c, String name, long millis) throws SQLException {
        Parsed p = parsed(name);
        return new SqlCall(
                file + "#" + name,
                Jdbc.prepareBounded(c, p.jdbc(), millis),
                p.positions(),
                Jdbc.boundOffset(millis),
                millis);
    }

    private Parsed parsed(String name) {
        Parsed p = statements.get(name);
        if (p == null) {
            throw new IllegalStateException("no statement named '" + name + "' in sql/" + file);
        }
        return p;
    }

    /**
     * Replaces each {@code :name} outside quotes, quoted identifiers and comments by {@code ?} and records
     * the names in order; {@code ::} (a cast) is kept.
     */
    static Parsed parse(String where, String sql) {
        StringBuilder out = new StringBuilder(sql.length());
        List<String> params = new ArrayList<>();
        boolean positional = false;
        int i = 0;
        int n = sql.length();
        while (i < n) {
            char ch = sql.charAt(i);
            if (ch == '\'' || ch == '"') {
                int end = sql.indexOf(ch, i + 1);
                end = end < 0 ? n : end + 1;
                out.append(sql, i, end);
                i = end;
            } else if (ch == '-' && i + 1 < n && sql.charAt(i + 1) == '-') {
                int end = sql.indexOf('\n', i);
                end = end < 0 ? n : end;
                out.append(sql, i, end);
                i = end;
            } else if (ch == ':' && i + 1 < n && sql.charAt(i + 1) == ':') {
                out.append("::");
                i += 2;
            } else if (ch == ':' && i + 1 < n && isNameStart(sql.charAt(i + 1))) {
                int end = i + 1;
                while (end < n && isNamePart(sql.charAt(end))) {
                    end++;
                }
                params.add(sql.substring(i + 1, end));
                out.append('?');
                i = end;
            } else {
                positional |= ch == '?';
                out.append(ch);
                i++;
            }
        }
        if (positional && !params.isEmpty()) {
            throw new IllegalStateException(where + " mixes positional ? and named :parameters");
        }
        return new Parsed(out.toString(), List.copyOf(params));
    }

    private static boolean isNameStart(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    }

    private static boolean isNamePart(char c) {
        return isNameStart(c) || (c >= '0' && c <= '9');
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

    private static void put(String file, Map<String, Parsed> statements, String name, StringBuilder body) {
        if (name != null) {
            statements.put(
                    name, parse("sql/" + file + "#" + name, body.toString().strip()));
        }
    }
}
