package dev.baton.audit.maven;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.apache.maven.plugin.MojoExecutionException;
import org.apache.maven.plugin.MojoFailureException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The goal run in-process, configured as Maven would inject it; no Maven distribution needed. */
class AuditMojoTest {
    static final File FIXTURE = new File("target/test-classes/dev/baton/audit/maven/fixture");

    private static AuditMojo mojo(Path dir) {
        AuditMojo m = new AuditMojo();
        m.classesDirectory = FIXTURE;
        m.outputDirectory = dir.resolve("baton-audit").toFile();
        m.basedir = dir.toFile();
        m.classpathElements = List.of(FIXTURE.getPath(), "does/not/exist.jar");
        return m;
    }

    @Test
    void failsTheBuildOnAHighFindingAndWritesTheReports(@TempDir Path dir) throws Exception {
        AuditMojo m = mojo(dir);
        assertThatThrownBy(m::execute)
                .isInstanceOf(MojoFailureException.class)
                .hasMessageStartingWith("baton audit: 1 unexcluded finding(s) at high or above")
                .hasMessageContaining("baton-audit.md");
        String sarif = Files.readString(dir.resolve("baton-audit/baton-audit.sarif"));
        assertThat(sarif)
                .contains("\"version\" : \"2.1.0\"", "src/main/java/dev/baton/audit/maven/fixture/DeliveryLog.java");
        assertThat(Files.readString(dir.resolve("baton-audit/baton-audit.md"))).contains("DeliveryLog.PROCESSED_IDS");
        assertThat(dir.resolve("baton-audit/baton-audit.json")).exists();
    }

    @Test
    void failOnNoneAndExclusionsLetTheBuildPass(@TempDir Path dir) throws Exception {
        AuditMojo none = mojo(dir);
        none.failOn = "none";
        none.execute();

        Files.writeString(dir.resolve("baton-audit.yml"), """
                exclusions:
                  - class: dev.baton.audit.maven.fixture.DeliveryLog
                    reason: deliveries are also deduplicated by a unique index downstream
                """);
        AuditMojo excluded = mojo(dir);
        excluded.execute(); // picks up baton-audit.yml from the project directory
        assertThat(Files.readString(dir.resolve("baton-audit/baton-audit.md"))).contains("## Excluded (1)");
    }

    @Test
    void badConfigurationIsABuildError(@TempDir Path dir) throws Exception {
        AuditMojo level = mojo(dir);
        level.failOn = "severe";
        assertThatThrownBy(level::execute)
                .isInstanceOf(MojoExecutionException.class)
                .hasMessage("failOn: severity must be one of low, medium, high, none, but was 'severe'");

        AuditMojo format = mojo(dir);
        format.formats = List.of("html");
        assertThatThrownBy(format::execute)
                .isInstanceOf(MojoExecutionException.class)
                .hasMessageContaining("formats: format must be one of table, markdown, json, sarif, but was 'html'");

        Files.writeString(dir.resolve("bad.yml"), "exclusions:\n  - class: a.B\n");
        AuditMojo bad = mojo(dir);
        bad.exclusions = dir.resolve("bad.yml").toFile();
        assertThatThrownBy(bad::execute)
                .isInstanceOf(MojoExecutionException.class)
                .hasMessageContaining("entry 1 (class a.B) has no 'reason'");
    }

    @Test
    void skipsWithoutClassesOrWhenAsked(@TempDir Path dir) throws Exception {
        AuditMojo noClasses = mojo(dir);
        noClasses.classesDirectory = dir.resolve("missing").toFile();
        noClasses.execute();
        AuditMojo skipped = mojo(dir);
        skipped.skip = true;
        skipped.execute();
        assertThat(dir.resolve("baton-audit")).doesNotExist();
    }
}
