package dev.baton;

import dev.baton.internal.coord.CoordinationStore;
import dev.baton.internal.db.BoundedCalls;
import dev.baton.internal.db.Db;
import dev.baton.internal.db.Identifiers;
import dev.baton.internal.db.Jdbc;
import dev.baton.internal.maintenance.Maintenance;
import dev.baton.internal.service.Hooks;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;
import javax.sql.DataSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Shared, database-backed replacements for the per-instance state that breaks when a service runs
 * as several instances: dedupe sets, single-use tokens, mutexes, "only one refreshes" leases,
 * concurrency caps and rate limiters. Everything is transaction-scoped or a row with an expiry on
 * the database clock, so it works through PgBouncer in transaction-pooling mode. Thread-safe.
 */
public final class Coordination {
    private static final Logger log = LoggerFactory.getLogger(Coordination.class);
    /** SQLSTATE lock_not_available: a claim lock's lock_timeout passed. */
    private static final String LOCK_NOT_AVAILABLE = "55P03";
    /** SQLSTATE query_canceled: a statement timeout passed. */
    private static final String QUERY_CANCELED = "57014";
    /** Delivery dedupe answers within this bound or applies its timeout policy. */
    public static final Duration DEFAULT_DEDUPE_TIMEOUT = Duration.ofSeconds(1);
    /**
     * A concurrency cap or rate limiter decides within this bound, waiting for a pool connection
     * included; past it, the local fallback decides (as when the database is unreachable).
     */
    public static final Duration DEFAULT_DECISION_TIMEOUT = Duration.ofSeconds(1);
    /**
     * Decisions waiting on the database at once, at most; beyond that a decision does not queue behind a
     * stalled database but falls back at once (a full pool of stuck threads means the database is not
     * answering).
     */
    static final int MAX_DECISIONS_IN_FLIGHT = 64;

    private final DataSource dataSource;
    private final Db db;
    private final CoordinationStore store;
    private final Leases leases;
    private final String nodeId;
    private final LongSupplier ticker;
    private final SecureRandom random = new SecureRandom();
    private final AtomicLong fallbacks = new AtomicLong();
    private volatile BatonMetrics metrics = BatonMetrics.NONE;
    private volatile Hooks hooks = Hooks.NONE;
    private final Tokens tokens = new Tokens();
    /** Runs database decisions so that the caller can stop waiting at its bound (see {@link #decide}). */
    private final ThreadPoolExecutor decisions =
            new ThreadPoolExecutor(0, MAX_DECISIONS_IN_FLIGHT, 30, TimeUnit.SECONDS, new SynchronousQueue<>(), r -> {
                Thread t = new Thread(r, "baton-coordination-call");
                t.setDaemon(true);
                return t;
            });

    Coordination(DataSource dataSource, String schema, Leases leases, String nodeId, LongSupplier ticker) {
        this.dataSource = dataSource;
        this.db = Db.of(dataSource);
        this.store = new CoordinationStore(schema);
        this.leases = leases;
        this.nodeId = nodeId;
        this.ticker = ticker;
    }

    // ---------------------------------------------------------------- inbound delivery dedupe

    /** What {@link #firstDelivery} answers when the database does not answer in time. */
    public enum OnTimeout {
        /**
         * Treat the delivery as first (default): it may be processed twice, which at-least-once
         * handlers tolerate, but it is never dropped.
         */
        ACCEPT,
        /** Treat it as a duplicate: never processed twice, but dropped unless the sender retries. */
        REJECT,
        /** Throw {@link BatonException}: let the caller answer the sender with a retryable error. */
        THROW
    }

    /**
     * True for one caller, across all instances, per {@code (source, deliveryId)} while the record lives
     * ({@code ttl}); false for every duplicate. Answers within {@link #DEFAULT_DEDUPE_TIMEOUT} or applies
     * {@link OnTimeout#ACCEPT} (then a delivery may be answered "first" more than once).
     */
    public boolean firstDelivery(String source, String deliveryId, Duration ttl) {
        return firstDelivery(source, deliveryId, ttl, DEFAULT_DEDUPE_TIMEOUT, OnTimeout.ACCEPT);
    }

    /**
     * {@link #firstDelivery(String, String, Duration)} with an explicit bound and timeout policy. With
     * {@link OnTimeout#REJECT} or {@link OnTimeout#THROW} the record is committed only while the caller
     * still waits for it; a commit that races the end of the wait by a few milliseconds can still land,
     * and a redelivery is then called a duplicate.
     */
    public boolean firstDelivery(
            String source, String deliveryId, Duration ttl, Duration timeout, OnTimeout onTimeout) {
        Identifiers.name("source", source);
        if (deliveryId == null || deliveryId.isEmpty() || deliveryId.length() > 500) {
            throw new IllegalArgumentException("deliveryId must be 1 to 500 characters, but was "
                    + (deliveryId == null ? "null" : deliveryId.length() + " characters"));
        }
        requireTtl("ttl", ttl);
        Checks.requirePositive("timeout", timeout, false);
        Objects.requireNonNull(onTimeout, "onTimeout");
        // The statement gives up well inside the caller's wait (which includes the wait for a connection).
        long bound = BoundedCalls.serverMillis(timeout.toNanos());
        String what = "dedupe of delivery '" + deliveryId + "'";
        AtomicBoolean abandoned = new AtomicBoolean();
        Db.Work<Boolean> record = c -> {
            boolean first = store.firstDelivery(c, source, deliveryId, ttl, nodeId, bound);
            if (abandoned.get()) {
                throw new SQLException("the caller stopped waiting for this dedupe", QUERY_CANCELED);
            }
            return first;
        };
        // ACCEPT: a record committed after the caller gave up is harmless (it processed the delivery as first).
        // REJECT and THROW: the record is committed only if the caller is still waiting for it, or a
        // redelivery would be called a duplicate of one that was never processed.
        Decision<Boolean> d = onTimeout == OnTimeout.ACCEPT
                ? decide(timeout, what, record, null)
                : decideInTransaction(timeout, what, record, abandoned);
        if (d.answered()) {
            return d.value();
        }
        String why = d.failure() == null || QUERY_CANCELED.equals(d.failure().getSQLState())
                ? "did not answer within " + timeout
                : "failed (" + d.failure().getMessage() + ")";
        if (onTimeout == OnTimeout.THROW) {
            throw new BatonException(
                    "dedupe of delivery '" + deliveryId + "' from '" + source + "' " + why, d.failure());
        }
        countFallback("dedupe");
        log.warn(
                "dedupe of delivery '{}' from '{}' {}; treating it as {} ({})",
                deliveryId,
                source,
                why,
                onTimeout == OnTimeout.ACCEPT ? "first (it may be processed twice)" : "a duplicate",
                onTimeout);
        return onTimeout == OnTimeout.ACCEPT;
    }

    /**
     * The outcome of a bounded decision: the database's answer, or no answer (timed out, unreachable,
     * too many decisions already waiting, or the statement was cancelled by its timeout).
     */
    record Decision<T>(boolean answered, T value, SQLException failure) {}

    /**
     * Runs {@code work} on a pool connection and waits at most {@code timeout} for its answer, the wait
     * for a connection included (a pool's own timeout is often 30 s). No answer in time, a connection
     * failure, a statement cancelled by its timeout, or a pool that gives up: not answered, and the
     * caller applies its fallback. Any other database error is thrown. {@code abandoned}, when given, is
     * set once the caller has stopped waiting, so that work still running can roll back instead of
     * committing a decision nobody will use.
     */
    <T> Decision<T> decide(Duration timeout, String what, Db.Work<T> work, AtomicBoolean abandoned) {
        return decideOn(timeout, what, () -> db.call(what, work), abandoned);
    }

    /** {@link #decide} with {@code work} in one transaction (see {@link Db#transaction}). */
    <T> Decision<T> decideInTransaction(Duration timeout, String what, Db.Work<T> work, AtomicBoolean abandoned) {
        return decideOn(timeout, what, () -> db.transaction(what, work), abandoned);
    }

    private <T> Decision<T> decideOn(Duration timeout, String what, Callable<T> call, AtomicBoolean abandoned) {
        Future<T> f;
        try {
            f = decisions.submit(call);
        } catch (RejectedExecutionException e) {
            return new Decision<>(
                    false,
                    null,
                    new SQLException(
                            MAX_DECISIONS_IN_FLIGHT + " decisions are already " + "waiting for the database", "08000"));
        }
        try {
            return new Decision<>(true, f.get(timeout.toNanos(), TimeUnit.NANOSECONDS), null);
        } catch (TimeoutException e) {
            if (abandoned != null) {
                abandoned.set(true);
            }
            f.cancel(true); // a thread still waiting for a pool connection stops waiting
            return new Decision<>(false, null, null);
        } catch (InterruptedException e) {
            if (abandoned != null) {
                abandoned.set(true);
            }
            f.cancel(true);
            Thread.currentThread().interrupt();
            throw new BatonException(what + " was interrupted", e);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof SQLException s && (unreachable(s) || QUERY_CANCELED.equals(s.getSQLState()))) {
                return new Decision<>(false, null, s);
            }
            if (cause instanceof SQLException s) {
                throw new BatonException(what + " failed: " + s.getMessage(), s);
            }
            if (cause instanceof RuntimeException r) {
                throw r;
            }
            throw new BatonException(what + " failed: " + cause, cause);
        }
    }

    /** The database did not answer: a connection failure, or the pool gave up on a connection. */
    static boolean unreachable(SQLException e) {
        return e instanceof java.sql.SQLTransientConnectionException || Jdbc.isConnectionFailure(e);
    }

    // ---------------------------------------------------------------- single-use tokens

    /** Single-use tokens: minted random, stored only as a SHA-256 hash, consumed once. */
    public Tokens tokens() {
        return tokens;
    }

    /** See {@link Coordination#tokens()}. */
    public final class Tokens {
        private Tokens() {}

        /**
         * Mints a random URL-safe token (256 bits) for {@code purpose}, valid for {@code ttl} on the
         * database clock. Only its SHA-256 hash is stored; the token itself is returned once, here.
         *
         * @param subject what the token stands for (a user id, say), returned on consumption; may be null
         */
        public String mint(String purpose, String subject, Duration ttl) {
            Identifiers.name("purpose", purpose);
            requireTtl("ttl", ttl);
            byte[] raw = new byte[32];
            random.nextBytes(raw);
            String token = Base64.getUrlEncoder().withoutPadding().encodeToString(raw);
            db.callUnchecked(
                    "minting a '" + purpose + "' token", c -> store.mintToken(c, sha256(token), purpose, subject, ttl));
            return token;
        }

        /**
         * Consumes a token: returns its subject (empty string if none) for exactly one caller, across
         * all instances, if the token exists for this purpose and has not expired on the database
         * clock; otherwise empty. The lookup is by hash equality in the database; no secret is ever
         * compared in Java.
         */
        public Optional<String> consume(String purpose, String token) {
            Identifiers.name("purpose", purpose);
            if (token == null || token.isEmpty() || token.length() > 200) {
                return Optional.empty();
            }
            return db.callUnchecked(
                    "consuming a '" + purpose + "' token", c -> store.consumeToken(c, sha256(token), purpose));
        }
    }

    static byte[] sha256(String token) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(token.getBytes(StandardCharsets.UTF_8));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is required by every Java platform", e);
        }
    }

    // ---------------------------------------------------------------- claim locks

    /** What a claim-lock body gets: the transaction, and hooks that run only after it commits. */
    public interface ClaimContext {
        /** The Read Committed transaction holding the locks; do not commit or roll back. */
        Connection connection();

        /** Runs {@code step} after the transaction commits; dropped if it rolls back. */
        void afterCommit(Runnable step);
    }

    /** A claim-lock body. */
    @FunctionalInterface
    public interface ClaimWork<T> {
        /** Runs the work while the claim is held; its result is returned to the caller. */
        T apply(ClaimContext claim) throws Exception;
    }

    /**
     * Runs {@code work} in one Read Committed transaction holding transaction-scoped advisory locks on
     * {@code keys} (taken in sorted order, so two claimers cannot deadlock). If a lock is not granted
     * within {@code lockTimeout}, nothing runs and the result is empty: a contended claim backs off
     * quietly instead of raising. After-commit steps run only once the transaction committed.
     * Transaction-scoped locks need no session state, so this works through PgBouncer.
     *
     * @throws UnknownOutcomeException if the connection failed during COMMIT (after-commit steps do not run)
     */
    public <T> Optional<T> withClaimLock(List<String> keys, Duration lockTimeout, ClaimWork<T> work) {
        Objects.requireNonNull(keys, "keys");
        if (keys.isEmpty() || keys.size() > 100) {
            throw new IllegalArgumentException("keys must hold 1 to 100 lock keys, but held " + keys.size());
        }
        TreeSet<String> sorted = new TreeSet<>();
        for (String k : keys) {
            sorted.add(Identifiers.name("lock key", k));
        }
        Checks.requirePositive("lockTimeout", lockTimeout, false);
        Objects.requireNonNull(work, "work");
        List<Runnable> afterCommit = new ArrayList<>();
        AtomicBoolean granted = new AtomicBoolean();
        T result;
        try {
            result = db.transaction("a claim on " + sorted, "; after-commit steps were not run", c -> {
                // Db.transaction runs it in READ COMMITTED whatever the pool's default isolation: each
                // statement after the locks sees everything committed before them.
                store.lockClaim(c, sorted, lockTimeout);
                granted.set(true);
                return Db.runApplicationWork(
                        "claim on " + sorted,
                        () -> work.apply(new ClaimContext() {
                            @Override
                            public Connection connection() {
                                return c;
                            }

                            @Override
                            public void afterCommit(Runnable step) {
                                afterCommit.add(Objects.requireNonNull(step, "step"));
                            }
                        }));
            });
        } catch (SQLException e) {
            if (LOCK_NOT_AVAILABLE.equals(e.getSQLState()) && !granted.get()) {
                log.debug("claim lock on {} not granted within {}; backing off", sorted, lockTimeout);
                return Optional.empty();
            }
            throw Db.failed("claim on " + sorted, e);
        }
        for (Runnable step : afterCommit) {
            try {
                step.run();
            } catch (RuntimeException e) {
                log.warn("after-commit step of a claim on {} failed", sorted, e);
            }
        }
        return Optional.ofNullable(result);
    }

    // ---------------------------------------------------------------- waiting leases

    /** The body of {@link #withLease}. */
    @FunctionalInterface
    public interface LeaseWork<T> {
        /** Runs the work under {@code grant}; its result is returned to the caller. */
        T apply(LeaseGrant grant) throws Exception;
    }

    /**
     * "Only one instance refreshes this; the others wait and read what it stored": waits up to
     * {@code maxWait} (woken by release notifications, else polling every {@code poll}) for lease
     * {@code name}, runs {@code work} holding it, and releases it. Returns empty if the wait timed out;
     * a waiter then typically reads what the holder stored. Write through
     * {@link Leases#fenced(LeaseGrant, FencedWork)} with the grant. {@code work} should finish within
     * {@code ttl}; a longer one keeps its grant only as long as the lease lives.
     */
    public <T> Optional<T> withLease(String name, Duration ttl, Duration maxWait, Duration poll, LeaseWork<T> work) {
        Objects.requireNonNull(work, "work");
        Optional<LeaseGrant> grant = leases.acquire(name, nodeId, ttl, maxWait, poll);
        if (grant.isEmpty()) {
            return Optional.empty();
        }
        try {
            return Optional.ofNullable(work.apply(grant.get()));
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new BatonException("work under lease '" + name + "' failed: " + e.getMessage(), e);
        } finally {
            try {
                leases.release(grant.get());
            } catch (RuntimeException e) {
                log.warn("release of lease '{}' failed; it expires by itself in {}", name, ttl, e);
            }
        }
    }

    // ---------------------------------------------------------------- caps and limiters

    /**
     * A distributed concurrency cap: at most {@code limit} holders per key across all instances,
     * each holding a slot that expires after {@code slotTtl} unless renewed (so a dead holder frees
     * its slot). When the database is unreachable, at most {@code localCeiling} holders per key on
     * this instance (logged and counted in {@link #fallbacks()}).
     */
    public ConcurrencyCap concurrencyCap(String name, int limit, Duration slotTtl, int localCeiling) {
        return concurrencyCap(name, limit, slotTtl, localCeiling, DEFAULT_DECISION_TIMEOUT);
    }

    /**
     * A concurrency cap that decides within {@code decisionTimeout}, the wait for a pool connection
     * included: no answer by then counts as an unreachable database (the local ceiling decides), and a
     * key whose admission lock is held longer (a holder paused inside its admission) is refused.
     */
    public ConcurrencyCap concurrencyCap(
            String name, int limit, Duration slotTtl, int localCeiling, Duration decisionTimeout) {
        return new ConcurrencyCap(this, name, limit, slotTtl, localCeiling, decisionTimeout);
    }

    /**
     * A distributed rate limiter: at most {@code limit} requests per key per {@code window} across all
     * instances (GCRA, one statement per decision; bursts up to {@code limit}). When the database is
     * unreachable, an in-process limiter of {@code localLimit} per window decides (logged and counted).
     */
    public RateLimiter rateLimiter(String name, int limit, Duration window, int localLimit) {
        return rateLimiter(name, limit, window, localLimit, DEFAULT_DECISION_TIMEOUT);
    }

    /** A rate limiter that decides within {@code decisionTimeout} (pool wait included), else falls back. */
    public RateLimiter rateLimiter(String name, int limit, Duration window, int localLimit, Duration decisionTimeout) {
        return new RateLimiter(this, name, limit, window, localLimit, decisionTimeout);
    }

    /**
     * Revocation epochs of {@code scope} ("session", "api-keys"): {@code revokeAll(subject)} is "log out
     * everywhere", honoured on every instance within {@code maxStaleness} (each node caches what it read
     * for at most that long; zero reads on every check). See {@link Revocations}.
     */
    public Revocations revocations(String scope, Duration maxStaleness) {
        return new Revocations(this, scope, maxStaleness);
    }

    /**
     * Replay-protected grants for {@code purpose}, signed with {@code key} (at least 32 random bytes, the
     * same on every instance): accepted once across all instances, never after expiry, and, if
     * {@code revocations} is given, never after their subject was revoked. See {@link Grants}.
     */
    public Grants grants(String purpose, byte[] key, Revocations revocations) {
        return new Grants(this, purpose, key, revocations);
    }

    /** How many decisions fell back to local state because the database did not answer. */
    public long fallbacks() {
        return fallbacks.get();
    }

    /** Deletes expired deliveries, tokens, slots and rate state, in bounded batches; returns rows deleted. */
    public int purgeExpired() {
        try {
            return Maintenance.purgeCoordination(db, store);
        } catch (SQLException e) {
            throw Db.failed("purging expired coordination rows", e);
        }
    }

    // package-private plumbing for ConcurrencyCap and RateLimiter

    DataSource dataSource() {
        return dataSource;
    }

    Db db() {
        return db;
    }

    /** The statements behind this facade and its caps, limiters, revocations and grants. */
    CoordinationStore store() {
        return store;
    }

    String nodeId() {
        return nodeId;
    }

    LongSupplier ticker() {
        return ticker;
    }

    void countFallback(String primitive) {
        fallbacks.incrementAndGet();
        metrics.fallbackUsed(primitive);
    }

    /** Where fallbacks are reported. */
    Coordination metrics(BatonMetrics metrics) {
        this.metrics = metrics;
        return this;
    }

    /** Pause points for tests. */
    Coordination hooks(Hooks hooks) {
        this.hooks = hooks;
        return this;
    }

    Hooks hooks() {
        return hooks;
    }

    static void requireDecisionTimeout(Duration timeout) {
        Checks.requirePositive("decisionTimeout", timeout, false);
        if (timeout.compareTo(Duration.ofMillis(10)) < 0 || timeout.compareTo(Duration.ofMinutes(1)) > 0) {
            throw new IllegalArgumentException("decisionTimeout must be between PT0.01S and PT1M, but was " + timeout);
        }
    }

    static void requireTtl(String what, Duration ttl) {
        Checks.requirePositive(what, ttl, false);
        if (ttl.compareTo(Leases.MIN_TTL) < 0 || ttl.compareTo(Duration.ofDays(3650)) > 0) {
            throw new IllegalArgumentException(
                    what + " must be between " + Leases.MIN_TTL + " and PT87600H, but was " + ttl);
        }
    }
}
