package dev.baton.cli;

import dev.baton.audit.AuditException;
import dev.baton.audit.AuditReport;
import dev.baton.audit.BatonAudit;
import dev.baton.audit.ReportFormat;
import dev.baton.audit.Severity;
import java.io.File;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

@Command(
        name = "audit",
        mixinStandardHelpOptions = true,
        header = "Lists the process-local state that breaks when the service runs as several instances.",
        description = {
            "Reads compiled classes (bytecode only: nothing is loaded or run) and reports, with the source "
                    + "line, why each finding breaks with N instances and the Baton remedy: mutable state in singletons "
                    + "and static fields, in-process scheduling and background loops, in-process rate limiters, semaphores "
                    + "and JVM locks around shared writes, single-use/replay/revocation/session state, and local files used "
                    + "as shared state. See docs/audit.md.",
            "",
            "PATH is a class directory (target/classes), a jar, or a Spring Boot fat jar: its BOOT-INF/classes are "
                    + "reported and its BOOT-INF/lib jars are read for the type hierarchy only (unless --include-libraries)."
        },
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {
            "0:no unexcluded finding at or above --fail-on",
            "1:unexcluded findings at or above --fail-on (listed in the report)",
            "2:usage error: missing or unreadable path, corrupt jar, bad exclusions file, unknown format"
        })
final class AuditCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Parameters(paramLabel = "PATH", arity = "1..*", description = "Class directories, jars or Spring Boot fat jars.")
    List<Path> paths = new ArrayList<>();

    @Option(
            names = "--format",
            paramLabel = "FORMAT",
            defaultValue = "table",
            description =
                    "table, markdown, json or sarif (SARIF 2.1.0, for GitHub code scanning). Default: ${DEFAULT-VALUE}.")
    String format;

    @Option(
            names = "--output",
            paramLabel = "FILE",
            description = "Write the report to FILE instead of standard output.")
    Path output;

    @Option(
            names = "--exclusions",
            paramLabel = "FILE",
            description = "YAML or JSON file of deliberate exclusions, each with a reason (see docs/audit.md).")
    Path exclusions;

    @Option(
            names = "--fail-on",
            paramLabel = "SEVERITY",
            defaultValue = "high",
            description = "Exit 1 when an unexcluded finding is at this severity or above: low, medium, high, or none "
                    + "(never). Default: ${DEFAULT-VALUE}.")
    String failOn;

    @Option(
            names = "--include-libraries",
            description = "Also report the classes of a fat jar's BOOT-INF/lib jars and of --classpath.")
    boolean includeLibraries;

    @Option(
            names = "--classpath",
            paramLabel = "PATHS",
            description =
                    "Jars or directories, separated by the platform's path separator (':' or ';'), read for the type "
                            + "hierarchy only, e.g. the application's dependencies, so custom stereotypes and subtypes are "
                            + "recognised. May be repeated.")
    List<String> classpath = new ArrayList<>();

    @Option(
            names = "--source-root",
            paramLabel = "PREFIX",
            description =
                    "Prefix of source paths in the report, e.g. src/main/java, so SARIF locations resolve from the "
                            + "repository root.")
    String sourceRoot;

    @Override
    public Integer call() {
        ReportFormat fmt;
        Severity threshold;
        try {
            fmt = ReportFormat.parse(format);
        } catch (IllegalArgumentException e) {
            throw CliException.usage("--format: " + e.getMessage());
        }
        boolean never = failOn.trim().toLowerCase(Locale.ROOT).equals("none");
        try {
            threshold = never ? Severity.HIGH : Severity.parse(failOn);
        } catch (IllegalArgumentException e) {
            throw CliException.usage("--fail-on: " + e.getMessage().replace("high,", "high, none,"));
        }
        AuditReport report;
        try {
            List<Path> libraries = new ArrayList<>();
            for (String entry : classpath) {
                for (String p : entry.split(java.util.regex.Pattern.quote(File.pathSeparator))) {
                    if (!p.isBlank()) {
                        libraries.add(Path.of(p));
                    }
                }
            }
            BatonAudit audit = BatonAudit.forClasses(paths)
                    .libraries(libraries)
                    .includeLibraries(includeLibraries)
                    .sourceRoot(sourceRoot);
            if (exclusions != null) {
                audit.exclusions(exclusions);
            }
            report = audit.run();
        } catch (AuditException e) {
            throw CliException.usage(e.getMessage());
        }
        String text = fmt.render(report);
        PrintWriter out = spec.commandLine().getOut();
        if (output != null) {
            try {
                Path parent = output.toAbsolutePath().getParent();
                if (parent != null) {
                    Files.createDirectories(parent);
                }
                Files.writeString(output, text);
            } catch (IOException e) {
                throw new CliException(
                        Main.EXIT_USAGE,
                        "cannot write the report to " + output + ": " + e.getMessage()
                                + "; pass a writable --output path",
                        e);
            }
            out.println("baton audit: " + report.findings().size() + " finding(s) (" + report.severityCounts() + "), "
                    + report.excluded().size() + " excluded, "
                    + report.warnings().size() + " warning(s); "
                    + fmt.name().toLowerCase(Locale.ROOT) + " report written to " + output);
        } else {
            out.print(text);
        }
        out.flush();
        PrintWriter err = spec.commandLine().getErr();
        if (fmt != ReportFormat.TABLE && fmt != ReportFormat.MARKDOWN) {
            for (String w : report.warnings()) {
                err.println("baton audit: warning: " + w);
            }
        }
        int failing = never ? 0 : report.findingsAtLeast(threshold).size();
        if (failing > 0) {
            err.println("baton audit: " + failing + " unexcluded finding(s) at "
                    + threshold.name().toLowerCase(Locale.ROOT)
                    + " or above; fix them or record deliberate ones in an exclusions file with a reason");
        }
        err.flush();
        return failing > 0 ? Main.EXIT_CHECK_FAILED : Main.EXIT_OK;
    }
}
