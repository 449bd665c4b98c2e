package dev.baton.bench;

import dev.baton.internal.db.Identifiers;
import dev.baton.internal.db.Sql;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Baton's own named statements, read from baton-core's resources ({@code dev/baton/sql/*.sql}) by
 * baton-core's own loader ({@code dev.baton.internal.db.Sql}: named parameters become {@code ?} in the
 * order they appear). The raw-SQL ceiling therefore runs byte-for-byte the statements Baton runs, binding
 * positions in that order, and the statement counter can name them.
 */
final class BatonSql {
    static final List<String> FILES = List.of("job", "lease", "node", "coord");

    private BatonSql() {}

    /** name → SQL of one file as the driver receives it, for {@code schema} (unquoted; it is quoted here). */
    static Map<String, String> load(String file, String schema) {
        Sql sql = Sql.load(file + ".sql", Identifiers.schema(schema));
        Map<String, String> out = new LinkedHashMap<>();
        for (String name : new java.util.TreeSet<>(sql.names())) {
            out.put(name, sql.get(name));
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
}
