package dev.baton;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeSet;
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
    static final int PURGE_BATCH = 1000;

    private final DataSource dataSource;
    private final Sql sql;
    private final Leases leases;
    private final String nodeId;
    private final LongSupplier ticker;
    private final SecureRandom random = new SecureRandom();
    private final AtomicLong fallbacks = new AtomicLong();
    private volatile BatonMetrics metrics = BatonMetrics.NONE;
    private final Tokens tokens = new Tokens();

    Coordination(DataSource dataSource, String schema, Leases leases, String nodeId, LongSupplier ticker) {
        this.dataSource = dataSource;
        this.sql = Sql.load("coord.sql", Identifiers.schema(schema));
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
     * True for exactly one caller, across all instances, per {@code (source, deliveryId)} while the
     * record lives ({@code ttl}); false for every duplicate. Answers within
     * {@link #DEFAULT_DEDUPE_TIMEOUT} or applies {@link OnTimeout#ACCEPT}.
     */
    public boolean firstDelivery(String source, String deliveryId, Duration ttl) {
        return firstDelivery(source, deliveryId, ttl, DEFAULT_DEDUPE_TIMEOUT, OnTimeout.ACCEPT);
    }

    /** {@link #firstDelivery(String, String, Duration)} with an explicit bound and timeout policy. */
    public boolean firstDelivery(String source, String deliveryId, Duration ttl, Duration timeout, OnTimeout onTimeout) {
        Identifiers.name("source", source);
        if (deliveryId == null || deliveryId.isEmpty() || deliveryId.length() > 500) {
            throw new IllegalArgumentException("deliveryId must be 1 to 500 characters, but was "
                    + (deliveryId == null ? "null" : deliveryId.length() + " characters"));
        }
        requireTtl("ttl", ttl);
        Leases.requirePositive("timeout", timeout, false);
        Objects.requireNonNull(onTimeout, "onTimeout");
        try (Connection c = dataSource.getConnection();
             PreparedStatement ps = c.prepareStatement(sql.get("first_delivery"))) {
            Jdbc.queryTimeout(ps, timeout.toMillis());
            ps.setString(1, source);
            ps.setString(2, deliveryId);
            ps.setLong(3, ttl.toMillis());
            ps.setString(4, nodeId);
            try (ResultSet rs = ps.executeQuery()) {
                return rs.next();
            }
        } catch (SQLException e) {
            boolean timedOut = QUERY_CANCELED.equals(e.getSQLState());
            String why = timedOut ? "did not answer within " + timeout : "failed (" + e.getMessage() + ")";
            // Unreachable includes the pool giving up on a connection, as for caps and rate limiters.
            if (onTimeout == OnTimeout.THROW || !(timedOut || ConcurrencyCap.unreachable(e))) {
                throw new BatonException("dedupe of delivery '" + deliveryId + "' from '" + source + "' " + why, e);
            }
            countFallback("dedupe");
            log.warn("dedupe of delivery '{}' from '{}' {}; treating it as {} ({})", deliveryId, source, why,
                    onTimeout == OnTimeout.ACCEPT ? "first (it may be processed twice)" : "a duplicate", onTimeout);
            return onTimeout == OnTimeout.ACCEPT;
        }
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
            try (Connection c = dataSource.getConnection();
                 PreparedStatement ps = c.prepareStatement(sql.get("mint_token"))) {
                ps.setBytes(1, sha256(token));
                ps.setString(2, purpose);
                ps.setString(3, subject);
                ps.setLong(4, ttl.toMillis());
                ps.executeUpdate();
                return token;
            } catch (SQLException e) {
                throw new BatonException("minting a '" + purpose + "' token failed: " + e.getMessage(), e);
            }
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
            try (Connection c = dataSource.getConnection();
                 PreparedStatement ps = c.prepareStatement(sql.get("consume_token"))) {
                ps.setBytes(1, sha256(token));
                ps.setString(2, purpose);
                try (ResultSet rs = ps.executeQuery()) {
                    return rs.next() ? Optional.of(rs.getString(1)) : Optional.empty();
                }
            } catch (SQLException e) {
                throw new BatonException("consuming a '" + purpose + "' token failed: " + e.getMessage(), e);
            }
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
        Leases.requirePositive("lockTimeout", lockTimeout, false);
        Objects.requireNonNull(work, "work");
        List<Runnable> afterCommit = new ArrayList<>();
        T result;
        try (Connection c = dataSource.getConnection()) {
            boolean autoCommit = c.getAutoCommit();
            int isolation = c.getTransactionIsolation();
            c.setAutoCommit(false);
            // Read Committed: each statement after the locks sees everything committed before them.
            c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
            try {
                try (PreparedStatement ps = c.prepareStatement(sql.get("lock_timeout"))) {
                    ps.setString(1, Math.max(1, lockTimeout.toMillis()) + "ms");
                    ps.execute();
                }
                try (PreparedStatement ps = c.prepareStatement(sql.get("advisory_xact_lock"))) {
                    for (String k : sorted) {
                        ps.setString(1, k);
                        ps.execute();
                    }
                }
            } catch (SQLException e) {
                Jdbc.rollbackQuietly(c, e);
                restore(c, autoCommit, isolation);
                if (LOCK_NOT_AVAILABLE.equals(e.getSQLState())) {
                    log.debug("claim lock on {} not granted within {}; backing off", sorted, lockTimeout);
                    return Optional.empty();
                }
                throw e;
            }
            try {
                result = work.apply(new ClaimContext() {
                    @Override
                    public Connection connection() {
                        return c;
                    }

                    @Override
                    public void afterCommit(Runnable step) {
                        afterCommit.add(Objects.requireNonNull(step, "step"));
                    }
                });
                Jdbc.commit(c, "a claim on " + sorted, "; after-commit steps were not run");
            } catch (Throwable t) {
                Jdbc.rollbackQuietly(c, t);
                throw t;
            } finally {
                restore(c, autoCommit, isolation);
            }
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new BatonException("claim on " + sorted + " failed: " + e.getMessage(), e);
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

    private static void restore(Connection c, boolean autoCommit, int isolation) {
        try {
            if (!c.isClosed()) {
                c.setTransactionIsolation(isolation);
                c.setAutoCommit(autoCommit);
            }
        } catch (SQLException ignored) {
            // The connection is broken; the pool discards it.
        }
    }

    // ---------------------------------------------------------------- waiting leases

    /** The body of {@link #withLease}. */
    @FunctionalInterface
    public interface LeaseWork<T> {
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
        return new ConcurrencyCap(this, name, limit, slotTtl, localCeiling);
    }

    /**
     * A distributed rate limiter: at most {@code limit} requests per key per {@code window} across all
     * instances (GCRA, one statement per decision; bursts up to {@code limit}). When the database is
     * unreachable, an in-process limiter of {@code localLimit} per window decides (logged and counted).
     */
    public RateLimiter rateLimiter(String name, int limit, Duration window, int localLimit) {
        return new RateLimiter(this, name, limit, window, localLimit);
    }

    /** How many decisions fell back to local state because the database did not answer. */
    public long fallbacks() {
        return fallbacks.get();
    }

    /** Deletes expired deliveries, tokens, slots and rate state, in bounded batches; returns rows deleted. */
    public int purgeExpired() {
        int total = 0;
        try (Connection c = dataSource.getConnection()) {
            for (String stmt : List.of("purge_deliveries", "purge_tokens", "purge_slots", "purge_rates")) {
                for (int i = 0; i < 20; i++) {
                    int n;
                    try (PreparedStatement ps = c.prepareStatement(sql.get(stmt))) {
                        ps.setInt(1, PURGE_BATCH);
                        n = ps.executeUpdate();
                    }
                    total += n;
                    if (n < PURGE_BATCH) {
                        break;
                    }
                }
            }
        } catch (SQLException e) {
            throw new BatonException("purging expired coordination rows failed: " + e.getMessage(), e);
        }
        return total;
    }

    // package-private plumbing for ConcurrencyCap and RateLimiter

    DataSource dataSource() {
        return dataSource;
    }

    Sql sql() {
        return sql;
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

    static void requireTtl(String what, Duration ttl) {
        Leases.requirePositive(what, ttl, false);
        if (ttl.compareTo(Leases.MIN_TTL) < 0 || ttl.compareTo(Duration.ofDays(3650)) > 0) {
            throw new IllegalArgumentException(what + " must be between " + Leases.MIN_TTL + " and PT87600H, but was " + ttl);
        }
    }
}
