package dev.baton.audit;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Enumeration;
import java.util.List;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipException;
import java.util.zip.ZipFile;
import java.util.zip.ZipInputStream;

/**
 * Reads class files and configuration resources from a class directory, a jar, or a Spring Boot fat
 * jar (or war): in a fat jar, {@code BOOT-INF/classes} (or {@code WEB-INF/classes}) is the
 * application and the nested jars under {@code BOOT-INF/lib} are libraries, read for the type
 * hierarchy only unless libraries are included. Each class file is read once.
 */
final class ClassSource {
    private ClassSource() {}

    interface Visitor {
        void classFile(byte[] bytes, boolean reported);

        void resource(String name, String text, boolean reported);
    }

    /** Counts of what was read, for the report. */
    static final class Counts {
        int jars;
        int nestedJars;
    }

    private static final long MAX_RESOURCE = 1 << 20;

    static void read(Path path, boolean reported, boolean includeLibraries, Visitor visitor, Counts counts) {
        if (!Files.exists(path)) {
            throw new AuditException("path " + path + " does not exist; pass a jar, a class directory or a Spring Boot "
                    + "fat jar (for a Maven project: target/classes after `mvn compile`)");
        }
        if (!Files.isReadable(path)) {
            throw new AuditException("path " + path + " is not readable; check its permissions");
        }
        if (Files.isDirectory(path)) {
            readDirectory(path, reported, visitor);
        } else if (path.getFileName().toString().endsWith(".class")) {
            visitor.classFile(bytes(path), reported);
        } else {
            readJar(path, reported, includeLibraries, visitor, counts);
        }
    }

    private static byte[] bytes(Path p) {
        try {
            return Files.readAllBytes(p);
        } catch (IOException e) {
            throw new AuditException("cannot read " + p + ": " + e.getMessage(), e);
        }
    }

    private static void readDirectory(Path dir, boolean reported, Visitor visitor) {
        try (Stream<Path> files = Files.walk(dir)) {
            files.filter(Files::isRegularFile).sorted().forEach(p -> {
                String rel = dir.relativize(p).toString().replace('\\', '/');
                if (rel.endsWith(".class")) {
                    if (!skipClass(rel)) {
                        visitor.classFile(bytes(p), reported);
                    }
                } else if (isConfig(rel)) {
                    try {
                        if (Files.size(p) <= MAX_RESOURCE) {
                            visitor.resource(rel, new String(bytes(p), StandardCharsets.UTF_8), reported);
                        }
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                }
            });
        } catch (IOException | UncheckedIOException e) {
            throw new AuditException("cannot list class directory " + dir + ": " + e.getMessage(), e);
        }
    }

    private static void readJar(Path jar, boolean reported, boolean includeLibraries, Visitor visitor, Counts counts) {
        try (ZipFile zip = new ZipFile(jar.toFile())) {
            counts.jars++;
            String appPrefix = null;
            String libPrefix = null;
            for (String[] layout : List.of(
                    new String[] {"BOOT-INF/classes/", "BOOT-INF/lib/"},
                    new String[] {"WEB-INF/classes/", "WEB-INF/lib/"})) {
                if (zip.getEntry(layout[0]) != null || hasPrefix(zip, layout[0])) {
                    appPrefix = layout[0];
                    libPrefix = layout[1];
                    break;
                }
            }
            Enumeration<? extends ZipEntry> entries = zip.entries();
            while (entries.hasMoreElements()) {
                ZipEntry e = entries.nextElement();
                if (e.isDirectory()) {
                    continue;
                }
                String name = e.getName();
                if (appPrefix == null) {
                    if (name.endsWith(".class") && !skipClass(name)) {
                        visitor.classFile(read(zip, e, jar), reported);
                    } else if (isConfig(name) && e.getSize() <= MAX_RESOURCE) {
                        visitor.resource(name, new String(read(zip, e, jar), StandardCharsets.UTF_8), reported);
                    }
                } else if (name.startsWith(appPrefix)) {
                    String rel = name.substring(appPrefix.length());
                    if (rel.endsWith(".class") && !skipClass(rel)) {
                        visitor.classFile(read(zip, e, jar), reported);
                    } else if (isConfig(rel) && e.getSize() <= MAX_RESOURCE) {
                        visitor.resource(rel, new String(read(zip, e, jar), StandardCharsets.UTF_8), reported);
                    }
                } else if (name.startsWith(libPrefix) && name.endsWith(".jar")) {
                    counts.nestedJars++;
                    try (InputStream in = zip.getInputStream(e)) {
                        readNested(in, reported && includeLibraries, visitor, jar + "!/" + name);
                    }
                } else if (name.endsWith(".class") && !skipClass(name)) {
                    // The Boot launcher and anything else outside the application: hierarchy only.
                    visitor.classFile(read(zip, e, jar), reported && includeLibraries);
                }
            }
        } catch (ZipException e) {
            throw new AuditException(
                    "cannot read " + jar + " as a jar (" + e.getMessage() + "); pass a jar, a class "
                            + "directory or a Spring Boot fat jar",
                    e);
        } catch (IOException e) {
            throw new AuditException("cannot read " + jar + ": " + e.getMessage(), e);
        }
    }

    private static boolean hasPrefix(ZipFile zip, String prefix) {
        Enumeration<? extends ZipEntry> entries = zip.entries();
        while (entries.hasMoreElements()) {
            if (entries.nextElement().getName().startsWith(prefix)) {
                return true;
            }
        }
        return false;
    }

    private static void readNested(InputStream in, boolean reported, Visitor visitor, String where) throws IOException {
        ZipInputStream nested = new ZipInputStream(in);
        ZipEntry e;
        try {
            while ((e = nested.getNextEntry()) != null) {
                String name = e.getName();
                if (!e.isDirectory() && name.endsWith(".class") && !skipClass(name)) {
                    visitor.classFile(nested.readAllBytes(), reported);
                }
            }
        } catch (ZipException z) {
            throw new AuditException("cannot read nested jar " + where + " (" + z.getMessage() + ")", z);
        }
    }

    private static byte[] read(ZipFile zip, ZipEntry e, Path jar) throws IOException {
        try (InputStream in = zip.getInputStream(e)) {
            ByteArrayOutputStream out = new ByteArrayOutputStream(e.getSize() > 0 ? (int) e.getSize() : 4096);
            in.transferTo(out);
            return out.toByteArray();
        }
    }

    /** Module and package descriptors, and the per-release copies of a multi-release jar, carry no state. */
    private static boolean skipClass(String name) {
        return name.endsWith("module-info.class")
                || name.endsWith("package-info.class")
                || name.startsWith("META-INF/");
    }

    /** Configuration that can switch on in-memory state (Quartz's job store). */
    private static boolean isConfig(String name) {
        String base = name.substring(name.lastIndexOf('/') + 1);
        return !name.startsWith("META-INF/")
                && (base.endsWith(".properties") || base.endsWith(".yml") || base.endsWith(".yaml"))
                && (base.startsWith("application") || base.startsWith("bootstrap") || base.startsWith("quartz"));
    }
}
