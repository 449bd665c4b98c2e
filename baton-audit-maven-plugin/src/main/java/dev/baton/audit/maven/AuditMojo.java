package dev.baton.audit.maven;

import dev.baton.audit.AuditException;
import dev.baton.audit.AuditReport;
import dev.baton.audit.BatonAudit;
import dev.baton.audit.ReportFormat;
import dev.baton.audit.Severity;
import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import org.apache.maven.plugin.AbstractMojo;
import org.apache.maven.plugin.MojoExecutionException;
import org.apache.maven.plugin.MojoFailureException;
import org.apache.maven.plugins.annotations.LifecyclePhase;
import org.apache.maven.plugins.annotations.Mojo;
import org.apache.maven.plugins.annotations.Parameter;
import org.apache.maven.plugins.annotations.ResolutionScope;

/**
 * Audits the project's compiled classes for process-local state that breaks when the service runs as
 * several instances (see Baton's docs/audit.md), logs the report, writes it to
 * {@code target/baton-audit/} and fails the build when an unexcluded finding is at {@code failOn} or
 * above. The compile classpath is read for the type hierarchy only.
 */
@Mojo(
        name = "audit",
        defaultPhase = LifecyclePhase.VERIFY,
        requiresDependencyResolution = ResolutionScope.COMPILE,
        threadSafe = true)
public class AuditMojo extends AbstractMojo {
    /** The classes to audit. */
    @Parameter(defaultValue = "${project.build.outputDirectory}", required = true)
    File classesDirectory;

    /** Read for the type hierarchy (meta-annotations, supertypes), never reported. */
    @Parameter(defaultValue = "${project.compileClasspathElements}", readonly = true)
    List<String> classpathElements = new ArrayList<>();

    @Parameter(defaultValue = "${project.basedir}", readonly = true)
    File basedir;

    /** Exclusions file (YAML or JSON, each entry with a reason). Default: baton-audit.yml in the project, if present. */
    @Parameter(property = "baton.audit.exclusions")
    File exclusions;

    /** Fail the build on unexcluded findings at this severity or above: low, medium, high or none. */
    @Parameter(property = "baton.audit.failOn", defaultValue = "high")
    String failOn = "high";

    /** Report files to write into {@link #outputDirectory}: any of table, markdown, json, sarif. */
    @Parameter(property = "baton.audit.formats", defaultValue = "markdown,json,sarif")
    List<String> formats = new ArrayList<>(List.of("markdown", "json", "sarif"));

    @Parameter(property = "baton.audit.outputDirectory", defaultValue = "${project.build.directory}/baton-audit")
    File outputDirectory;

    /** Prefix of source paths in the reports, so SARIF locations resolve from the project directory. */
    @Parameter(property = "baton.audit.sourceRoot", defaultValue = "src/main/java")
    String sourceRoot = "src/main/java";

    /** Also report classes of the compile classpath. */
    @Parameter(property = "baton.audit.includeLibraries", defaultValue = "false")
    boolean includeLibraries;

    @Parameter(property = "baton.audit.skip", defaultValue = "false")
    boolean skip;

    @Override
    public void execute() throws MojoExecutionException, MojoFailureException {
        if (skip) {
            getLog().info("baton audit skipped (baton.audit.skip)");
            return;
        }
        if (classesDirectory == null || !classesDirectory.isDirectory()) {
            getLog().info("baton audit: no classes in " + classesDirectory + "; nothing to audit");
            return;
        }
        String level = failOn == null ? "high" : failOn.trim().toLowerCase(Locale.ROOT);
        boolean never = level.equals("none");
        Severity threshold;
        try {
            threshold = never ? Severity.HIGH : Severity.parse(level);
        } catch (IllegalArgumentException e) {
            throw new MojoExecutionException("failOn: " + e.getMessage().replace("high,", "high, none,"));
        }
        List<ReportFormat> files = new ArrayList<>();
        for (String f : formats) {
            try {
                files.add(ReportFormat.parse(f));
            } catch (IllegalArgumentException e) {
                throw new MojoExecutionException("formats: " + e.getMessage());
            }
        }
        List<Path> libraries = new ArrayList<>();
        for (String element : classpathElements) {
            Path p = Path.of(element);
            if (!p.toAbsolutePath()
                            .normalize()
                            .equals(classesDirectory.toPath().toAbsolutePath().normalize())
                    && Files.exists(p)) {
                libraries.add(p);
            }
        }
        BatonAudit audit = BatonAudit.forClasses(classesDirectory.toPath())
                .libraries(libraries)
                .includeLibraries(includeLibraries)
                .sourceRoot(sourceRoot);
        File exclusionsFile = exclusions;
        if (exclusionsFile == null && basedir != null && new File(basedir, "baton-audit.yml").isFile()) {
            exclusionsFile = new File(basedir, "baton-audit.yml");
        }
        if (exclusionsFile != null) {
            audit.exclusions(exclusionsFile.toPath());
        }
        AuditReport report;
        try {
            report = audit.run();
        } catch (AuditException e) {
            throw new MojoExecutionException("baton audit: " + e.getMessage(), e);
        }
        for (String line : ReportFormat.TABLE.render(report).split("\n")) {
            getLog().info(line);
        }
        for (String w : report.warnings()) {
            getLog().warn("baton audit: " + w);
        }
        List<Path> written = new ArrayList<>();
        try {
            Files.createDirectories(outputDirectory.toPath());
            for (ReportFormat f : files) {
                Path out = outputDirectory.toPath().resolve("baton-audit." + f.extension());
                Files.writeString(out, f.render(report));
                written.add(out);
            }
        } catch (IOException e) {
            throw new MojoExecutionException(
                    "baton audit: cannot write reports to " + outputDirectory + ": " + e.getMessage(), e);
        }
        if (!written.isEmpty()) {
            getLog().info("baton audit: reports written to " + written);
        }
        int failing = never ? 0 : report.findingsAtLeast(threshold).size();
        if (failing > 0) {
            throw new MojoFailureException("baton audit: " + failing + " unexcluded finding(s) at "
                    + threshold.name().toLowerCase(Locale.ROOT) + " or above (" + report.severityCounts()
                    + " in total) "
                    + "would break with several instances; fix them, or record deliberate ones with a reason in "
                    + (exclusionsFile != null ? exclusionsFile : "baton-audit.yml") + ". Report: "
                    + (written.isEmpty() ? "the log above" : written.get(0)));
        }
    }
}
