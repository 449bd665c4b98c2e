package dev.baton.audit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Class directories, jars, Spring Boot fat jars, and bad input. */
class AuditInputsTest {
    static final Path FIXTURES = AuditRulesTest.FIXTURES;

    private static void jar(Path jar, String prefix) throws IOException {
        try (ZipOutputStream out = new ZipOutputStream(Files.newOutputStream(jar));
                Stream<Path> files = Files.walk(FIXTURES)) {
            for (Path p : files.filter(
                            f -> f.toString().endsWith(".class") && f.toString().contains("fixtures"))
                    .toList()) {
                out.putNextEntry(
                        new ZipEntry(prefix + FIXTURES.relativize(p).toString().replace('\\', '/')));
                out.write(Files.readAllBytes(p));
                out.closeEntry();
            }
        }
    }

    @Test
    void aJarReportsTheSameAsItsDirectory(@TempDir Path dir) throws Exception {
        Path jar = dir.resolve("app.jar");
        jar(jar, "");
        AuditReport fromDir = BatonAudit.forClasses(FIXTURES).run();
        AuditReport fromJar = BatonAudit.forClasses(jar).run();
        assertThat(fromJar.findings())
                .extracting(Finding::location)
                .containsExactlyElementsOf(fromDir.findings().stream()
                        .filter(f -> f.className().contains("fixtures"))
                        .map(Finding::location)
                        .toList());
    }

    @Test
    void aFatJarReportsItsClassesAndReadsItsLibrariesForTheHierarchyOnly(@TempDir Path dir) throws Exception {
        Path lib = dir.resolve("lib.jar");
        jar(lib, "");
        Path fat = dir.resolve("fat.jar");
        try (ZipOutputStream out = new ZipOutputStream(Files.newOutputStream(fat))) {
            out.putNextEntry(new ZipEntry("BOOT-INF/classes/application.properties"));
            out.write("spring.quartz.job-store-type=memory\n".getBytes());
            out.closeEntry();
            ZipEntry nested = new ZipEntry("BOOT-INF/lib/lib.jar");
            out.putNextEntry(nested);
            out.write(Files.readAllBytes(lib));
            out.closeEntry();
        }
        AuditReport r = BatonAudit.forClasses(fat).run();
        assertThat(r.findings())
                .extracting(Finding::className, Finding::member, Finding::line)
                .containsExactly(org.assertj.core.groups.Tuple.tuple(
                        "application.properties", "spring.quartz.job-store-type", 1));
        assertThat(r.classesRead()).isGreaterThan(5);
        assertThat(r.classesAudited()).isZero();
        AuditReport all = BatonAudit.forClasses(fat).includeLibraries(true).run();
        assertThat(all.findings()).extracting(Finding::member).contains("usedTokens", "SEEN");
    }

    @Test
    void badPathsAreClearErrors(@TempDir Path dir) throws Exception {
        assertThatThrownBy(
                        () -> BatonAudit.forClasses(dir.resolve("missing.jar")).run())
                .isInstanceOf(AuditException.class)
                .hasMessageContaining(
                        "missing.jar does not exist; pass a jar, a class directory or a Spring Boot fat jar");
        Path notAJar = dir.resolve("notes.jar");
        Files.writeString(notAJar, "hello");
        assertThatThrownBy(() -> BatonAudit.forClasses(notAJar).run())
                .isInstanceOf(AuditException.class)
                .hasMessageContaining("cannot read " + notAJar + " as a jar");
        assertThatThrownBy(() -> BatonAudit.forClasses(List.of())).hasMessageContaining("no path to audit");
    }

    @Test
    void assertNoFindingsListsEachFindingWithItsFix() {
        Throwable t = org.assertj.core.api.Assertions.catchThrowable(
                () -> BatonAudit.forClasses(FIXTURES).assertNoFindings(Severity.HIGH));
        assertThat(t).isInstanceOf(AssertionError.class);
        assertThat(t.getMessage())
                .startsWith("12 scale-out finding(s) at high or above would break with several instances:")
                .contains("[HIGH] baton-audit/single-use-state dev.baton.audit.fixtures.Registry.usedTokens "
                        + "(dev/baton/audit/fixtures/Registry.java:23)")
                .contains("   fix: Use baton.coordination().tokens()");
        assertThat(BatonAudit.forClasses(FIXTURES)
                        .exclusions(Exclusions.parse(
                                "exclusions:\n  - class: dev.baton.audit.fixtures.*\n    reason: fixtures\n", "t"))
                        .assertNoFindings(Severity.LOW)
                        .excluded())
                .hasSize(32);
    }
}
