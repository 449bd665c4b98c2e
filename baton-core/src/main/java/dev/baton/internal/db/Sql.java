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
 *
 * <p>A part that two statements must share word for word (say, one definition of which job kinds are unhandled,
 * for the statement that reports them and the one that fails their jobs) is written once as a fragment
 * ({@code -- fragment: name}, not a statement itself) and put into a statement below it by a line
 * {@code -- include: name}.
 */
public final class Sql {
    private static final String NAME_MARKER = "-- name:";
    private static final String FRAGMENT_MARKER = "-- fragment:";
    private static final String INCLUDE_MARKER = "-- include:";

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
        Map<String, String> fragments = new HashMap<>();
        String name = null;
        boolean fragment = false;
        StringBuilder body = new StringBuilder();
        for (String line : text.split("\n", -1)) {
            String trimmed = line.strip();
            if (trimmed.startsWith(NAME_MARKER) || trimmed.startsWith(FRAGMENT_MARKER)) {
                put(file, statements, fragments, name, fragment, body);
                fragment = trimmed.startsWith(FRAGMENT_MARKER);
                name = trimmed.substring((fragment ? FRAGMENT_MARKER : NAME_MARKER).length())
                        .strip();
                body.setLength(0);
            } else if (name != null && trimmed.startsWith(INCLUDE_MARKER)) {
                String included = trimmed.substring(INCLUDE_MARKER.length()).strip();
                String part = fragments.get(included);
                if (part == null) {
                    throw new IllegalStateException("sql/" + file + "#" + name + " includes '" + included
                            + "', which no fragment above it defines");
                }
                body.append(part).append('\n');
            } else if (name != null && !trimmed.startsWith("--")) {
                body.append(line).append('\n');
            }
        }
        put(file, statements, fragments, name, fragment, body);
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

    private static void put(
            String file,
            Map<String, Parsed> statements,
            Map<String, String> fragments,
            String name,
            boolean fragment,
            StringBuilder body) {
        if (name == null) {
            return;
        }
        if (fragment) {
            fragments.put(name, body.toString().strip());
        } else {
            statements.put(
                    name, parse("sql/" + file + "#" + name, body.toString().strip()));
        }
    }
}
