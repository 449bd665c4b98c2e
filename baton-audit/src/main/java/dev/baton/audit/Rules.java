package dev.baton.audit;

import dev.baton.audit.Facts.Call;
import dev.baton.audit.Facts.ClassFacts;
import dev.baton.audit.Facts.FieldFacts;
import dev.baton.audit.Facts.FileWrite;
import dev.baton.audit.Facts.Header;
import dev.baton.audit.Facts.MethodFacts;
import dev.baton.audit.Facts.Use;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.Type;
import org.objectweb.asm.signature.SignatureReader;
import org.objectweb.asm.signature.SignatureVisitor;

/**
 * The audit's rules, applied to the collected facts: which classes are singletons, which of their
 * fields (and which static fields) hold mutable state, and which methods schedule work, start loops,
 * hold JVM locks around shared writes, or keep session and file state. See docs/audit.md for each
 * rule and its evidence.
 */
final class Rules {
    static final Set<String> STEREOTYPES = Set.of(
            "org/springframework/stereotype/Component",
            "org/springframework/stereotype/Service",
            "org/springframework/stereotype/Repository",
            "org/springframework/stereotype/Controller",
            "org/springframework/web/bind/annotation/RestController",
            "org/springframework/web/bind/annotation/ControllerAdvice",
            "org/springframework/web/bind/annotation/RestControllerAdvice",
            "org/springframework/context/annotation/Configuration",
            "org/springframework/boot/autoconfigure/AutoConfiguration",
            "org/springframework/boot/SpringBootConfiguration",
            "org/springframework/boot/autoconfigure/SpringBootApplication",
            "jakarta/enterprise/context/ApplicationScoped",
            "javax/enterprise/context/ApplicationScoped",
            "jakarta/inject/Singleton",
            "javax/inject/Singleton",
            "jakarta/ejb/Singleton",
            "javax/ejb/Singleton",
            "io/micronaut/context/annotation/Context");
    static final String BEAN = "org/springframework/context/annotation/Bean";
    static final Set<String> SCHEDULED = Set.of(
            "org/springframework/scheduling/annotation/Scheduled",
            "org/springframework/scheduling/annotation/Schedules",
            "io/quarkus/scheduler/Scheduled",
            "io/micronaut/scheduling/annotation/Scheduled",
            "jakarta/ejb/Schedule",
            "javax/ejb/Schedule");
    static final Set<String> SINGLE_RUNNER = Set.of(
            "dev/baton/spring/BatonSingleRunner",
            "net/javacrumbs/shedlock/spring/annotation/SchedulerLock",
            "net/javacrumbs/shedlock/core/SchedulerLock");
    static final Set<String> COLLECTIONS = Set.of(
            "java/util/Map",
            "java/util/Collection",
            "java/util/Dictionary",
            "java/util/BitSet",
            "com/google/common/collect/Multimap",
            "com/google/common/collect/Table",
            "com/google/common/collect/Multiset");
    static final Set<String> COUNTERS = Set.of(
            "java/util/concurrent/atomic/AtomicLong",
            "java/util/concurrent/atomic/AtomicInteger",
            "java/util/concurrent/atomic/LongAdder",
            "java/util/concurrent/atomic/DoubleAdder",
            "java/util/concurrent/atomic/LongAccumulator",
            "java/util/concurrent/atomic/DoubleAccumulator",
            "java/util/concurrent/atomic/AtomicLongArray",
            "java/util/concurrent/atomic/AtomicIntegerArray");
    static final Set<String> CACHES = Set.of(
            "com/github/benmanes/caffeine/cache/Cache",
            "com/github/benmanes/caffeine/cache/LoadingCache",
            "com/github/benmanes/caffeine/cache/AsyncCache",
            "com/github/benmanes/caffeine/cache/AsyncLoadingCache",
            "com/google/common/cache/Cache",
            "com/google/common/cache/LoadingCache",
            "org/springframework/cache/concurrent/ConcurrentMapCache",
            "org/springframework/cache/concurrent/ConcurrentMapCacheManager",
            "org/springframework/cache/caffeine/CaffeineCacheManager",
            "org/springframework/cache/caffeine/CaffeineCache");
    static final Set<String> RATE_LIMITERS = Set.of(
            "com/google/common/util/concurrent/RateLimiter",
            "io/github/bucket4j/Bucket",
            "io/github/bucket4j/local/LocalBucket",
            "io/github/resilience4j/ratelimiter/RateLimiter",
            "io/github/resilience4j/ratelimiter/RateLimiterRegistry");
    static final Set<String> CAPS = Set.of(
            "java/util/concurrent/Semaphore",
            "io/github/resilience4j/bulkhead/Bulkhead",
            "io/github/resilience4j/bulkhead/ThreadPoolBulkhead",
            "io/github/resilience4j/bulkhead/BulkheadRegistry",
            "io/github/resilience4j/bulkhead/ThreadPoolBulkheadRegistry");
    /** Bucket4j's distributed buckets already share state. */
    static final Set<String> DISTRIBUTED =
            Set.of("io/github/bucket4j/distributed/BucketProxy", "io/github/bucket4j/distributed/proxy/ProxyManager");
    /**
     * Collections whose contents live in a cluster, not in this process: Hazelcast (3.x and 4+),
     * Redisson, Spring Data Redis collections, Apache Ignite. A field of such a type, or a collection
     * field every construction site fills with one, is not reported.
     */
    static final Set<String> DISTRIBUTED_STRUCTURES = Set.of(
            "com/hazelcast/map/IMap",
            "com/hazelcast/core/IMap",
            "com/hazelcast/multimap/MultiMap",
            "com/hazelcast/core/MultiMap",
            "com/hazelcast/replicatedmap/ReplicatedMap",
            "com/hazelcast/core/ReplicatedMap",
            "com/hazelcast/collection/IList",
            "com/hazelcast/collection/ISet",
            "com/hazelcast/collection/IQueue",
            "com/hazelcast/core/IList",
            "com/hazelcast/core/ISet",
            "com/hazelcast/core/IQueue",
            "org/redisson/api/RMap",
            "org/redisson/api/RMapCache",
            "org/redisson/api/RSet",
            "org/redisson/api/RSetCache",
            "org/redisson/api/RList",
            "org/redisson/api/RQueue",
            "org/redisson/api/RDeque",
            "org/redisson/api/RSortedSet",
            "org/redisson/api/RScoredSortedSet",
            "org/springframework/data/redis/support/collections/RedisStore",
            "org/springframework/data/redis/support/collections/RedisMap",
            "org/springframework/data/redis/support/collections/RedisCollection",
            "org/apache/ignite/IgniteSet",
            "org/apache/ignite/IgniteQueue");

    static final Set<String> SOCKET_TYPES = Set.of(
            "org/springframework/web/socket/WebSocketSession",
            "org/springframework/web/reactive/socket/WebSocketSession",
            "jakarta/websocket/Session",
            "javax/websocket/Session",
            "org/springframework/web/servlet/mvc/method/annotation/ResponseBodyEmitter",
            "jakarta/servlet/AsyncContext",
            "javax/servlet/AsyncContext");
    static final Set<String> HTTP_SESSIONS =
            Set.of("jakarta/servlet/http/HttpSession", "javax/servlet/http/HttpSession");
    static final Set<String> LOCAL_CACHE_MANAGERS = Set.of(
            "org/springframework/cache/concurrent/ConcurrentMapCacheManager",
            "org/springframework/cache/concurrent/ConcurrentMapCache",
            "org/springframework/cache/caffeine/CaffeineCacheManager");
    static final Set<String> STARTUP_EVENTS = Set.of(
            "org/springframework/boot/context/event/ApplicationReadyEvent",
            "org/springframework/boot/context/event/ApplicationStartedEvent",
            "org/springframework/context/event/ContextRefreshedEvent");
    static final Set<String> POST_CONSTRUCT =
            Set.of("jakarta/annotation/PostConstruct", "javax/annotation/PostConstruct");

    private static final Set<String> REVOCATION_WORDS = Set.of(
            "revoked",
            "revocation",
            "revocations",
            "revoke",
            "epoch",
            "epochs",
            "logout",
            "logouts",
            "logged",
            "blacklist",
            "blacklisted",
            "denylist",
            "blocklist",
            "invalidated");
    private static final Set<String> GRANT_WORDS = Set.of("grant", "grants");
    private static final Set<String> TOKEN_WORDS = Set.of(
            "token",
            "tokens",
            "nonce",
            "nonces",
            "jti",
            "otp",
            "otps",
            "replay",
            "replays",
            "redeemed",
            "consumed",
            "used",
            "onetime");
    private static final Set<String> DEDUPE_WORDS = Set.of(
            "seen",
            "processed",
            "dedupe",
            "dedup",
            "deduplication",
            "delivered",
            "idempotency",
            "idempotent",
            "handled",
            "duplicate",
            "duplicates");
    /** Hand-rolled limiters: a map of attempts per IP, an in-flight counter. */
    private static final Set<String> LIMITER_WORDS = Set.of(
            "limiter",
            "limiters",
            "ratelimit",
            "throttle",
            "throttles",
            "throttling",
            "attempts",
            "quota",
            "quotas",
            "buckets");

    private static final Set<String> CAP_WORDS = Set.of("inflight", "concurrency", "permits", "slots");
    private static final Set<String> SESSION_WORDS =
            Set.of("session", "sessions", "websocket", "websockets", "sockets", "emitters");
    /** Class-name words strong enough on their own to classify an unnamed field. */
    private static final Set<String> STRONG_CLASS_WORDS = Set.of(
            "replay",
            "nonce",
            "nonces",
            "revocation",
            "revocations",
            "revoked",
            "dedupe",
            "dedup",
            "idempotency",
            "limiter",
            "throttle",
            "ratelimit");

    private static final Set<String> POLLER_WORDS =
            Set.of("poll", "polls", "pending", "job", "jobs", "queue", "outbox", "worker", "dispatch");

    private final ClassIndex index;
    private final List<ClassFacts> classes;
    private final Map<String, String> resources;
    private final String sourceRoot;
    final Map<String, String> singletons = new LinkedHashMap<>();
    private final List<Finding> findings = new ArrayList<>();

    Rules(ClassIndex index, List<ClassFacts> classes, Map<String, String> resources, String sourceRoot) {
        this.index = index;
        this.classes = classes;
        this.resources = resources;
        this.sourceRoot = sourceRoot == null || sourceRoot.isEmpty()
                ? ""
                : sourceRoot.endsWith("/") ? sourceRoot : sourceRoot + "/";
    }

    List<Finding> run() {
        findSingletons();
        new StartupCalls().dropStartupMutations();
        for (ClassFacts cf : classes) {
            fields(cf);
            methods(cf);
        }
        quartz();
        return findings;
    }

    // ------------------------------------------------------------------ singletons

    private boolean reported(String name) {
        Header h = index.get(name);
        return h != null && h.facts != null;
    }

    private void findSingletons() {
        Deque<String> todo = new ArrayDeque<>();
        for (ClassFacts cf : classes) {
            Header h = index.get(cf.name);
            if ((cf.access & (Opcodes.ACC_ANNOTATION | Opcodes.ACC_INTERFACE)) != 0) {
                continue;
            }
            String stereotype = index.annotatedWith(h.annotations, STEREOTYPES);
            if (stereotype != null) {
                mark(cf.name, "@" + simple(stereotype), todo);
            } else if ((cf.access & Opcodes.ACC_ENUM) != 0) {
                mark(cf.name, "enum", todo);
            }
            for (MethodFacts mf : cf.methods) {
                if (!mf.annotated(BEAN)) {
                    continue;
                }
                Type ret = Type.getReturnType(mf.desc);
                if (ret.getSort() != Type.OBJECT) {
                    continue;
                }
                String reason = "@Bean " + simple(cf.name) + "." + mf.name + "()";
                if (reported(ret.getInternalName())) {
                    mark(ret.getInternalName(), reason, todo);
                }
                for (String created : mf.news.keySet()) {
                    if (reported(created) && index.isSubtype(created, ret.getInternalName())) {
                        mark(created, reason, todo);
                    }
                }
            }
            for (FieldFacts ff : cf.fields.values()) {
                if ((ff.access & Opcodes.ACC_STATIC) != 0 && (ff.access & Opcodes.ACC_SYNTHETIC) == 0) {
                    for (String t : created(ff)) {
                        if (!t.equals(cf.name)) {
                            mark(t, "created by static " + simple(cf.name) + "." + ff.name, todo);
                        }
                    }
                }
            }
        }
        while (!todo.isEmpty()) {
            String name = todo.poll();
            Header h = index.get(name);
            if (h.superName != null && reported(h.superName)) {
                mark(h.superName, "superclass of " + simple(name), todo);
            }
            for (FieldFacts ff : h.facts.fields.values()) {
                if ((ff.access & (Opcodes.ACC_STATIC | Opcodes.ACC_SYNTHETIC)) == 0) {
                    for (String t : created(ff)) {
                        mark(t, "created by " + simple(name) + "." + ff.name, todo);
                    }
                    // A container injects beans: what a bean's constructor receives is a singleton too.
                    String t = rawType(ff.desc);
                    if (container(name)
                            && injected(ff)
                            && t != null
                            && reported(t)
                            && !isEnum(t)
                            && (index.get(t).access & (Opcodes.ACC_INTERFACE | Opcodes.ACC_ABSTRACT)) == 0) {
                        mark(t, "injected into " + simple(name) + "." + ff.name, todo);
                    }
                }
            }
        }
    }

    /** A singleton managed by a container (annotated, declared by @Bean, or injected), not one found by creation. */
    private boolean container(String name) {
        String reason = singletons.get(name);
        return reason != null && (reason.startsWith("@") || reason.startsWith("injected into"));
    }

    /**
     * The application classes a field's initializer instantiates ({@code this.book = new NonceBook()}):
     * one per holder, so a singleton's own objects are singletons too. Injected objects are not followed
     * (in a container they are beans themselves, found by their own annotations).
     */
    private List<String> created(FieldFacts ff) {
        List<String> out = new ArrayList<>(1);
        for (String a : ff.assigned) {
            if (a.startsWith("new ")) {
                String t = a.substring(4);
                if (reported(t) && !isEnum(t)) {
                    out.add(t);
                }
            }
        }
        return out;
    }

    private void mark(String name, String reason, Deque<String> todo) {
        if (!singletons.containsKey(name)) {
            singletons.put(name, reason);
            todo.add(name);
        }
    }

    private boolean isEnum(String name) {
        Header h = index.get(name);
        return h != null && (h.access & Opcodes.ACC_ENUM) != 0;
    }

    // ------------------------------------------------------------------ start-up-only methods

    /**
     * A per-class call graph over the scanned code, to tell start-up registration from runtime
     * mutation: a method is start-up-only if it has call sites in the scanned code and every one is in
     * a static initializer, in an initializer ({@code <init>}, {@code @PostConstruct},
     * {@code afterPropertiesSet}, their private helpers) of a known singleton, in a {@code @Bean}
     * method, or in another start-up-only method. A method that is referenced ({@code this::add}),
     * annotated (a framework may call it), or that overrides a method of a library or JDK type (the
     * library may call it) is never start-up-only, and neither is a lambda (it may run later).
     * Mutations made only by start-up-only methods are removed from the facts, like those of
     * initializers.
     */
    private final class StartupCalls {
        /** A call site: the calling method, or a reference to the method taken there. */
        private record Site(ClassFacts owner, MethodFacts method, boolean reference) {}

        private final Map<Long, List<Site>> sites = new HashMap<>();
        private final Map<MethodFacts, Boolean> verdicts = new IdentityHashMap<>();
        private final Map<MethodFacts, ClassFacts> ownerOf = new IdentityHashMap<>();
        private final Map<String, ClassFacts> byName = new HashMap<>();
        private final Map<String, List<String>> subtypes = new HashMap<>();
        private final Map<MethodFacts, Set<Long>> keysOf = new IdentityHashMap<>();

        StartupCalls() {
            for (ClassFacts cf : classes) {
                byName.put(cf.name, cf);
                for (MethodFacts mf : cf.methods) {
                    ownerOf.put(mf, cf);
                }
                Header h = index.get(cf.name);
                if (h.superName != null) {
                    subtypes.computeIfAbsent(h.superName, k -> new ArrayList<>())
                            .add(cf.name);
                }
                for (String i : h.interfaces) {
                    subtypes.computeIfAbsent(i, k -> new ArrayList<>()).add(cf.name);
                }
            }
        }

        void dropStartupMutations() {
            // 1. The methods whose mutations might be dropped, then (level by level) their callers.
            Set<MethodFacts> pending = new LinkedHashSet<>();
            for (ClassFacts cf : classes) {
                boolean singleton = singletons.containsKey(cf.name);
                for (FieldFacts ff : cf.fields.values()) {
                    if (singleton || (ff.access & Opcodes.ACC_STATIC) != 0) {
                        for (Use u : ff.mutations) {
                            addCandidate(cf, u, pending);
                        }
                        for (Use u : ff.reassignments) {
                            addCandidate(cf, u, pending);
                        }
                    }
                }
            }
            Set<MethodFacts> expanded = new HashSet<>();
            // Callers of callers, level by level; past the last level a caller's own callers stay
            // unknown, so it is not start-up-only (the conservative answer).
            for (int level = 0; level < MAX_LEVELS && !pending.isEmpty(); level++) {
                Map<Long, List<Site>> wanted = new HashMap<>();
                for (MethodFacts mf : pending) {
                    expanded.add(mf);
                    for (long k : keys(ownerOf.get(mf), mf)) {
                        if (!sites.containsKey(k)) {
                            wanted.put(k, new ArrayList<>(2));
                        }
                    }
                }
                scan(wanted);
                sites.putAll(wanted);
                Set<MethodFacts> next = new LinkedHashSet<>();
                for (MethodFacts mf : pending) {
                    for (Site site : sitesOf(mf)) {
                        if (!site.reference()
                                && !context(site.owner(), site.method())
                                && !expanded.contains(site.method())
                                && plausible(site.owner(), site.method())) {
                            next.add(site.method());
                        }
                    }
                }
                pending = next;
            }
            // 2. Drop the mutations made by start-up-only methods.
            for (ClassFacts cf : classes) {
                for (FieldFacts ff : cf.fields.values()) {
                    ff.mutations.removeIf(u -> startupOnly(cf, u));
                    ff.reassignments.removeIf(u -> startupOnly(cf, u));
                }
            }
        }

        private void addCandidate(ClassFacts cf, Use u, Set<MethodFacts> pending) {
            MethodFacts mf = method(cf, u.methodName(), u.methodDesc());
            if (mf != null && plausible(cf, mf)) {
                pending.add(mf);
            }
        }

        private static final int MAX_LEVELS = 6;

        private boolean startupOnly(ClassFacts cf, Use u) {
            MethodFacts mf = method(cf, u.methodName(), u.methodDesc());
            return mf != null && startupOnly(cf, mf, new HashSet<>());
        }

        private MethodFacts method(ClassFacts cf, String name, String desc) {
            for (MethodFacts mf : cf.methods) {
                if (mf.name.equals(name) && mf.desc.equals(desc)) {
                    return mf;
                }
            }
            return null;
        }

        /** Could be start-up-only at all: not a lambda, not annotated, not callable by a library. */
        private boolean plausible(ClassFacts cf, MethodFacts mf) {
            if (mf.name.startsWith("lambda$") || mf.name.startsWith("<") || mf.initializer) {
                return false;
            }
            for (String a : mf.annotations) {
                if (!a.startsWith("java/lang/")
                        && !a.endsWith("/Nullable")
                        && !a.endsWith("/NonNull")
                        && !a.endsWith("/Nonnull")
                        && !a.endsWith("/NotNull")) {
                    return false;
                }
            }
            return (mf.access & (Opcodes.ACC_STATIC | Opcodes.ACC_PRIVATE)) != 0 || !overridesOutside(cf.name, mf);
        }

        private boolean startupOnly(ClassFacts cf, MethodFacts mf, Set<MethodFacts> visiting) {
            Boolean known = verdicts.get(mf);
            if (known != null) {
                return known;
            }
            if (!plausible(cf, mf) || !visiting.add(mf)) {
                return false; // a cycle: no start-up caller was proven
            }
            Collection<Site> callers = sitesOf(mf);
            boolean result = !callers.isEmpty();
            for (Site site : callers) {
                if (site.reference()
                        || !(context(site.owner(), site.method())
                                || startupOnly(site.owner(), site.method(), visiting))) {
                    result = false;
                    break;
                }
            }
            visiting.remove(mf);
            verdicts.put(mf, result);
            return result;
        }

        /** Code that runs while the process starts: a static initializer, a singleton's initializers, a @Bean method. */
        private boolean context(ClassFacts cf, MethodFacts mf) {
            if (mf.name.equals("<clinit>") || mf.annotated(BEAN)) {
                return true;
            }
            return mf.initializer && !mf.fluent && !mf.name.startsWith("lambda$") && singletons.containsKey(cf.name);
        }

        private Collection<Site> sitesOf(MethodFacts mf) {
            Set<Site> out = new LinkedHashSet<>();
            for (long k : keys(ownerOf.get(mf), mf)) {
                List<Site> s = sites.get(k);
                if (s != null) {
                    out.addAll(s);
                }
            }
            return out;
        }

        /**
         * The call-site keys that may reach {@code mf}: through its own class, any scanned subtype (a
         * call on a subclass reference names the subclass), and, for an instance method, a dispatched
         * call through any scanned supertype (a call through an interface may land here; a
         * {@code super.m()} call in a subclass may not).
         */
        private Set<Long> keys(ClassFacts cf, MethodFacts mf) {
            Set<Long> known = keysOf.get(mf);
            if (known != null) {
                return known;
            }
            Set<Long> out = new LinkedHashSet<>();
            Set<String> owners = new HashSet<>();
            Deque<String> todo = new ArrayDeque<>();
            todo.add(cf.name);
            while (!todo.isEmpty()) {
                String t = todo.poll();
                if (owners.add(t)) {
                    todo.addAll(subtypes.getOrDefault(t, List.of()));
                    out.add(Facts.key(t, mf.name, mf.desc));
                    out.add(Facts.directKey(t, mf.name, mf.desc));
                }
            }
            if ((mf.access & Opcodes.ACC_STATIC) == 0) {
                todo.addAll(index.supertypes(cf.name));
                while (!todo.isEmpty()) {
                    String t = todo.poll();
                    if (byName.containsKey(t) && owners.add(t)) {
                        todo.addAll(index.supertypes(t));
                        out.add(Facts.key(t, mf.name, mf.desc)); // dispatched: may reach this override
                    }
                }
            }
            keysOf.put(mf, out);
            return out;
        }

        /** One pass over every scanned method's calls and references, filling the sites of the wanted keys. */
        private void scan(Map<Long, List<Site>> wanted) {
            if (wanted.isEmpty()) {
                return;
            }
            long[] sorted = new long[wanted.size()];
            int n = 0;
            for (long k : wanted.keySet()) {
                sorted[n++] = k;
            }
            Arrays.sort(sorted);
            for (ClassFacts cf : classes) {
                for (MethodFacts mf : cf.methods) {
                    for (long k : mf.callKeys) {
                        if (Arrays.binarySearch(sorted, k) >= 0) {
                            wanted.get(k).add(new Site(cf, mf, false));
                        }
                    }
                    for (long k : mf.referenceKeys) {
                        if (Arrays.binarySearch(sorted, k) >= 0) {
                            wanted.get(k).add(new Site(cf, mf, true));
                        }
                    }
                }
            }
        }

        /** True if a type above {@code type} that was not scanned declares the method, or cannot be read. */
        private boolean overridesOutside(String type, MethodFacts mf) {
            Deque<String> todo = new ArrayDeque<>(index.supertypes(type));
            Set<String> seen = new HashSet<>();
            while (!todo.isEmpty()) {
                String t = todo.poll();
                if (!seen.add(t)) {
                    continue;
                }
                Header h = index.get(t);
                if (byName.containsKey(t)) {
                    // scanned: its own call sites are counted
                } else if (h != null && h.methodKeys != null) {
                    if (Arrays.binarySearch(h.methodKeys, Facts.key(mf.name, mf.desc)) >= 0) {
                        return true;
                    }
                } else if (h == null && (t.startsWith("java/") || t.startsWith("javax/"))) {
                    if (jdkDeclares(t, mf.name, mf.desc)) {
                        return true;
                    }
                } else {
                    return true; // not read: it may declare the method
                }
                todo.addAll(index.supertypes(t));
            }
            return false;
        }
    }

    private static boolean jdkDeclares(String type, String name, String desc) {
        try {
            Class<?> c = Class.forName(type.replace('/', '.'), false, ClassLoader.getPlatformClassLoader());
            for (java.lang.reflect.Method m : c.getDeclaredMethods()) {
                if (m.getName().equals(name)
                        && Type.getMethodDescriptor(m).equals(desc)
                        && !java.lang.reflect.Modifier.isPrivate(m.getModifiers())
                        && !java.lang.reflect.Modifier.isStatic(m.getModifiers())) {
                    return true;
                }
            }
            return false;
        } catch (ClassNotFoundException | LinkageError e) {
            return true;
        }
    }

    // ------------------------------------------------------------------ fields

    private void fields(ClassFacts cf) {
        String singleton = singletons.get(cf.name);
        for (FieldFacts ff : cf.fields.values()) {
            if ((ff.access & Opcodes.ACC_SYNTHETIC) != 0) {
                continue;
            }
            boolean isStatic = (ff.access & Opcodes.ACC_STATIC) != 0;
            if (!isStatic && singleton == null) {
                continue;
            }
            String holder = isStatic ? "static field" : "field of a singleton (" + singleton + ")";
            field(cf, ff, holder);
        }
    }

    private void field(ClassFacts cf, FieldFacts ff, String holder) {
        String raw = rawType(ff.desc);
        boolean array = ff.desc.startsWith("[");
        List<String> args = typeArguments(ff.signature);
        String what = raw != null ? simple(raw) : ff.desc.startsWith("[") ? "array" : null;
        if (raw == null && !array) {
            return;
        }
        // 1. Limiters and caps, held directly or as values of a map.
        if (raw != null && index.subtypeOf(raw, DISTRIBUTED) == null) {
            String limiter = firstSubtype(raw, args, RATE_LIMITERS);
            String cap = firstSubtype(raw, args, CAPS);
            if (limiter != null || cap != null) {
                boolean direct = index.subtypeOf(raw, limiter != null ? RATE_LIMITERS : CAPS) != null;
                String type = simple(limiter != null ? limiter : cap);
                String kind = direct ? type : what + " of " + type + "s";
                add(
                        cf,
                        ff,
                        Category.LOCAL_LIMITER,
                        Severity.HIGH,
                        kind,
                        holder + " of type " + what + (direct ? "" : " holding " + type + "s") + uses(ff),
                        limiter != null ? Remedies.RATE_LIMITER : Remedies.CONCURRENCY_CAP);
                return;
            }
        }
        // 2. A distributed structure (Hazelcast IMap, Redisson RMap...) is cluster-wide by its type.
        if (raw != null && index.subtypeOf(raw, DISTRIBUTED_STRUCTURES) != null) {
            return;
        }
        boolean mutated = !ff.mutations.isEmpty() || !ff.reassignments.isEmpty();
        // 3. Caches are state by nature (reads fill them).
        if (raw != null && index.subtypeOf(raw, CACHES) != null) {
            String single = singleUse(ff.name, cf.name, true);
            if (single != null) {
                add(
                        cf,
                        ff,
                        categoryOf(single),
                        severityOf(single),
                        what + " (" + label(single) + ")",
                        holder + " of type " + what + ", named like " + label(single) + uses(ff),
                        single);
            } else {
                add(
                        cf,
                        ff,
                        Category.SINGLETON_STATE,
                        Severity.MEDIUM,
                        "cache (" + what + ")",
                        holder + " of type " + what + uses(ff),
                        Remedies.CACHE);
            }
            return;
        }
        if (!mutated) {
            return;
        }
        // 4. Registries of sockets and sessions.
        String socket = raw == null ? null : firstSubtype(null, args, SOCKET_TYPES);
        String httpSession = raw == null ? null : firstSubtype(null, args, HTTP_SESSIONS);
        boolean collection = array || index.subtypeOf(raw, COLLECTIONS) != null;
        if (collection && (socket != null || httpSession != null)) {
            String type = simple(socket != null ? socket : httpSession);
            add(
                    cf,
                    ff,
                    Category.SINGLE_USE_STATE,
                    Severity.MEDIUM,
                    "registry of " + type + "s",
                    holder + " of type " + what + " holding " + type + "s" + uses(ff),
                    socket != null ? Remedies.SOCKETS : Remedies.HTTP_SESSION);
            return;
        }
        // 5. Collections, maps and counters that are changed after construction.
        boolean counter = raw != null && index.subtypeOf(raw, COUNTERS) != null;
        if (!collection && !counter) {
            return;
        }
        // A collection passed in by the constructor: what every construction site in the scanned code passes.
        Passed passed = injected(ff) && collection ? passed(cf.name, ff) : null;
        if (passed != null && passed.distributed() > 0 && passed.local() == null && passed.unknown() == 0) {
            return; // a distributed structure at every construction site
        }
        String single = singleUse(ff.name, cf.name, collection);
        if (single != null) {
            add(
                    cf,
                    ff,
                    categoryOf(single),
                    severityOf(single),
                    (counter ? "counter" : what) + " (" + label(single) + ")",
                    holder + " of type " + what + ", named like " + label(single) + uses(ff),
                    single);
        } else if (counter) {
            add(
                    cf,
                    ff,
                    Category.SINGLETON_STATE,
                    Severity.MEDIUM,
                    "counter (" + what + ")",
                    holder + " of type " + what + uses(ff),
                    Remedies.COUNTER);
        } else if (passed != null && passed.local() != null) {
            add(
                    cf,
                    ff,
                    Category.SINGLETON_STATE,
                    Severity.MEDIUM,
                    "mutable " + what + " (injected, local)",
                    holder + " of type " + what + ", passed in by the constructor: " + passed.local() + uses(ff),
                    Remedies.STATE);
        } else if (injected(ff)) {
            add(
                    cf,
                    ff,
                    Category.SINGLETON_STATE,
                    Severity.LOW,
                    "mutable " + what + " (injected)",
                    holder + " of type " + what + ", passed in by the constructor (its implementation may be shared: "
                            + "exclude it if so"
                            + (passed != null && passed.distributed() > 0
                                    ? "; some construction sites pass a distributed structure"
                                    : "")
                            + ")" + uses(ff),
                    Remedies.STATE);
        } else if (memo(ff)) {
            add(
                    cf,
                    ff,
                    Category.SINGLETON_STATE,
                    Severity.LOW,
                    "lazily filled " + what + " (memo)",
                    holder + " of type " + what + ", only ever filled by computeIfAbsent with a function that captures "
                            + "nothing, so each value is computed from its key alone (a memo of derived values is harmless; "
                            + "a registry is not)" + uses(ff),
                    Remedies.CACHE);
        } else {
            add(
                    cf,
                    ff,
                    Category.SINGLETON_STATE,
                    Severity.MEDIUM,
                    "mutable " + what,
                    holder + " of type " + what + uses(ff),
                    Remedies.STATE);
        }
    }

    /** What the construction sites pass for an injected collection: how many distributed, how many unknown, a local one. */
    private record Passed(int distributed, int unknown, String local) {}

    private Map<String, List<Object[]>> constructionSites; // owner + desc -> {ClassFacts, MethodFacts, Construction}

    private Passed passed(String owner, FieldFacts ff) {
        if (constructionSites == null) {
            constructionSites = new HashMap<>();
            for (ClassFacts cf : classes) {
                for (MethodFacts mf : cf.methods) {
                    for (Facts.Construction c : mf.constructions) {
                        constructionSites
                                .computeIfAbsent(c.owner() + c.desc(), k -> new ArrayList<>())
                                .add(new Object[] {cf, mf, c});
                    }
                }
            }
        }
        int[] counts = new int[2];
        String[] local = new String[1];
        for (Map.Entry<String, Integer> e : ff.fromParam.entrySet()) {
            resolve(owner, e.getKey(), e.getValue(), counts, local, 0);
        }
        if (ff.fromParam.isEmpty()) {
            counts[1]++;
        }
        return new Passed(counts[0], counts[1], local[0]);
    }

    /**
     * Follows one constructor parameter to every call site of that constructor: a new JDK collection is
     * local, a value whose declared type is a distributed structure is distributed, a parameter of a
     * calling constructor ({@code super(map)}) is followed to that constructor's own call sites.
     */
    private void resolve(String owner, String desc, int param, int[] counts, String[] local, int depth) {
        List<Object[]> sites = constructionSites.getOrDefault(owner + desc, List.of());
        if (sites.isEmpty()) {
            counts[1]++;
        }
        for (Object[] site : sites) {
            ClassFacts cf = (ClassFacts) site[0];
            MethodFacts mf = (MethodFacts) site[1];
            Facts.Construction c = (Facts.Construction) site[2];
            Facts.Arg a = param < c.args().length ? c.args()[param] : null;
            if (a != null
                    && a.allocated() != null
                    && index.subtypeOf(a.allocated(), DISTRIBUTED_STRUCTURES) == null
                    && a.allocated().startsWith("java/")) {
                if (local[0] == null) {
                    local[0] = simple(cf.name) + "." + Collector.display(mf.name) + "() passes a new "
                            + simple(a.allocated())
                            + (cf.sourceFile == null
                                    ? ""
                                    : " (" + cf.sourceFile.substring(cf.sourceFile.lastIndexOf('/') + 1) + ":"
                                            + c.line() + ")");
                }
            } else if (a != null
                    && (a.allocated() != null
                            ? index.subtypeOf(a.allocated(), DISTRIBUTED_STRUCTURES) != null
                            : a.type() != null && index.subtypeOf(a.type(), DISTRIBUTED_STRUCTURES) != null)) {
                counts[0]++;
            } else if (a != null && a.param() >= 0 && mf.name.equals("<init>") && depth < 4) {
                resolve(cf.name, mf.desc, a.param(), counts, local, depth + 1);
            } else {
                counts[1]++;
            }
        }
    }

    /** Assigned in the constructor from a parameter rather than created there. */
    private static boolean injected(FieldFacts ff) {
        return "<init>".equals(ff.initMethod) && ff.assigned.isEmpty() && ff.reassignments.isEmpty();
    }

    private static boolean memo(FieldFacts ff) {
        return ff.reassignments.isEmpty()
                && !ff.mutations.isEmpty()
                && ff.mutations.stream().allMatch(u -> u.what().equals("computeIfAbsent"));
    }

    private String firstSubtype(String raw, List<String> args, Set<String> targets) {
        if (raw != null && index.subtypeOf(raw, targets) != null) {
            return index.subtypeOf(raw, targets);
        }
        for (String a : args) {
            String t = index.subtypeOf(a, targets);
            if (t != null) {
                return t;
            }
        }
        return null;
    }

    private static Severity severityOf(String kind) {
        return kind.equals(Remedies.SOCKETS) ? Severity.MEDIUM : Severity.HIGH;
    }

    private static Category categoryOf(String kind) {
        return kind.equals(Remedies.RATE_LIMITER) || kind.equals(Remedies.CONCURRENCY_CAP)
                ? Category.LOCAL_LIMITER
                : Category.SINGLE_USE_STATE;
    }

    private static String label(String kind) {
        return switch (kind) {
            case Remedies.REVOCATION -> "revocation state";
            case Remedies.GRANT -> "single-use grants";
            case Remedies.TOKEN -> "single-use tokens";
            case Remedies.DEDUPE -> "a dedupe set";
            case Remedies.SOCKETS -> "a session registry";
            case Remedies.RATE_LIMITER -> "a hand-rolled rate limiter";
            case Remedies.CONCURRENCY_CAP -> "a hand-rolled concurrency cap";
            default -> kind;
        };
    }

    /** Classifies state by its field name (or, for strong words, its class name); null if nothing matches. */
    static String singleUse(String field, String owner, boolean collection) {
        Set<String> words = words(field);
        String k = classify(words, collection);
        if (k != null) {
            return k;
        }
        Set<String> classWords = words(simple(owner));
        classWords.retainAll(STRONG_CLASS_WORDS);
        return classWords.isEmpty() ? null : classify(classWords, collection);
    }

    private static String classify(Set<String> words, boolean collection) {
        if (intersects(words, REVOCATION_WORDS)) {
            return Remedies.REVOCATION;
        }
        if (intersects(words, LIMITER_WORDS)) {
            return Remedies.RATE_LIMITER;
        }
        if (words.contains("flight") && words.contains("in") || intersects(words, CAP_WORDS)) {
            return Remedies.CONCURRENCY_CAP;
        }
        if (!collection) {
            return null; // a counter named "used" or "seen" is a statistic, not a replay set
        }
        if (intersects(words, GRANT_WORDS)) {
            return Remedies.GRANT;
        }
        if (intersects(words, TOKEN_WORDS)) {
            return Remedies.TOKEN;
        }
        if (intersects(words, DEDUPE_WORDS)) {
            return Remedies.DEDUPE;
        }
        if (intersects(words, SESSION_WORDS)) {
            return Remedies.SOCKETS;
        }
        return null;
    }

    private static boolean intersects(Set<String> a, Set<String> b) {
        for (String s : a) {
            if (b.contains(s)) {
                return true;
            }
        }
        return false;
    }

    private static final Pattern WORD = Pattern.compile("[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\\d+");

    static Set<String> words(String name) {
        Set<String> out = new LinkedHashSet<>();
        Matcher m = WORD.matcher(name);
        while (m.find()) {
            out.add(m.group().toLowerCase(Locale.ROOT));
        }
        return out;
    }

    private static String uses(FieldFacts ff) {
        List<String> parts = new ArrayList<>();
        Set<String> seen = new LinkedHashSet<>();
        for (Use u : ff.mutations) {
            if (seen.add(u.what() + " in " + u.method()) && parts.size() < 3) {
                parts.add(u.what() + " in " + callable(u.method()));
            }
        }
        for (Use u : ff.reassignments) {
            if (seen.add("assigned in " + u.method()) && parts.size() < 3) {
                parts.add("assigned in " + callable(u.method()));
            }
        }
        int more = seen.size() - parts.size();
        return parts.isEmpty() ? "" : "; " + String.join(", ", parts) + (more > 0 ? " and " + more + " more" : "");
    }

    /** {@code save()}, or {@code a lambda in save()} for a method named by {@link Collector#display}. */
    private static String callable(String method) {
        return method.endsWith(" (lambda)")
                ? "a lambda in " + method.substring(0, method.length() - 9) + "()"
                : method + "()";
    }

    private void add(
            ClassFacts cf,
            FieldFacts ff,
            Category category,
            Severity severity,
            String kind,
            String evidence,
            String remedy) {
        int line;
        String lineSource;
        if (ff.initLine > 0) {
            line = ff.initLine;
            lineSource = "first write in " + ff.initMethod;
        } else if (ff.firstUseLine > 0) {
            line = ff.firstUseLine;
            lineSource = "first use";
        } else if (!ff.mutations.isEmpty()) {
            line = ff.mutations.get(0).line();
            lineSource = "first use";
        } else {
            line = 0;
            lineSource = "none (no line numbers)";
        }
        add(cf, ff.name, line, lineSource, category, severity, kind, evidence, remedy);
    }

    private void add(
            ClassFacts cf,
            String member,
            int line,
            String lineSource,
            Category category,
            Severity severity,
            String kind,
            String evidence,
            String remedyKind) {
        Remedies.Remedy r = Remedies.of(remedyKind);
        String source = cf == null || cf.sourceFile == null ? null : sourceRoot + cf.sourceFile;
        findings.add(new Finding(
                category,
                severity,
                cf.name.replace('/', '.'),
                member,
                source,
                line,
                lineSource,
                kind,
                evidence,
                r.why(),
                r.remedy(),
                r.example()));
    }

    // ------------------------------------------------------------------ methods

    private void methods(ClassFacts cf) {
        boolean singleton = singletons.containsKey(cf.name);
        for (MethodFacts mf : cf.methods) {
            if (scheduledAnnotation(cf, mf)) {
                continue;
            }
            Call recurring = recurringCall(mf);
            if (recurring != null) {
                boolean known = singleton || (mf.access & Opcodes.ACC_STATIC) != 0;
                add(
                        cf,
                        Collector.display(mf.name),
                        recurring.line(),
                        "call",
                        Category.IN_PROCESS_SCHEDULING,
                        known ? Severity.HIGH : Severity.LOW,
                        "recurring timer",
                        simple(recurring.owner()) + "."
                                + recurring.name() + " in " + Collector.display(mf.name) + "()"
                                + (known
                                        ? ""
                                        : "; the class is not a known singleton (per-object housekeeping is "
                                                + "harmless; one per process is not)"),
                        Remedies.TIMER);
                continue;
            }
            startupHook(cf, mf);
            boolean isStatic = (mf.access & Opcodes.ACC_STATIC) != 0;
            if (singleton || ((mf.access & Opcodes.ACC_SYNCHRONIZED) != 0 && isStatic)) {
                lockAroundWrite(cf, mf);
            }
            httpSession(cf, mf);
            if (singleton || isStatic) {
                files(cf, mf);
            }
            for (Map.Entry<String, Integer> n : mf.news.entrySet()) {
                if (LOCAL_CACHE_MANAGERS.contains(n.getKey())) {
                    add(
                            cf,
                            Collector.display(mf.name),
                            n.getValue(),
                            "call",
                            Category.SINGLETON_STATE,
                            Severity.MEDIUM,
                            "cache (" + simple(n.getKey()) + ")",
                            "new " + simple(n.getKey()) + " in " + Collector.display(mf.name)
                                    + "(): an in-process cache manager",
                            Remedies.CACHE);
                    break;
                }
            }
        }
    }

    private boolean scheduledAnnotation(ClassFacts cf, MethodFacts mf) {
        String scheduled = null;
        for (String a : mf.annotations) {
            if (SCHEDULED.contains(a)) {
                scheduled = a;
            }
        }
        if (scheduled == null) {
            return false;
        }
        for (String a : mf.annotations) {
            if (SINGLE_RUNNER.contains(a)) {
                return true; // protected: one runner per period
            }
        }
        Set<String> words = words(mf.name);
        boolean poller = intersects(words, POLLER_WORDS);
        add(
                cf,
                mf.name,
                mf.firstLine,
                "method",
                Category.IN_PROCESS_SCHEDULING,
                Severity.HIGH,
                poller ? "@" + simple(scheduled) + " job poller" : "@" + simple(scheduled) + " method",
                "@" + simple(scheduled) + " without @BatonSingleRunner" + (poller ? "; named like a job poller" : ""),
                poller ? Remedies.JOB_POLLER : Remedies.SCHEDULED);
        return true;
    }

    private Call recurringCall(MethodFacts mf) {
        for (Call c : mf.calls) {
            String n = c.name();
            String o = c.owner();
            if ((n.equals("scheduleAtFixedRate") || n.equals("scheduleWithFixedDelay"))
                    && (index.isSubtype(o, "java/util/concurrent/ScheduledExecutorService")
                            || index.isSubtype(o, "org/springframework/scheduling/TaskScheduler")
                            || index.isSubtype(o, "java/util/Timer"))) {
                return c;
            }
            if (n.equals("schedule")
                    && index.isSubtype(o, "java/util/Timer")
                    && Type.getArgumentTypes(c.desc()).length == 3) {
                return c;
            }
            if (n.equals("schedule")
                    && index.isSubtype(o, "org/springframework/scheduling/TaskScheduler")
                    && c.desc().contains("Lorg/springframework/scheduling/Trigger;")) {
                return c;
            }
            if (n.startsWith("add")
                    && n.endsWith("Task")
                    && o.equals("org/springframework/scheduling/config/ScheduledTaskRegistrar")) {
                return c;
            }
            // Flux.interval is cold: a template stored in a field (an SSE heartbeat) runs per subscriber.
            if (n.equals("interval") && o.equals("reactor/core/publisher/Flux") && subscribes(mf)) {
                return c;
            }
        }
        return null;
    }

    private void startupHook(ClassFacts cf, MethodFacts mf) {
        String hook = null;
        if (mf.name.equals("run")
                && (index.isSubtype(cf.name, "org/springframework/boot/ApplicationRunner")
                        || index.isSubtype(cf.name, "org/springframework/boot/CommandLineRunner"))) {
            hook = "ApplicationRunner.run";
        } else if (mf.name.equals("start")
                && mf.desc.equals("()V")
                && index.isSubtype(cf.name, "org/springframework/context/Lifecycle")) {
            hook = "Lifecycle.start";
        } else if (mf.annotations.stream().anyMatch(POST_CONSTRUCT::contains)) {
            hook = "@PostConstruct";
        } else if (mf.name.equals("afterPropertiesSet")
                && index.isSubtype(cf.name, "org/springframework/beans/factory/InitializingBean")) {
            hook = "InitializingBean.afterPropertiesSet";
        } else if ((mf.annotated("org/springframework/context/event/EventListener")
                        || mf.name.equals("onApplicationEvent"))
                && mf.parameterTypes.stream().anyMatch(STARTUP_EVENTS::contains)) {
            hook = "start-up event listener";
        }
        boolean async = mf.annotated("org/springframework/scheduling/annotation/Async");
        if (hook == null && !async) {
            return;
        }
        String evidence = null;
        List<MethodFacts> bodies = withCallees(cf, mf);
        if (hook != null) {
            for (MethodFacts b : bodies) {
                Call start = threadStart(b);
                if (start != null) {
                    evidence = simple(start.owner()) + "." + start.name()
                            + (b == mf ? "" : " in " + Collector.display(b.name) + "()");
                    break;
                }
            }
        }
        if (evidence == null) {
            for (MethodFacts b : bodies) {
                Call wait = b.loop ? waitCall(b) : null;
                if (wait != null) {
                    evidence = "a loop calling " + simple(wait.owner()) + "." + wait.name()
                            + (b == mf ? "" : " in " + Collector.display(b.name) + "()");
                    break;
                }
            }
        }
        if (evidence == null) {
            return;
        }
        add(
                cf,
                mf.name,
                mf.firstLine,
                "method",
                Category.IN_PROCESS_SCHEDULING,
                Severity.HIGH,
                async ? "@Async loop" : "background loop started by " + hook,
                (async ? "@Async method" : hook) + " runs " + evidence,
                Remedies.STARTUP_LOOP);
    }

    /** The method and the methods of the same class it calls directly. */
    private static List<MethodFacts> withCallees(ClassFacts cf, MethodFacts mf) {
        List<MethodFacts> out = new ArrayList<>();
        out.add(mf);
        for (Call c : mf.calls) {
            if (c.owner().equals(cf.name)) {
                for (MethodFacts other : cf.methods) {
                    if (other != mf
                            && other.name.equals(c.name())
                            && other.desc.equals(c.desc())
                            && !out.contains(other)) {
                        out.add(other);
                    }
                }
            }
        }
        return out;
    }

    private static boolean subscribes(MethodFacts mf) {
        for (Call c : mf.calls) {
            if (c.name().startsWith("subscribe") && c.owner().startsWith("reactor/core/publisher/")) {
                return true;
            }
        }
        return false;
    }

    private Call threadStart(MethodFacts mf) {
        for (Call c : mf.calls) {
            String n = c.name();
            String o = c.owner();
            if ((n.equals("start") && index.isSubtype(o, "java/lang/Thread"))
                    || n.equals("startVirtualThread")
                    || ((n.equals("execute") || n.equals("submit"))
                            && (index.isSubtype(o, "java/util/concurrent/Executor")
                                    || index.isSubtype(o, "org/springframework/core/task/TaskExecutor")))
                    || ((n.equals("runAsync") || n.equals("supplyAsync"))
                            && o.equals("java/util/concurrent/CompletableFuture"))) {
                return c;
            }
        }
        return null;
    }

    private Call waitCall(MethodFacts mf) {
        for (Call c : mf.calls) {
            String n = c.name();
            String o = c.owner();
            if ((n.equals("sleep") && (o.equals("java/lang/Thread") || o.equals("java/util/concurrent/TimeUnit")))
                    || (n.equals("wait") && o.equals("java/lang/Object"))
                    || ((n.equals("take") || n.equals("poll"))
                            && index.isSubtype(o, "java/util/concurrent/BlockingQueue"))
                    || ((n.equals("parkNanos") || n.equals("park"))
                            && o.equals("java/util/concurrent/locks/LockSupport"))) {
                return c;
            }
        }
        return null;
    }

    private void lockAroundWrite(ClassFacts cf, MethodFacts mf) {
        String lock = null;
        int line = 0;
        if ((mf.access & Opcodes.ACC_SYNCHRONIZED) != 0) {
            lock = "synchronized method";
            line = mf.firstLine;
        } else if (mf.monitorLine > 0) {
            lock = "synchronized block";
            line = mf.monitorLine;
        } else {
            for (Call c : mf.calls) {
                if ((c.name().equals("lock")
                                || c.name().equals("tryLock")
                                || c.name().equals("lockInterruptibly"))
                        && index.isSubtype(c.owner(), "java/util/concurrent/locks/Lock")) {
                    lock = simple(c.owner()) + "." + c.name();
                    line = c.line();
                    break;
                }
            }
        }
        if (lock == null) {
            return;
        }
        for (MethodFacts b : withCallees(cf, mf)) {
            Call write = sharedWrite(b);
            if (write != null) {
                add(
                        cf,
                        mf.name,
                        line,
                        "method",
                        Category.LOCAL_LIMITER,
                        Severity.HIGH,
                        "JVM lock around a shared write",
                        lock + " held across " + simple(write.owner()) + "." + write.name()
                                + (b == mf ? "" : " in " + Collector.display(b.name) + "()"),
                        Remedies.LOCK);
                return;
            }
        }
    }

    private Call sharedWrite(MethodFacts mf) {
        for (Call c : mf.calls) {
            String n = c.name();
            String o = c.owner();
            if ((n.equals("executeUpdate")
                            || n.equals("executeBatch")
                            || n.equals("executeLargeUpdate")
                            || n.equals("executeLargeBatch"))
                    && index.isSubtype(o, "java/sql/Statement")) {
                return c;
            }
            if ((n.equals("update") || n.equals("batchUpdate"))
                    && (index.isSubtype(o, "org/springframework/jdbc/core/JdbcOperations")
                            || index.isSubtype(
                                    o, "org/springframework/jdbc/core/namedparam/NamedParameterJdbcOperations")
                            || o.equals("org/springframework/jdbc/core/simple/JdbcClient$StatementSpec"))) {
                return c;
            }
            if ((n.equals("persist") || n.equals("merge") || n.equals("remove") || n.equals("flush"))
                    && (index.isSubtype(o, "jakarta/persistence/EntityManager")
                            || index.isSubtype(o, "javax/persistence/EntityManager"))) {
                return c;
            }
            if ((n.startsWith("save")
                            || n.startsWith("delete")
                            || n.equals("persist")
                            || n.equals("merge")
                            || n.equals("update"))
                    && (index.isSubtype(o, "org/springframework/data/repository/Repository")
                            || index.isSubtype(o, "org/hibernate/Session"))) {
                return c;
            }
        }
        return null;
    }

    private void httpSession(ClassFacts cf, MethodFacts mf) {
        for (Call c : mf.calls) {
            if (c.name().equals("setAttribute")
                    && HTTP_SESSIONS.contains(c.owner())
                    && !index.hasPackage("org/springframework/session/")) {
                add(
                        cf,
                        Collector.display(mf.name),
                        c.line(),
                        "call",
                        Category.SINGLE_USE_STATE,
                        Severity.MEDIUM,
                        "HttpSession attribute",
                        "HttpSession.setAttribute in " + Collector.display(mf.name)
                                + "(); no Spring Session classes were found among the classes read",
                        Remedies.HTTP_SESSION);
                return;
            }
        }
    }

    private void files(ClassFacts cf, MethodFacts mf) {
        FileWrite best = null;
        for (FileWrite w : mf.fileWrites) {
            if (w.pathKind().equals("constant")) {
                best = w;
                break;
            }
            if (w.pathKind().equals("configured") && best == null) {
                best = w;
            }
        }
        if (best == null) {
            return;
        }
        boolean constant = best.pathKind().equals("constant");
        add(
                cf,
                Collector.display(mf.name),
                best.line(),
                "call",
                Category.LOCAL_FILE_STATE,
                constant ? Severity.MEDIUM : Severity.LOW,
                constant ? "file at a fixed path" : "file at a configured path",
                best.api() + " in " + Collector.display(mf.name) + "() writes a path built from "
                        + (constant ? "constants" : "a field (configuration)") + ", not a temporary file",
                Remedies.FILE);
    }

    // ------------------------------------------------------------------ Quartz

    private static final Pattern RAM_STORE_PROPERTY =
            Pattern.compile("(?m)^\\s*(org\\.quartz\\.jobStore\\.class\\s*[=:]\\s*org\\.quartz\\.simpl\\.RAMJobStore"
                    + "|spring\\.quartz\\.job-store-type\\s*[=:]\\s*memory|job-store-type\\s*:\\s*memory)");
    private static final Pattern JDBC_STORE_PROPERTY = Pattern.compile(
            "job-store-type\\s*[=:]\\s*jdbc|org\\.quartz\\.jobStore\\.class\\s*[=:]\\s*\\S*(JobStoreTX|JobStoreCMT|LocalDataSourceJobStore)");

    private void quartz() {
        boolean ram = false;
        boolean jdbc = false;
        for (Map.Entry<String, String> r : resources.entrySet()) {
            Matcher m = RAM_STORE_PROPERTY.matcher(r.getValue());
            if (m.find()) {
                ram = true;
                int line = 1
                        + (int) r.getValue()
                                .substring(0, m.start())
                                .chars()
                                .filter(ch -> ch == '\n')
                                .count();
                String text = m.group(1).trim();
                String key = text.substring(0, text.indexOf(text.contains("=") ? '=' : ':'))
                        .trim();
                Remedies.Remedy rem = Remedies.of(Remedies.QUARTZ_RAM);
                findings.add(new Finding(
                        Category.IN_PROCESS_SCHEDULING,
                        Severity.HIGH,
                        r.getKey(),
                        key,
                        r.getKey(),
                        line,
                        "configuration",
                        "Quartz in-memory job store",
                        "configuration sets " + text,
                        rem.why(),
                        rem.remedy(),
                        rem.example()));
            }
            if (JDBC_STORE_PROPERTY.matcher(r.getValue()).find()) {
                jdbc = true;
            }
        }
        ClassFacts firstJob = null;
        for (ClassFacts cf : classes) {
            if (cf.ramJobStoreLine > 0) {
                ram = true;
                add(
                        cf,
                        "",
                        cf.ramJobStoreLine,
                        "call",
                        Category.IN_PROCESS_SCHEDULING,
                        Severity.HIGH,
                        "Quartz in-memory job store",
                        "references org.quartz.simpl.RAMJobStore",
                        Remedies.QUARTZ_RAM);
            }
            if (firstJob == null
                    && (cf.access & (Opcodes.ACC_ABSTRACT | Opcodes.ACC_INTERFACE)) == 0
                    && index.isSubtype(cf.name, "org/quartz/Job")) {
                firstJob = cf;
            }
        }
        if (!ram && !jdbc && firstJob != null) {
            add(
                    firstJob,
                    "",
                    0,
                    "none (class)",
                    Category.IN_PROCESS_SCHEDULING,
                    Severity.MEDIUM,
                    "Quartz job without a JDBC job store",
                    "a Quartz job; no JDBC job store is configured in the "
                            + "configuration read (Spring Boot's default store is in memory)",
                    Remedies.QUARTZ_RAM);
        }
    }

    // ------------------------------------------------------------------ types

    static String rawType(String desc) {
        Type t = Type.getType(desc);
        return t.getSort() == Type.OBJECT ? t.getInternalName() : null;
    }

    /** Every class type named in a field's generic signature except the raw type itself. */
    static List<String> typeArguments(String signature) {
        if (signature == null) {
            return List.of();
        }
        List<String> out = new ArrayList<>();
        new SignatureReader(signature).acceptType(new SignatureVisitor(Opcodes.ASM9) {
            private boolean first = true;

            @Override
            public void visitClassType(String name) {
                if (first) {
                    first = false;
                } else {
                    out.add(name);
                }
            }
        });
        return out;
    }

    static String simple(String internal) {
        String s = internal.substring(internal.lastIndexOf('/') + 1);
        return s.substring(s.lastIndexOf('$') + 1);
    }
}
