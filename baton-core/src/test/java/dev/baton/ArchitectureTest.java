package dev.baton;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.classes;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.members;
import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static org.assertj.core.api.Assertions.assertThat;

import com.tngtech.archunit.base.DescribedPredicate;
import com.tngtech.archunit.core.domain.Dependency;
import com.tngtech.archunit.core.domain.JavaClass;
import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.domain.JavaCodeUnit;
import com.tngtech.archunit.core.domain.JavaField;
import com.tngtech.archunit.core.domain.JavaMember;
import com.tngtech.archunit.core.domain.JavaModifier;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import com.tngtech.archunit.lang.ArchCondition;
import com.tngtech.archunit.lang.ConditionEvents;
import com.tngtech.archunit.lang.SimpleConditionEvent;
import java.io.InputStream;
import java.lang.module.ModuleDescriptor;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.PreparedStatement;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The package layout of decision 0016: the API in {@code dev.baton}, internals in
 * {@code dev.baton.internal.<capability>}, and the module descriptor exporting only the API.
 *
 * <p>Each rule was seen failing by breaking it in a scratch copy: a public {@code Leases} method
 * returning a {@code Db} failed the first; {@code Db} reading {@code Leases.MIN_TTL} failed the second;
 * {@code Db} calling {@code Service.jitter}, and {@code Notifier} taking a {@code JobStore}, failed the
 * third; a {@code PreparedStatement} referenced from {@code Leases} (and the notifier's own probe
 * statement, before it went through {@code Jdbc.notify}) failed the fourth; exporting
 * {@code dev.baton.internal.db} from {@code module-info.java} failed the last.
 */
class ArchitectureTest {
    private static JavaClasses core;

    @BeforeAll
    static void importCore() {
        core = new ClassFileImporter()
                .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_JARS)
                .importPackages("dev.baton");
    }

    private static final DescribedPredicate<JavaClass> INTERNAL = DescribedPredicate.describe(
            "reside in dev.baton.internal", c -> c.getPackageName().startsWith("dev.baton.internal"));

    /**
     * A facade: a public class of the API package that does work (not a value, an exception, an enum,
     * an interface users implement, or a config).
     */
    private static final DescribedPredicate<JavaClass> FACADE = DescribedPredicate.describe(
            "are API facades",
            c -> c.getPackageName().equals("dev.baton")
                    && c.getModifiers().contains(JavaModifier.PUBLIC)
                    && !c.isRecord()
                    && !c.isEnum()
                    && !c.isInterface()
                    && !c.isAssignableTo(Throwable.class)
                    && !c.getSimpleName().endsWith("Config")
                    && !c.getSimpleName().equals("Schedule")
                    && !c.getSimpleName().equals("JobRequest")
                    && !c.getSimpleName().equals("JobQuery")
                    && !c.getSimpleName().equals("RetryPolicy"));

    @Test
    void noApiMemberExposesAnInternalType() {
        members()
                .that()
                .areDeclaredInClassesThat()
                .resideInAPackage("dev.baton")
                .and()
                .areDeclaredInClassesThat()
                .arePublic()
                .and(DescribedPredicate.describe(
                        "are public or protected",
                        (JavaMember m) -> m.getModifiers().contains(JavaModifier.PUBLIC)
                                || m.getModifiers().contains(JavaModifier.PROTECTED)))
                .should(new ArchCondition<JavaMember>("not have an internal type in their signature") {
                    @Override
                    public void check(JavaMember m, ConditionEvents events) {
                        Set<JavaClass> types = new HashSet<>();
                        if (m instanceof JavaField f) {
                            types.add(f.getRawType());
                        } else if (m instanceof JavaCodeUnit u) {
                            types.add(u.getRawReturnType());
                            types.addAll(u.getRawParameterTypes());
                        }
                        for (JavaClass t : types) {
                            if (INTERNAL.test(t.getBaseComponentType())) {
                                events.add(SimpleConditionEvent.violated(
                                        m, m.getFullName() + " exposes the internal type " + t.getName()));
                            }
                        }
                    }
                })
                .allowEmptyShould(false)
                .check(core);
    }

    @Test
    void internalsNeverDependOnAFacade() {
        noClasses()
                .that(INTERNAL)
                .should()
                .dependOnClassesThat(FACADE)
                .because("internals serve the facades, never the other way round (decision 0016)")
                .check(core);
    }

    /**
     * Rule 3: statements are bound by name in the stores, through {@code internal.db}; only that layer, and
     * the migrator running the DDL scripts, prepare statements.
     */
    @Test
    void onlyTheDbLayerAndTheMigratorPrepareStatements() {
        noClasses()
                .that()
                .resideOutsideOfPackages("dev.baton.internal.db", "dev.baton.internal.schema")
                .should()
                .dependOnClassesThat()
                .haveFullyQualifiedName(PreparedStatement.class.getName())
                .because("one store per table binds its named statements through SqlCall (decision 0016)")
                .check(core);
    }

    /**
     * Which internal packages each internal package may use (decision 0016): the database layer none, the
     * service base the database layer,
     * every capability the bottom layers (the notifier is a service too), jobs and schedules also the
     * notifier, nodes also the job settings they declare, schedules also the job store, maintenance every
     * store. A package not listed may use none.
     */
    private static final Map<String, Set<String>> MAY_USE = Map.ofEntries(
            Map.entry("db", Set.of()),
            // a service's stop aborts its thread's database call that never answers (Db.InFlight)
            Map.entry("service", Set.of("db")),
            Map.entry("notify", Set.of("db", "service")),
            Map.entry("schema", Set.of("db")),
            Map.entry("lease", Set.of("db", "service")),
            Map.entry("coord", Set.of("db")),
            Map.entry("job", Set.of("db", "service", "notify")),
            // a node's row declares the job kinds and settings of its worker
            Map.entry("node", Set.of("db", "service", "job")),
            // the scheduler enqueues its jobs through the job store and wakes on schedule notifications
            Map.entry("schedule", Set.of("db", "service", "job", "notify")),
            // the housekeeping reaches every table through its store; each term runs its services
            Map.entry("maintenance", Set.of("db", "service", "job", "lease", "node", "schedule", "coord")),
            Map.entry("metrics", Set.of()),
            // test support for baton-test: reaches a node's worker (jobs) and scheduler
            Map.entry("testsupport", Set.of("db", "service", "job", "notify", "schedule")));

    @Test
    void internalPackagesUseOnlyTheInternalPackagesTheDecisionAllows() {
        classes()
                .that(INTERNAL)
                .should(new ArchCondition<JavaClass>("use only the internal packages decision 0016 allows") {
                    @Override
                    public void check(JavaClass c, ConditionEvents events) {
                        String from = capability(c);
                        for (Dependency d : c.getDirectDependenciesFromSelf()) {
                            JavaClass target = d.getTargetClass().getBaseComponentType();
                            if (!INTERNAL.test(target)) {
                                continue;
                            }
                            String to = capability(target);
                            if (!to.equals(from)
                                    && !MAY_USE.getOrDefault(from, Set.of()).contains(to)) {
                                events.add(SimpleConditionEvent.violated(
                                        d,
                                        "internal." + from + " may not use internal." + to + ": "
                                                + d.getDescription()));
                            }
                        }
                    }
                })
                .check(core);
    }

    private static String capability(JavaClass c) {
        String rest = c.getPackageName().substring("dev.baton.internal.".length());
        int dot = rest.indexOf('.');
        return dot < 0 ? rest : rest.substring(0, dot);
    }

    @Test
    void theModuleExportsOnlyTheApi() throws Exception {
        Path classes = Path.of(
                Baton.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        ModuleDescriptor module;
        try (InputStream in = Files.newInputStream(classes.resolve("module-info.class"))) {
            module = ModuleDescriptor.read(in);
        }
        assertThat(module.name()).isEqualTo("dev.baton.core");
        assertThat(module.exports().stream()
                        .filter(e -> !e.isQualified())
                        .map(ModuleDescriptor.Exports::source)
                        .collect(Collectors.toSet()))
                .containsExactly("dev.baton");
        // Internals are exported only to the test helpers' module (baton-test), for its inline runner and
        // schedule clock.
        assertThat(module.exports())
                .allMatch(e -> !e.source().startsWith("dev.baton.internal")
                        || e.targets().equals(Set.of("dev.baton.test")));
        assertThat(module.opens()).allMatch(o -> o.isQualified() && !o.source().startsWith("dev.baton.internal"));
    }
}
