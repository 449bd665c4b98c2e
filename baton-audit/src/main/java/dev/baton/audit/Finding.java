package dev.baton.audit;

import java.util.Objects;

/**
 * One piece of process-local state that breaks when the service runs as several instances.
 *
 * @param category   what kind of state it is
 * @param severity   how much it matters
 * @param className  the binary class name, e.g. {@code com.example.LoginLimiter} (nested: {@code Outer$Inner})
 * @param member     the field or method name; empty for a finding about the class or its configuration
 * @param sourceFile the source path as derived from the package and the class's SourceFile attribute,
 *                   e.g. {@code com/example/LoginLimiter.java} (with the audit's source root prepended if one
 *                   was set); null when the class was compiled without it
 * @param line       the source line, or 0 when the class has no line numbers
 * @param lineSource which line that is: {@code "first write in <init>"}, {@code "first write in <clinit>"},
 *                   {@code "first use"}, {@code "method"} (its first line) or {@code "call"}
 * @param kind       a short label of what was found, e.g. {@code "map of rate limiters"}
 * @param evidence   the bytecode evidence, e.g. {@code "put in register(), remove in redeem()"}
 * @param why        why it breaks with N instances, one or two sentences
 * @param remedy     the Baton replacement, one or two sentences
 * @param example    a short code example of the remedy
 */
public record Finding(
        Category category,
        Severity severity,
        String className,
        String member,
        String sourceFile,
        int line,
        String lineSource,
        String kind,
        String evidence,
        String why,
        String remedy,
        String example) {
    public Finding {
        Objects.requireNonNull(category, "category");
        Objects.requireNonNull(severity, "severity");
        Objects.requireNonNull(className, "className");
        member = member == null ? "" : member;
    }

    /**
     * {@code className.member}, or the class name alone when there is no member; for a finding in a
     * configuration file, {@code file key}.
     */
    public String location() {
        return member.isEmpty() ? className : className + (resource() ? " " : ".") + member;
    }

    /** True if this finding is about a configuration file (its className is the file's path). */
    public boolean resource() {
        return className.endsWith(".properties") || className.endsWith(".yml") || className.endsWith(".yaml");
    }

    /** {@code sourceFile:line}, or the best that is known. */
    public String sourceLocation() {
        String file = sourceFile != null ? sourceFile : className.replace('.', '/') + ".class";
        return line > 0 ? file + ":" + line : file;
    }
}
