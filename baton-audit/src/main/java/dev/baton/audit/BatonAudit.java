package dev.baton.audit;

import dev.baton.audit.Facts.ClassFacts;
import dev.baton.audit.Facts.Header;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDate;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.objectweb.asm.AnnotationVisitor;
import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassVisitor;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.tree.ClassNode;

/**
 * The scale-out audit: reads compiled classes (bytecode only; nothing is loaded or run) and lists the
 * process-local state that breaks when the service runs as several instances, each finding with why
 * it breaks and the Baton remedy.
 *
 * <pre>{@code
 * AuditReport report = BatonAudit.forClasses(Path.of("target/classes"))
 *         .exclusions(Path.of("baton-audit.yml"))
 *         .run();
 * // in a JUnit test:
 * BatonAudit.forClasses(Path.of("target/classes")).exclusions(Path.of("baton-audit.yml"))
 *         .assertNoFindings(Severity.HIGH);
 * }</pre>
 *
 * A path is a class directory, a jar, a single class file, or a Spring Boot fat jar (its
 * {@code BOOT-INF/classes} is audited; its {@code BOOT-INF/lib} jars are read for the type hierarchy
 * only, unless {@link #includeLibraries(boolean)}). Every class file is read once. An instance is a
 * builder: configure it, then call {@link #run()}; not thread-safe, reusable.
 */
public final class BatonAudit {
    private final List<Path> paths;
    private final List<Path> libraries = new ArrayList<>();
    private boolean includeLibraries;
    private Path exclusionsFile;
    private Exclusions exclusions = Exclusions.none();
    private String sourceRoot = "";
    private LocalDate today;

    private BatonAudit(List<Path> paths) {
        if (paths.isEmpty()) {
            throw new IllegalArgumentException(
                    "no path to audit; pass a jar, a class directory or a Spring Boot fat jar");
        }
        for (Path p : paths) {
            Objects.requireNonNull(p, "path");
        }
        this.paths = List.copyOf(paths);
    }

    /** Audits these class directories, jars or fat jars. */
    public static BatonAudit forClasses(Path... paths) {
        return new BatonAudit(List.of(paths));
    }

    /** Audits these class directories, jars or fat jars. */
    public static BatonAudit forClasses(Collection<Path> paths) {
        return new BatonAudit(List.copyOf(paths));
    }

    /**
     * Jars or directories read for the type hierarchy only (meta-annotations, supertypes), never
     * reported; for example the project's compile classpath.
     */
    public BatonAudit libraries(Collection<Path> paths) {
        for (Path p : paths) {
            libraries.add(Objects.requireNonNull(p, "library path"));
        }
        return this;
    }

    /** Also report classes from a fat jar's nested library jars and from {@link #libraries}. Default false. */
    public BatonAudit includeLibraries(boolean include) {
        this.includeLibraries = include;
        return this;
    }

    /** Reads exclusions from this YAML or JSON file when the audit runs (see {@link Exclusions}). */
    public BatonAudit exclusions(Path file) {
        this.exclusionsFile = Objects.requireNonNull(file, "exclusions file");
        return this;
    }

    /** Uses these exclusions. */
    public BatonAudit exclusions(Exclusions exclusions) {
        this.exclusions = Objects.requireNonNull(exclusions, "exclusions");
        this.exclusionsFile = null;
        return this;
    }

    /**
     * Prefixes every finding's source path, e.g. {@code src/main/java}, so SARIF locations resolve
     * from the repository root. Default: none ({@code com/example/Foo.java}).
     */
    public BatonAudit sourceRoot(String prefix) {
        this.sourceRoot = prefix == null ? "" : prefix.replace('\\', '/');
        return this;
    }

    /** The day exclusion expiry is judged on. Default: today in the system time zone. */
    public BatonAudit today(LocalDate day) {
        this.today = Objects.requireNonNull(day, "today");
        return this;
    }

    /**
     * Runs the audit.
     *
     * @throws AuditException if a path is missing or unreadable, a jar is corrupt, or the exclusions
     *                        file is missing or invalid
     */
    public AuditReport run() {
        long start = System.nanoTime();
        Exclusions ex = exclusionsFile != null ? Exclusions.load(exclusionsFile) : exclusions;
        ClassIndex index = new ClassIndex();
        List<ClassFacts> audited = new ArrayList<>();
        Map<String, String> resources = new LinkedHashMap<>();
        int[] read = {0};
        ClassSource.Counts counts = new ClassSource.Counts();
        ClassSource.Visitor visitor = new ClassSource.Visitor() {
            @Override
            public void classFile(byte[] bytes, boolean reported) {
                read[0]++;
                Header h;
                try {
                    h = reported ? readFull(bytes) : readHeader(bytes);
                } catch (RuntimeException e) {
                    return; // not a class file ASM understands (corrupt or from the future): skipped
                }
                if (index.get(h.name) == null) {
                    index.add(h);
                    if (h.facts != null) {
                        audited.add(h.facts);
                    }
                }
            }

            @Override
            public void resource(String name, String text, boolean reported) {
                if (reported) {
                    resources.putIfAbsent(name, text);
                }
            }
        };
        for (Path p : paths) {
            ClassSource.read(p, true, includeLibraries, visitor, counts);
        }
        for (Path p : libraries) {
            ClassSource.read(p, includeLibraries, includeLibraries, visitor, counts);
        }
        Rules rules = new Rules(index, audited, resources, sourceRoot);
        List<Finding> all = new ArrayList<>(rules.run());
        all.sort(ORDER);
        LocalDate day = today != null ? today : LocalDate.now();
        List<Finding> open = new ArrayList<>();
        List<AuditReport.Excluded> hidden = new ArrayList<>();
        Map<Exclusions.Entry, Integer> matched = new LinkedHashMap<>();
        for (Exclusions.Entry e : ex.entries()) {
            matched.put(e, 0);
        }
        for (Finding f : all) {
            Exclusions.Entry by = null;
            for (Exclusions.Entry e : ex.entries()) {
                if (e.matches(f)) {
                    matched.merge(e, 1, Integer::sum);
                    if (!e.expiredOn(day) && by == null) {
                        by = e;
                    }
                }
            }
            if (by != null) {
                hidden.add(new AuditReport.Excluded(f, by));
            } else {
                open.add(f);
            }
        }
        List<String> warnings = new ArrayList<>();
        for (Map.Entry<Exclusions.Entry, Integer> m : matched.entrySet()) {
            Exclusions.Entry e = m.getKey();
            if (e.expiredOn(day)) {
                warnings.add("expired exclusion: " + e.where() + " for " + e.target() + " expired on " + e.expires()
                        + (e.owner() == null ? "" : " (owner " + e.owner() + ")") + "; its " + m.getValue()
                        + " finding(s) are reported again: fix them, or renew the entry with a new date and reason");
            } else if (m.getValue() == 0) {
                warnings.add("stale exclusion: " + e.where() + " for " + e.target() + " matched no finding; remove it, "
                        + "or correct its class, member or category");
            }
        }
        List<String> inputs = new ArrayList<>();
        paths.forEach(p -> inputs.add(p.toString()));
        return new AuditReport(
                inputs,
                read[0],
                audited.size(),
                rules.singletons.size(),
                open,
                hidden,
                warnings,
                Duration.ofNanos(System.nanoTime() - start));
    }

    /**
     * Runs the audit and throws an {@link AssertionError} listing every unexcluded finding at
     * {@code threshold} or above, each with its source line, why it breaks and the remedy; stale and
     * expired exclusions are listed too. For JUnit (any version) or any test framework.
     *
     * @return the report, when nothing at or above the threshold was found
     */
    public AuditReport assertNoFindings(Severity threshold) {
        Objects.requireNonNull(threshold, "threshold");
        AuditReport report = run();
        List<Finding> failing = report.findingsAtLeast(threshold);
        if (failing.isEmpty()) {
            return report;
        }
        StringBuilder sb = new StringBuilder();
        sb.append(failing.size())
                .append(" scale-out finding(s) at ")
                .append(threshold.label())
                .append(" or above would break with several instances:\n");
        int i = 0;
        for (Finding f : failing) {
            sb.append("\n")
                    .append(++i)
                    .append(". [")
                    .append(f.severity())
                    .append("] ")
                    .append(f.category().ruleId())
                    .append(" ")
                    .append(f.location())
                    .append(" (")
                    .append(f.sourceLocation())
                    .append(")\n");
            sb.append("   ").append(f.kind()).append(": ").append(f.evidence()).append("\n");
            sb.append("   why: ").append(f.why()).append("\n");
            sb.append("   fix: ").append(f.remedy()).append("\n");
        }
        for (String w : report.warnings()) {
            sb.append("\nwarning: ").append(w);
        }
        sb.append("\nFix them, or record deliberate ones in the exclusions file with a reason (see docs/audit.md).");
        throw new AssertionError(sb.toString());
    }

    static final Comparator<Finding> ORDER = Comparator.comparing(Finding::severity)
            .reversed()
            .thenComparing(Finding::category)
            .thenComparing(Finding::className)
            .thenComparing(Finding::member);

    private static Header readFull(byte[] bytes) {
        ClassNode cn = new ClassNode(Opcodes.ASM9);
        new ClassReader(bytes).accept(cn, ClassReader.SKIP_FRAMES);
        Header h = new Header(
                cn.name,
                cn.superName,
                cn.interfaces.toArray(new String[0]),
                cn.access,
                Collector.annotations(cn.visibleAnnotations, cn.invisibleAnnotations));
        h.facts = Collector.collect(cn);
        return h;
    }

    /** A library class: its header and class annotations only; code, fields and methods are skipped. */
    private static Header readHeader(byte[] bytes) {
        Header[] out = new Header[1];
        List<String> annotations = new ArrayList<>(2);
        long[][] keys = {new long[8]};
        int[] count = {0};
        new ClassReader(bytes)
                .accept(
                        new ClassVisitor(Opcodes.ASM9) {
                            @Override
                            public MethodVisitor visitMethod(
                                    int access, String name, String descriptor, String signature, String[] exceptions) {
                                if ((access & (Opcodes.ACC_PRIVATE | Opcodes.ACC_STATIC)) == 0
                                        && !name.startsWith("<")) {
                                    if (count[0] == keys[0].length) {
                                        keys[0] = Arrays.copyOf(keys[0], count[0] * 2);
                                    }
                                    keys[0][count[0]++] = Facts.key(name, descriptor);
                                }
                                return null;
                            }

                            @Override
                            public void visit(
                                    int version,
                                    int access,
                                    String name,
                                    String signature,
                                    String superName,
                                    String[] interfaces) {
                                out[0] = new Header(name, superName, interfaces, access, annotations);
                            }

                            @Override
                            public AnnotationVisitor visitAnnotation(String descriptor, boolean visible) {
                                if (descriptor.length() > 2) {
                                    annotations.add(descriptor.substring(1, descriptor.length() - 1));
                                }
                                return null;
                            }
                        },
                        ClassReader.SKIP_CODE | ClassReader.SKIP_DEBUG | ClassReader.SKIP_FRAMES);
        long[] methodKeys = Arrays.copyOf(keys[0], count[0]);
        Arrays.sort(methodKeys);
        out[0].methodKeys = methodKeys;
        return out[0];
    }
}
