package dev.baton.audit;

import java.util.Map;

/** Why each kind of state breaks with N instances, and the Baton replacement with a short example. */
final class Remedies {
    private Remedies() {}

    record Remedy(String why, String remedy, String example) {}

    static final String STATE = "state";
    static final String CACHE = "cache";
    static final String COUNTER = "counter";
    static final String SCHEDULED = "scheduled";
    static final String JOB_POLLER = "job-poller";
    static final String TIMER = "timer";
    static final String STARTUP_LOOP = "startup-loop";
    static final String QUARTZ_RAM = "quartz-ram";
    static final String RATE_LIMITER = "rate-limiter";
    static final String CONCURRENCY_CAP = "concurrency-cap";
    static final String LOCK = "lock";
    static final String TOKEN = "token";
    static final String GRANT = "grant";
    static final String REVOCATION = "revocation";
    static final String DEDUPE = "dedupe";
    static final String SOCKETS = "sockets";
    static final String HTTP_SESSION = "http-session";
    static final String FILE = "file";

    private static final String LEADERSHIP_EXAMPLE = """
            // one instance at a time runs the loop; it stops by itself once it cannot prove it leads
            baton.leadership("cache-warmer", LeadershipConfig.defaults(), ctx -> {
                while (!ctx.awaitCancellation(Duration.ofSeconds(30))) {
                    ctx.fenced(tx -> warm(tx));       // rejected once another instance leads
                }
            }).start();
            // or housekeeping once per interval across all instances, as a durable job:
            Baton.builder(dataSource).sweep("expire-holds", Duration.ofMinutes(1), ctx -> expireHolds());""";

    private static final Map<String, Remedy> REMEDIES = Map.ofEntries(
            Map.entry(
                    STATE,
                    new Remedy(
                            "Each instance holds its own copy: a write on one instance is invisible to the others, so a read "
                                    + "served by another instance sees a missing or stale entry.",
                            "Keep the state in PostgreSQL, one row per key, and read it there; if one instance should "
                                    + "rebuild it and the others read the result, rebuild under coordination().withLease(...).",
                            """
                    jdbc.update("INSERT INTO app.entry (k, v) VALUES (?, ?) ON CONFLICT (k) DO UPDATE SET v = EXCLUDED.v", k, v);
                    // only one instance rebuilds; the others wait up to 5 s, then read what it stored
                    baton.coordination().withLease("rebuild-entries", Duration.ofMinutes(1), Duration.ofSeconds(5),
                            Duration.ofMillis(200), grant -> rebuild(grant));""")),
            Map.entry(
                    CACHE,
                    new Remedy(
                            "Each instance caches its own copy: an eviction or update on one instance does not reach the "
                                    + "others, which serve the old value until their own entry expires.",
                            "Cache only what may be stale for the entry's lifetime (set a short expiry), and let one instance "
                                    + "refresh shared values under coordination().withLease(...) while the others read the stored result.",
                            """
                    Caffeine.newBuilder().expireAfterWrite(Duration.ofSeconds(30)).build();   // bounded staleness
                    baton.coordination().withLease("refresh-prices", Duration.ofMinutes(1), Duration.ofSeconds(5),
                            Duration.ofMillis(200), grant -> refreshPrices(grant));""")),
            Map.entry(
                    COUNTER,
                    new Remedy(
                            "The count is per instance: with N instances each counts its own share, so totals and quotas "
                                    + "diverge and generated ids collide.",
                            "For ids and totals use a database sequence or a row updated in the same transaction; for a "
                                    + "quota use coordination().rateLimiter(...); for a statistic use a Micrometer meter and "
                                    + "sum it across instances.",
                            """
                    long id = jdbc.queryForObject("SELECT nextval('app.order_seq')", Long.class);
                    RateDecision d = baton.coordination().rateLimiter("exports", 100, Duration.ofHours(1), 10).tryAcquire(accountId);""")),
            Map.entry(
                    SCHEDULED,
                    new Remedy(
                            "Spring runs this method on every instance: with N instances it runs N times per period and the "
                                    + "runs contend on the same rows.",
                            "Keep @Scheduled and add @BatonSingleRunner (one instance per period, writes fenced), or move it to "
                                    + "@BatonSchedule (one durable job per due instant, retried).",
                            """
                    @Scheduled(fixedDelay = 60_000)
                    @BatonSingleRunner("purge-refresh-tokens")
                    public void purge() { ... }
                    // or, durable:
                    @BatonSchedule(name = "purge-refresh-tokens", every = "1m")
                    public void purge(JobContext ctx) { ... }""")),
            Map.entry(
                    JOB_POLLER,
                    new Remedy(
                            "Every instance polls the same pending rows: without a claim, two instances take the same job "
                                    + "and run it twice.",
                            "Make the work durable jobs: enqueue with baton.jobs().enqueue(...) (inside the business "
                                    + "transaction if you like) and handle with @BatonJob; claims use FOR UPDATE SKIP LOCKED and "
                                    + "each attempt is fenced.",
                            """
                    baton.jobs().enqueue(JobRequest.of("report.render", new Render(reportId)).idempotencyKey("render:" + reportId));

                    @BatonJob("report.render")
                    public void render(Render r, JobContext ctx) { ... }""")),
            Map.entry(
                    TIMER,
                    new Remedy(
                            "The timer runs in every instance's JVM: with N instances the task runs N times per period.",
                            "Run the loop under Baton leadership (one instance at a time, self-stopping), or declare it as a "
                                    + "sweep: a durable job once per interval across all instances.",
                            LEADERSHIP_EXAMPLE)),
            Map.entry(
                    STARTUP_LOOP,
                    new Remedy(
                            "A start-up hook runs on every instance, so the background thread or polling loop it starts runs "
                                    + "N times, each unaware of the others.",
                            "Start the loop under Baton leadership (one instance at a time, self-stopping), or turn its work "
                                    + "into durable jobs or a sweep.",
                            LEADERSHIP_EXAMPLE)),
            Map.entry(
                    QUARTZ_RAM,
                    new Remedy(
                            "Quartz's in-memory job store (RAMJobStore, Spring Boot's default) keeps triggers in each JVM: "
                                    + "every instance fires every trigger.",
                            "Declare the triggers as Baton schedules (one job per due instant whatever the number of "
                                    + "instances), or switch Quartz to its clustered JDBC job store.",
                            """
                    Baton.builder(dataSource)
                         .schedule(Schedule.cron("close-day", "0 0 3 * * *").zone("Europe/Berlin").job("day.close", null))
                         .handle("day.close", Object.class, (ignored, ctx) -> closeDay());""")),
            Map.entry(
                    RATE_LIMITER,
                    new Remedy(
                            "Each instance enforces the limit on the traffic it happens to receive: with N instances a client "
                                    + "gets up to N times the intended rate (a login limiter allows N times the guesses).",
                            "Use baton.coordination().rateLimiter(name, limit, window, localLimit): one limit per key across "
                                    + "all instances, with an in-process fallback only while the database is unreachable.",
                            """
                    RateLimiter logins = baton.coordination().rateLimiter("login-ip", 10, Duration.ofMinutes(1), 3);
                    RateDecision d = logins.tryAcquire(clientIp);
                    if (!d.allowed()) throw new TooManyRequests(d.retryAfter());""")),
            Map.entry(
                    CONCURRENCY_CAP,
                    new Remedy(
                            "Each instance has its own permits: with N instances up to N times the cap run at once, which is "
                                    + "the load the cap exists to bound.",
                            "Use baton.coordination().concurrencyCap(name, limit, slotTtl, localCeiling): at most limit "
                                    + "holders per key across all instances; a crashed holder's slot expires.",
                            """
                    ConcurrencyCap reports = baton.coordination().concurrencyCap("reports", 2, Duration.ofMinutes(5), 1);
                    try (ConcurrencyCap.Permit p = reports.tryAcquire(accountId).orElseThrow(TooBusy::new)) {
                        render(accountId);
                    }""")),
            Map.entry(
                    LOCK,
                    new Remedy(
                            "A JVM lock excludes only this instance's threads: another instance runs the same section at the "
                                    + "same time and both write the shared rows.",
                            "Use baton.coordination().withClaimLock(keys, lockTimeout, claim -> ...): transaction-scoped "
                                    + "advisory locks that every instance honours, with the writes in the same transaction.",
                            """
                    baton.coordination().withClaimLock(List.of("account:" + id), Duration.ofSeconds(2), claim -> {
                        try (var ps = claim.connection().prepareStatement("UPDATE account SET balance = balance - ? WHERE id = ?")) {
                            ps.setLong(1, amount); ps.setLong(2, id); return ps.executeUpdate();
                        }
                    });""")),
            Map.entry(
                    TOKEN,
                    new Remedy(
                            "The token is checked against this instance's memory only: a single-use token is accepted once "
                                    + "per instance, so a replay that lands on another instance succeeds.",
                            "Use baton.coordination().tokens(): mint stores only a hash, consume succeeds once across all "
                                    + "instances.",
                            """
                    String t = baton.coordination().tokens().mint("password-reset", userId, Duration.ofMinutes(15));
                    Optional<String> subject = baton.coordination().tokens().consume("password-reset", t); // empty the second time, anywhere""")),
            Map.entry(
                    GRANT,
                    new Remedy(
                            "Redeemed grants are remembered by this instance only: a single-use grant is accepted once per "
                                    + "instance, so N instances accept it N times.",
                            "Use replay-protected grants: baton.coordination().grants(name, key, revocations), whose redeem "
                                    + "accepts a grant once cluster-wide and refuses it after its subject was revoked.",
                            """
                    var revocations = baton.coordination().revocations("session", Duration.ofSeconds(5));
                    var grants = baton.coordination().grants("step-up", key, revocations);
                    String grant = grants.issue(userId, Duration.ofMinutes(5));
                    grants.redeem(grant);   // accepted once cluster-wide""")),
            Map.entry(
                    REVOCATION,
                    new Remedy(
                            "A logout or revocation recorded in one instance's memory is invisible to the others: the revoked "
                                    + "session or grant stays valid on every other instance.",
                            "Use revocation epochs: baton.coordination().revocations(name, staleness); revokeAll(subject) on "
                                    + "logout, isCurrent(subject, epoch) on each request.",
                            """
                    var revocations = baton.coordination().revocations("session", Duration.ofSeconds(5));
                    revocations.revokeAll(userId);                              // on logout, seen by every instance
                    if (!revocations.isCurrent(userId, session.epoch())) reject();""")),
            Map.entry(
                    DEDUPE,
                    new Remedy(
                            "A delivery seen by one instance is unknown to the others: a redelivery that lands on another "
                                    + "instance is processed again.",
                            "Use baton.coordination().firstDelivery(source, id, ttl): true for one caller across all "
                                    + "instances while the record lives.",
                            """
                    if (baton.coordination().firstDelivery("stripe", event.id(), Duration.ofDays(3))) {
                        handle(event);
                    }""")),
            Map.entry(
                    SOCKETS,
                    new Remedy(
                            "Sessions and sockets registered here can be reached only from this instance: a message for a "
                                    + "client connected to another instance is dropped.",
                            "Keep the registry local but fan messages out to every instance (PostgreSQL LISTEN/NOTIFY or a "
                                    + "broker relay), so the instance that holds the socket delivers.",
                            """
                    jdbc.queryForObject("SELECT pg_notify('user_events', ?)", Object.class, json);   // every instance LISTENs
                    // on each instance: deliver to the sockets it holds for that user""")),
            Map.entry(
                    HTTP_SESSION,
                    new Remedy(
                            "Attributes stored in the servlet container's in-memory session exist on one instance only: a "
                                    + "request routed to another instance has no session, or a stale one, unless routing is sticky.",
                            "Use a shared session store, such as Spring Session JDBC on the same PostgreSQL, or keep the state "
                                    + "in your own table.",
                            """
                    <dependency><groupId>org.springframework.session</groupId><artifactId>spring-session-jdbc</artifactId></dependency>
                    spring.session.jdbc.initialize-schema=always""")),
            Map.entry(
                    FILE,
                    new Remedy(
                            "The file lives on one instance's disk: the other instances read an older copy or none, and two "
                                    + "instances writing it overwrite each other.",
                            "Store the content in PostgreSQL (or an object store); if one instance must produce it, produce it "
                                    + "under a lease with coordination().withLease(...).",
                            """
                    jdbc.update("INSERT INTO app.export (name, body) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET body = EXCLUDED.body",
                            name, bytes);""")));

    static Remedy of(String kind) {
        Remedy r = REMEDIES.get(kind);
        if (r == null) {
            throw new IllegalArgumentException("no remedy for kind '" + kind + "'");
        }
        return r;
    }
}
