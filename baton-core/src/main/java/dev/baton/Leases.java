package dev.baton;

import dev.baton.internal.db.Db;
import dev.baton.internal.db.Identifiers;
import dev.baton.internal.lease.LeaseStore;
import dev.baton.internal.notify.Notifier;
import dev.baton.internal.service.Hooks;
import dev.baton.internal.service.Service;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.UUID;
import java.util.function.LongSupplier;
import javax.sql.DataSource;

/**
 * Named leases with fencing: at most one database-authorized owner per name, a generation (fencing
 * token) that strictly increases on every change of ownership, and expiry on the database clock.
 *
 * <p>Acquire, renew and release are single atomic statements; renew and release match owner
 * <em>and</em> generation, so a former owner can neither extend nor clear its successor's lease.
 * Ownership is a row, not a session: nothing here depends on keeping a connection, so it works
 * through PgBouncer in transaction-pooling mode.
 *
 * <p>A grant is never a permission. Protected writes go through {@link #fenced} or call
 * {@link #check} inside their own transaction; a write with generation g cannot commit after g+1
 * exists. Thread-safe.
 */
public final class Leases {
    /** The shortest TTL accepted: below this, clock resolution and round trips dominate. */
    public static final Duration MIN_TTL = Duration.ofMillis(10);
    /** The longest TTL accepted. */
    public static final Duration MAX_TTL = Duration.ofDays(1);
    /** SQLSTATE of idle_in_transaction_session_timeout ending a session. */
    private static final String IDLE_IN_TRANSACTION_TIMEOUT = "25P03";

    private final DataSource dataSource;
    private final Db db;
    private final LeaseStore store;
    private final Hooks hooks;
    private final LongSupplier ticker;
    private final Notifier notifier;

    Leases(DataSource dataSource, String schema, Hooks hooks, LongSupplier ticker, Notifier notifier) {
        this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
        this.db = Db.of(dataSource);
        this.store = new LeaseStore(schema, hooks, ticker);
        this.hooks = hooks;
        this.ticker = ticker;
        this.notifier = notifier;
    }

    /** The statements behind this facade, for the leadership runner and maintenance. */
    LeaseStore store() {
        return store;
    }

    // ---------------------------------------------------------------- acquire

    /**
     * Takes the lease if it is free, released or expired on the database clock; otherwise returns empty.
     * Every success starts a new, strictly higher generation, so any earlier grant is void (its fenced
     * writes are rejected).
     *
     * <p><b>What one owner id means.</b> {@code owner} says who holds the lease (operators see it; Baton
     * uses the node id). It does not make callers the same holder: each call is an acquisition of its own,
     * so a second call while the grant lives gets nothing, from another thread of this process just as
     * from another node, even with the same owner id. If the answer to a call is lost (the connection
     * failed after the statement committed), the lease stays held by that lost acquisition until it
     * expires, as with a crashed holder. {@link #acquire} and leadership runners retry within one
     * acquisition and so recover such a grant at once.
     */
    public Optional<LeaseGrant> tryAcquire(String name, String owner, Duration ttl) {
        return attempt(name, owner, ttl, null, newAcquisition()).grant();
    }

    /**
     * Like {@link #tryAcquire(String, String, Duration)}, as the given acquisition: a call with the
     * acquisition that holds the lease takes it again at once, under a new generation (the earlier grant is
     * void). This lets one holder keep its turn across calls (a single-runner method whose lease outlives
     * its run), or recover a grant whose answer was lost. Use one acquisition id per holder, made by
     * {@link #newAcquisition()}; never let two threads that may hold at the same time share one: they
     * would not exclude each other.
     *
     * @param acquisition 1 to 64 characters, no control characters
     */
    public Optional<LeaseGrant> tryAcquire(String name, String owner, Duration ttl, String acquisition) {
        Identifiers.name("acquisition", acquisition);
        if (acquisition.length() > 64) {
            throw new IllegalArgumentException(
                    "acquisition must be 1 to 64 characters, but was " + acquisition.length() + " characters");
        }
        return attempt(name, owner, ttl, null, acquisition).grant();
    }

    /**
     * Like {@link #tryAcquire(String, String, Duration)} on the caller's connection, inside the caller's
     * transaction if one is open (the grant then exists only if that transaction commits). Expiry is
     * computed from {@code clock_timestamp()}, so a transaction opened long before does not shorten it.
     */
    public Optional<LeaseGrant> tryAcquire(Connection connection, String name, String owner, Duration ttl) {
        validate(name, owner, ttl);
        try {
            return store.acquire(connection, name, owner, ttl, null, newAcquisition(), 0)
                    .grant();
        } catch (SQLException e) {
            throw Db.failed("an acquisition of lease '" + name + "' by '" + owner + "'", e);
        }
    }

    /**
     * Waits up to {@code maxWait} for the lease: tries at once, then again whenever a release is
     * notified, when the current grant is due to expire, and at least every {@code poll} (jittered).
     * Returns empty if the wait ends without the lease.
     */
    public Optional<LeaseGrant> acquire(String name, String owner, Duration ttl, Duration maxWait, Duration poll) {
        Checks.requirePositive("maxWait", maxWait, true);
        Checks.requirePositive("poll", poll, false);
        long deadline = ticker.getAsLong() + maxWait.toNanos();
        String acquisition = newAcquisition(); // one acquisition: a retry after a lost answer recovers the grant
        try (Notifier.Subscription wake = notifier.subscribe(store.channel(), name)) {
            while (true) {
                LeaseStore.Attempt attempt = attempt(name, owner, ttl, null, acquisition);
                if (attempt.grant().isPresent()) {
                    return attempt.grant();
                }
                long left = deadline - ticker.getAsLong();
                if (left <= 0) {
                    return Optional.empty();
                }
                long wait =
                        Math.min(left, Math.min(Service.jitter(poll.toNanos()), attempt.expiresInNanos() + 1_000_000));
                if (!wake.await(Math.max(wait, 1_000_000))) {
                    // Interrupted: stop waiting, keep the flag for the caller.
                    return Optional.empty();
                }
            }
        }
    }

    /** A new acquisition id: random (122 bits), so that no other caller, here or elsewhere, shares it. */
    public static String newAcquisition() {
        return UUID.randomUUID().toString();
    }

    LeaseStore.Attempt attempt(String name, String owner, Duration ttl, String ownerMeta, String acquisition) {
        validate(name, owner, ttl);
        return db.callUnchecked(
                "an acquisition of lease '" + name + "' by '" + owner + "'",
                c -> store.acquire(c, name, owner, ttl, ownerMeta, acquisition, 0));
    }

    // ---------------------------------------------------------------- renew / release

    /**
     * Extends the grant's lease by {@code grant.ttl()} from now on the database clock. Succeeds only
     * while the lease has not expired and still belongs to this owner and generation; a renewal never
     * changes the generation.
     *
     * @throws LeaseLostException if the grant is no longer current
     */
    public LeaseGrant renew(LeaseGrant grant) {
        return renew(grant, grant.ttl());
    }

    /** Renews with a new TTL. */
    public LeaseGrant renew(LeaseGrant grant, Duration ttl) {
        return db.callUnchecked("the renewal of " + grant, c -> renew(c, grant, ttl));
    }

    /**
     * Renews on the caller's connection (inside its transaction if one is open). Expiry is computed
     * from {@code clock_timestamp()}, so a transaction opened long before does not shorten it.
     *
     * @throws LeaseLostException if the grant is no longer current
     */
    public LeaseGrant renew(Connection c, LeaseGrant grant, Duration ttl) throws SQLException {
        validate(grant.name(), grant.owner(), ttl);
        return store.renew(c, grant, ttl, 0);
    }

    /**
     * Releases the lease if this grant is still its latest generation, and notifies waiting candidates
     * so the hand-off does not wait for a poll. The row and its generation stay. Returns false when
     * the grant was no longer the latest (someone took over; nothing was changed).
     */
    public boolean release(LeaseGrant grant) {
        return db.callUnchecked("the release of " + grant, c -> release(c, grant));
    }

    /** Releases on the caller's connection (inside its transaction if one is open). */
    public boolean release(Connection c, LeaseGrant grant) throws SQLException {
        return store.release(c, grant, 0);
    }

    // ---------------------------------------------------------------- fencing

    /**
     * The fence: verifies, inside the caller's open transaction, that {@code grant} is the lease's
     * current, unexpired grant, and locks the lease row ({@code FOR SHARE}) until that transaction
     * ends, so no takeover can commit before it. Also bounds how long the transaction may then sit
     * idle to the time the grant has left, so a paused writer delays a takeover by about that long at most.
     *
     * @throws LeaseLostException    if the grant is not current (roll back: write nothing)
     * @throws IllegalStateException if the connection is in auto-commit mode (the lock would end at once)
     */
    public void check(Connection transaction, LeaseGrant grant) throws SQLException {
        if (transaction.getAutoCommit()) {
            throw new IllegalStateException("check(connection, grant) must run inside the protected write's "
                    + "transaction, but the connection is in auto-commit mode; call setAutoCommit(false) first "
                    + "or use fenced(...)");
        }
        if (!store.fence(transaction, grant)) {
            throw new LeaseLostException(
                    grant,
                    "fenced write rejected: " + grant
                            + " is no longer the current grant (expired on the database clock, released, or taken over)");
        }
    }

    /**
     * Runs {@code work} in a new transaction on this Baton's data source, after {@link #check}.
     * Commits if the work returns, rolls back if anything throws.
     *
     * @throws LeaseLostException      the grant is no longer current; nothing was written
     * @throws UnknownOutcomeException the connection failed during COMMIT; the write may have committed
     */
    public <T> T fenced(LeaseGrant grant, FencedWork<T> work) {
        return fenced(dataSource, grant, work);
    }

    /**
     * Like {@link #fenced(LeaseGrant, FencedWork)} on a connection from the given data source. The
     * transaction runs in READ COMMITTED and is committed here, whatever that pool's auto-commit and
     * default isolation.
     */
    public <T> T fenced(DataSource dataSource, LeaseGrant grant, FencedWork<T> work) {
        Objects.requireNonNull(grant, "grant");
        Objects.requireNonNull(work, "work");
        try {
            return Db.of(dataSource)
                    .transaction(
                            "a fenced write for " + grant,
                            ". Retry with the same idempotency key or read back to find out",
                            c -> {
                                T result = runFenced(c, grant, work);
                                hooks.reach(Hooks.Points.FENCE_BEFORE_COMMIT);
                                return result;
                            });
        } catch (UnknownOutcomeException e) {
            throw endedByIdleTimeout(e.getCause()) ? lostToIdleTimeout(grant) : e;
        } catch (SQLException e) {
            if (endedByIdleTimeout(e)) {
                throw lostToIdleTimeout(grant);
            }
            throw Db.failed("fenced transaction for " + grant, e);
        }
    }

    private <T> T runFenced(Connection c, LeaseGrant grant, FencedWork<T> work) throws SQLException {
        hooks.reach(Hooks.Points.FENCE_BEFORE_CHECK);
        check(c, grant);
        hooks.reach(Hooks.Points.FENCE_AFTER_CHECK);
        return Db.runApplicationWork("fenced work for " + grant, () -> work.apply(c));
    }

    /** The server ended the session before COMMIT arrived: the transaction definitely rolled back. */
    private static boolean endedByIdleTimeout(Throwable cause) {
        for (Throwable t = cause; t != null; t = t.getCause()) {
            if (t instanceof SQLException s && IDLE_IN_TRANSACTION_TIMEOUT.equals(s.getSQLState())) {
                return true;
            }
        }
        return false;
    }

    private static LeaseLostException lostToIdleTimeout(LeaseGrant grant) {
        return new LeaseLostException(
                grant,
                "fenced write for " + grant + " rolled back: the transaction sat idle "
                        + "holding the fence until its lease ran out, and the server ended it so that a takeover is not "
                        + "blocked; nothing was written");
    }

    // ---------------------------------------------------------------- inspection

    /** The lease as the database sees it now, or empty if it was never acquired. */
    public Optional<LeaseInfo> inspect(String name) {
        Identifiers.name("lease name", name);
        return db.callUnchecked("inspecting lease '" + name + "'", c -> store.inspect(c, name));
    }

    /**
     * One page of leases in name order, starting after {@code after} ({@code null} or empty for the first
     * page). The page's {@link Page#next()} is the cursor for the following one.
     *
     * @param limit 1 to {@link Page#MAX_LIMIT}
     */
    public Page<LeaseInfo> list(String after, int limit) {
        Page.requireLimit(limit);
        List<LeaseInfo> out =
                db.callUnchecked("listing leases", c -> store.list(c, after == null ? "" : after, limit + 1));
        return Page.of(out, limit, LeaseInfo::name);
    }

    /** The leases held right now (unexpired, with an owner), by name; at most {@code limit}. */
    List<LeaseInfo> held(int limit) {
        return db.callUnchecked("listing held leases", c -> store.held(c, limit));
    }

    /** The latest {@code limit} generations of a lease, newest first. */
    public List<LeaseHistoryEntry> history(String name, int limit) {
        Identifiers.name("lease name", name);
        if (limit < 1 || limit > 10_000) {
            throw new IllegalArgumentException("limit must be 1 to 10000, but was " + limit);
        }
        return db.callUnchecked("reading the history of lease '" + name + "'", c -> store.history(c, name, limit));
    }

    // ---------------------------------------------------------------- helpers

    static void validate(String name, String owner, Duration ttl) {
        Identifiers.name("lease name", name);
        Identifiers.name("owner id", owner);
        if (ttl == null) {
            throw new IllegalArgumentException("lease ttl must be set, but was null");
        }
        if (ttl.compareTo(MIN_TTL) < 0 || ttl.compareTo(MAX_TTL) > 0) {
            throw new IllegalArgumentException(
                    "lease ttl must be between " + MIN_TTL + " and " + MAX_TTL + ", but was " + ttl);
        }
    }
}
