package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;
import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.DocumentationTool;
import javax.tools.JavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The API's Javadoc, built with every doclint check on: every public member of {@code dev.baton} has a
 * comment, and the comments are well-formed (HTML, references, syntax, accessibility). Missing
 * {@code @param}/{@code @return}/{@code @throws} tags are allowed where the sentence says it (decision
 * 0016). Seen failing: with the comment of {@code Jobs.resume} removed ("no comment"), and with a
 * {@code {@link NoSuchType}} in {@code Baton}'s class comment ("reference not found").
 */
class ApiJavadocTest {
    @Test
    void everyPublicMemberOfTheApiIsDocumentedAndDoclintFindsNothingElse(@TempDir Path out) throws Exception {
        DocumentationTool javadoc = ToolProvider.getSystemDocumentationTool();
        List<File> sources;
        try (Stream<Path> files = Files.list(Path.of("src/main/java/dev/baton"))) {
            sources = files.filter(p -> p.toString().endsWith(".java"))
                    .map(Path::toFile)
                    .toList();
        }
        assertThat(sources).as("the API's sources").hasSizeGreaterThan(30);
        DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
        try (StandardJavaFileManager files =
                javadoc.getStandardFileManager(diagnostics, Locale.ROOT, StandardCharsets.UTF_8)) {
            List<String> options = List.of(
                    "-Xdoclint:all",
                    "-Xmaxwarns",
                    "100000",
                    "-Xmaxerrs",
                    "100000",
                    "-quiet",
                    "-d",
                    out.toString(),
                    "-classpath",
                    System.getProperty("java.class.path"));
            javadoc.getTask(null, files, diagnostics, null, options, files.getJavaFileObjectsFromFiles(sources))
                    .call();
        }
        List<String> problems = diagnostics.getDiagnostics().stream()
                .filter(d -> d.getKind() == Diagnostic.Kind.ERROR || d.getKind() == Diagnostic.Kind.WARNING)
                .filter(d -> !onlyATagMissing(d.getMessage(Locale.ROOT)))
                .map(d -> (d.getSource() == null ? "" : d.getSource().getName() + ":" + d.getLineNumber() + ": ")
                        + d.getMessage(Locale.ROOT))
                .toList();
        assertThat(problems).isEmpty();
    }

    private static boolean onlyATagMissing(String message) {
        return message.startsWith("no @param") || message.startsWith("no @return") || message.startsWith("no @throws");
    }
}
