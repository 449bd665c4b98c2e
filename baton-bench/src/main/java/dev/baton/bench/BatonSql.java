package dev.baton.bench;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Baton's own named statements, read from baton-core's resources ({@code dev/baton/sql/*.sql}) and
 * parsed exactly as {@code dev.baton.Sql} does (a {@code -- name: x} line starts a statement; other
 * comment lines are dropped; {@code ${schema}} becomes the double-quoted schema). The raw-SQL ceiling
 * therefore runs byte-for-byte the statements Baton runs, and the statement counter can name them.
 */
final class BatonSql {
    static final List<String> FILES = List.of("job", "lease", "node", "coord");
    private static final String NAME_MARKER = "-- name:";

    private BatonSql() {}

    /** name → SQL of one file, for {@code schema} (unquoted; it is quoted here). */
    static Map<String, String> load(String file, String schema) {
        String text = resource("dev/baton/sql/" + file + ".sql").replace("${schema}", '"' + schema + '"');
        Map<String, String> out = new LinkedHashMap<>();
        String name = null;
        StringBuilder body = new StringBuilder();
        for (String line : text.split("\n", -1)) {
            String trimmed = line.strip();
            if (trimmed.startsWith(NAME_MARKER)) {
                if (name != null) {
                    out.put(name, body.toString().strip());
                }
                name = trimmed.substring(NAME_MARKER.length()).strip();
                body.setLength(0);
            } else if (name != null && !trimmed.startsWith("--")) {
                body.append(line).append('\n');
            }
        }
        if (name != null) {
            out.put(name, body.toString().strip());
        }
        return out;
    }

    /** The statement files baton-core ships: every dev/baton/sql/*.sql of its jar (or class directory). */
    static List<String> files() {
        java.util.Set<String> out = new java.util.TreeSet<>(FILES);
        try {
            java.net.URL url = BatonSql.class.getClassLoader().getResource("dev/baton/sql/job.sql");
            if (url != null && url.getProtocol().equals("jar")) {
                java.net.JarURLConnection jar = (java.net.JarURLConnection) url.openConnection();
                jar.setUseCaches(false);
                try (java.util.jar.JarFile jf = jar.getJarFile()) {
                    jf.stream()
                            .map(java.util.zip.ZipEntry::getName)
                            .filter(n -> n.startsWith("dev/baton/sql/") && n.endsWith(".sql"))
                            .forEach(n -> out.add(n.substring("dev/baton/sql/".length(), n.length() - 4)));
                }
            } else if (url != null && url.getProtocol().equals("file")) {
                java.io.File[] fs =
                        new java.io.File(url.toURI()).getParentFile().listFiles((d, n) -> n.endsWith(".sql"));
                if (fs != null) {
                    for (java.io.File f : fs) {
                        out.add(f.getName().substring(0, f.getName().length() - 4));
                    }
                }
            }
        } catch (IOException | java.net.URISyntaxException | RuntimeException e) {
            // the fixed list then
        }
        return List.copyOf(out);
    }

    /** SQL → "file.name" for every statement of every file, for {@code schema}. */
    static Map<String, String> labels(String schema) {
        Map<String, String> out = new LinkedHashMap<>();
        for (String f : files()) {
            try {
                load(f, schema).forEach((name, sql) -> out.put(sql, f + "." + name));
            } catch (IllegalStateException e) {
                // a file this version of baton-core does not have
            }
        }
        return out;
    }

    private static String resource(String path) {
        try (InputStream in = BatonSql.class.getClassLoader().getResourceAsStream(path)) {
            if (in == null) {
                throw new IllegalStateException("missing resource " + path + " (is baton-core on the class path?)");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
