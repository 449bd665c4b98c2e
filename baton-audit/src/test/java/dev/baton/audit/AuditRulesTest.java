package dev.baton.audit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The rules on the fixtures in {@code dev.baton.audit.fixtures}: what is reported, and what must not be. */
class AuditRulesTest {
    static final Path FIXTURES = Path.of("target/test-classes");
    static final String P = "dev.baton.audit.fixtures.";
    static AuditReport report;

    @BeforeAll
    static void audit() {
        report = BatonAudit.forClasses(FIXTURES).run();
    }

    private static List<Finding> in(String simpleClass) {
        return report.findings().stream()
                .filter(f -> f.className().equals(P + simpleClass))
                .toList();
    }

    @Test
    void reportsExactlyTheStateThatBreaksWithSeveralInstances() {
        assertThat(report.findings().stream().filter(f -> f.className().startsWith(P)))
                .extracting(
                        Finding::category, f -> f.className().substring(P.length()), Finding::member, Finding::severity)
                .containsExactlyInAnyOrder(
                        tuple(Category.IN_PROCESS_SCHEDULING, "Heartbeat", "start", Severity.HIGH),
                        tuple(Category.IN_PROCESS_SCHEDULING, "Ticker", "start", Severity.LOW),
                        tuple(Category.IN_PROCESS_SCHEDULING, "Ticker", "startTimer", Severity.LOW),
                        tuple(Category.SINGLETON_STATE, "Registry", "shared", Severity.LOW),
                        tuple(Category.SINGLETON_STATE, "Registry", "lengths", Severity.LOW),
                        tuple(Category.LOCAL_LIMITER, "Registry", "permits", Severity.HIGH),
                        tuple(Category.LOCAL_LIMITER, "Registry", "record", Severity.HIGH),
                        tuple(Category.SINGLE_USE_STATE, "NonceBook", "nonces", Severity.HIGH),
                        tuple(Category.SINGLE_USE_STATE, "Registry", "seenIds", Severity.HIGH),
                        tuple(Category.SINGLE_USE_STATE, "Registry", "usedTokens", Severity.HIGH),
                        tuple(Category.SINGLE_USE_STATE, "Statics", "SEEN", Severity.HIGH),
                        tuple(Category.SINGLETON_STATE, "Registry", "names", Severity.MEDIUM),
                        tuple(Category.SINGLETON_STATE, "Registry", "requests", Severity.MEDIUM),
                        tuple(Category.SINGLETON_STATE, "Statics", "COUNTS", Severity.MEDIUM),
                        tuple(Category.LOCAL_FILE_STATE, "Registry", "export", Severity.MEDIUM),
                        tuple(Category.LOCAL_FILE_STATE, "Registry", "exportConfigured", Severity.LOW),
                        tuple(Category.LOCAL_LIMITER, "LoginThrottle", "globalLimit", Severity.HIGH),
                        tuple(Category.LOCAL_LIMITER, "LoginThrottle", "attemptsByIp", Severity.HIGH),
                        tuple(Category.LOCAL_LIMITER, "LoginThrottle", "inFlightExports", Severity.HIGH),
                        tuple(Category.SINGLETON_STATE, "PriceCache", "prices", Severity.MEDIUM),
                        tuple(Category.SINGLE_USE_STATE, "PriceCache", "usedNonces", Severity.HIGH),
                        tuple(Category.IN_PROCESS_SCHEDULING, "Startup", "startPoller", Severity.HIGH),
                        tuple(Category.SINGLE_USE_STATE, "Web", "login", Severity.MEDIUM),
                        tuple(Category.SINGLE_USE_STATE, "Web", "waiting", Severity.MEDIUM),
                        tuple(Category.SINGLETON_STATE, "CommandTable", "PLUGINS", Severity.MEDIUM),
                        tuple(Category.SINGLETON_STATE, "HandlerRegistry", "routes", Severity.MEDIUM),
                        tuple(Category.SINGLETON_STATE, "HandlerRegistry", "late", Severity.MEDIUM),
                        tuple(Category.SINGLETON_STATE, "StartupWiring$Subscriber", "received", Severity.MEDIUM),
                        tuple(Category.SINGLETON_STATE, "Clustered$EventLog", "events", Severity.MEDIUM),
                        tuple(Category.SINGLETON_STATE, "Memos", "labels", Severity.LOW),
                        tuple(Category.SINGLETON_STATE, "Memos", "quotes", Severity.MEDIUM),
                        tuple(Category.SINGLETON_STATE, "Memos", "byOwner", Severity.MEDIUM));
    }

    @Test
    void immutableAndInitializerOnlyStateIsNotReported() {
        assertThat(in("Statics"))
                .extracting(Finding::member)
                .doesNotContain("NAMES", "LOOKUP", "BY_LENGTH", "TABLE", "items");
        assertThat(in("Level")).isEmpty();
        assertThat(in("Registry"))
                .extracting(Finding::member)
                .doesNotContain("defaults", "built", "scratch", "exportDir", "aliases", "withAlias");
        assertThat(in("Ticker")).extracting(Finding::member).doesNotContain("once");
        assertThat(in("Startup")).extracting(Finding::member).doesNotContain("warm", "table");
    }

    @Test
    void registriesFilledOnlyAtStartUpThroughPublicMethodsAreNotReported() {
        // register() and configure() are public, but called only from <clinit> (registerDefaults() too).
        assertThat(in("CommandTable")).extracting(Finding::member).containsExactly("PLUGINS");
        // add() is called from the constructor, @PostConstruct and another singleton's constructor only.
        assertThat(in("HandlerRegistry")).extracting(Finding::member).containsExactlyInAnyOrder("routes", "late");
        // BaseStore.init is called through the base type from a @PostConstruct, and by the override's super.init().
        assertThat(in("Regions$BaseStore")).isEmpty();
        assertThat(in("HandlerRegistry"))
                .filteredOn(f -> f.member().equals("routes"))
                .extracting(Finding::evidence)
                .singleElement()
                .asString()
                .contains("put in addRoute()");
    }

    @Test
    void aMethodALibraryCanCallIsNeverStartUpOnly() {
        // Subscriber.accept is called only from its own constructor in the scanned code, but it implements Consumer.
        assertThat(in("StartupWiring$Subscriber")).extracting(Finding::member).containsExactly("received");
    }

    @Test
    void distributedStructuresAreNotReported() {
        // Owners.owners is declared IMap; SentNotifications.sent is a ConcurrentMap, but its one construction site
        // passes an IMap.
        assertThat(in("Clustered$Owners")).isEmpty();
        assertThat(in("Clustered$SentNotifications")).isEmpty();
    }

    @Test
    void anInjectedMapThatOneConstructionSiteMakesLocallyIsMedium() {
        // EventLog's map: InMemoryLog passes new ConcurrentHashMap<>() (local), ClusteredLog passes its IMap parameter.
        assertThat(in("Clustered$EventLog")).singleElement().satisfies(f -> {
            assertThat(f.severity()).isEqualTo(Severity.MEDIUM);
            assertThat(f.evidence()).contains("InMemoryLog.<init>() passes a new ConcurrentHashMap (Clustered.java:");
        });
        // With no construction site in the scanned code, an injected map stays LOW.
        assertThat(in("Registry"))
                .filteredOn(f -> f.member().equals("shared"))
                .extracting(Finding::severity)
                .containsExactly(Severity.LOW);
    }

    @Test
    void aMemoIsLowOnlyWhenEachValueComesFromItsKeyAlone() {
        assertThat(in("Memos"))
                .extracting(Finding::member, Finding::severity)
                .containsExactlyInAnyOrder(
                        tuple("labels", Severity.LOW),
                        tuple("quotes", Severity.MEDIUM),
                        tuple("byOwner", Severity.MEDIUM));
        assertThat(in("Memos"))
                .filteredOn(f -> f.member().equals("quotes"))
                .extracting(Finding::evidence)
                .singleElement()
                .asString()
                .contains("computeIfAbsent (with a capturing function) in quote()");
        assertThat(in("Memos"))
                .filteredOn(f -> f.member().equals("byOwner"))
                .extracting(Finding::evidence)
                .singleElement()
                .asString()
                .contains("add on a computeIfAbsent value in own()");
    }

    @Test
    void fieldLinesSayWhereTheyComeFrom() {
        Finding tokens = in("Registry").stream()
                .filter(f -> f.member().equals("usedTokens"))
                .findFirst()
                .orElseThrow();
        assertThat(tokens.sourceFile()).isEqualTo("dev/baton/audit/fixtures/Registry.java");
        assertThat(tokens.line()).isEqualTo(23);
        assertThat(tokens.lineSource()).isEqualTo("first write in <init>");
        assertThat(tokens.evidence()).contains("putIfAbsent in redeem()");
        Finding seen = in("Statics").stream()
                .filter(f -> f.member().equals("SEEN"))
                .findFirst()
                .orElseThrow();
        assertThat(seen.lineSource()).isEqualTo("first write in <clinit>");
        assertThat(seen.line()).isEqualTo(18);
    }

    @Test
    void evidenceNamesViewsMethodReferencesAndHolders() {
        assertThat(in("Registry"))
                .filteredOn(f -> f.member().equals("names"))
                .extracting(Finding::evidence)
                .singleElement()
                .asString()
                .contains("remove in prune()");
        assertThat(in("Registry"))
                .filteredOn(f -> f.member().equals("seenIds"))
                .extracting(Finding::evidence)
                .singleElement()
                .asString()
                .contains("add (method reference) in remember()");
        assertThat(in("NonceBook"))
                .extracting(Finding::evidence)
                .singleElement()
                .asString()
                .contains("created by Holder.book");
    }

    @Test
    void everyFindingCarriesWhyAndARemedyWithAnExample() {
        for (Finding f : report.findings()) {
            assertThat(f.why()).as(f.location()).isNotBlank();
            assertThat(f.remedy()).as(f.location()).isNotBlank();
            assertThat(f.example()).as(f.location()).isNotBlank();
        }
        Finding cap = in("Registry").stream()
                .filter(f -> f.member().equals("permits"))
                .findFirst()
                .orElseThrow();
        assertThat(cap.remedy()).contains("concurrencyCap(");
        Finding tokens = in("Registry").stream()
                .filter(f -> f.member().equals("usedTokens"))
                .findFirst()
                .orElseThrow();
        assertThat(tokens.example()).contains("tokens().consume(");
    }

    @Test
    void classifiesStateByName() {
        assertThat(Rules.singleUse("logoutEpochs", "a/B", true)).isEqualTo(Remedies.REVOCATION);
        assertThat(Rules.singleUse("redeemedGrants", "a/B", true)).isEqualTo(Remedies.GRANT);
        assertThat(Rules.singleUse("processedMessageIds", "a/B", true)).isEqualTo(Remedies.DEDUPE);
        assertThat(Rules.singleUse("entries", "a/ReplayCache", true)).isEqualTo(Remedies.TOKEN);
        assertThat(Rules.singleUse("usedBytes", "a/B", false)).isNull();
        assertThat(Rules.singleUse("failedAttempts", "a/B", false)).isEqualTo(Remedies.RATE_LIMITER);
        assertThat(Rules.singleUse("inFlight", "a/B", false)).isEqualTo(Remedies.CONCURRENCY_CAP);
        assertThat(Rules.singleUse("prices", "a/B", true)).isNull();
        assertThat(Rules.words("jtiSeenURLCache2")).containsExactly("jti", "seen", "url", "cache", "2");
    }
}
