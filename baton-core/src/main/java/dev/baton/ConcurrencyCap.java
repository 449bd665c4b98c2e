package dev.baton;

import dev.baton.internal.db.Identifiers;
import dev.baton.internal.service.Hooks;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * At most {@code limit} holders per key across all instances (see
 * {@link Coordination#concurrencyCap}). A slot expires after its TTL unless renewed, so a crashed
 * holder frees it. Admission is serialised per key by a transaction-scoped advisory lock, then the
 * live holders are counted in a new statement (which sees every holder committed before the lock
 * was granted). The admission transaction runs in READ COMMITTED whatever the pool's default
 * isolation (a REPEATABLE READ snapshot taken before the lock would miss holders admitted meanwhile),
 * and every wait in it is bounded: the lock by the decision timeout (a key whose lock stays held, by a
 * holder paused inside its admission, is refused rather than waited for), the statements by the same
 * timeout on the server, and a paused admission's own transaction is ended by the server once idle
 * that long. Thread-safe.
 */
public final class ConcurrencyCap {
    private static final Logger log = LoggerFactory.getLogger(ConcurrencyCap.class);
    /** SQLSTATE lock_not_available: the key's admission lock was not granted within the timeout. */
    private static final String LOCK_NOT_AVAILABLE = "55P03";

    private final Coordination coord;
    private final String name;
    private final int limit;
    private final Duration slotTtl;
    private final int localCeiling;
    private final Duration timeout;
    private final Map<String, Semaphore> localSlots = new ConcurrentHashMap<>();

    ConcurrencyCap(Coordination coord, String name, int limit, Duration slotTtl, int localCeiling, Duration timeout) {
        this.coord = coord;
        this.name = Identifiers.name("cap name", name);
        if (limit < 1 || limit > 100_000) {
            throw new IllegalArgumentException("limit must be 1 to 100000, but was " + limit);
        }
        if (localCeiling < 0 || localCeiling > limit) {
            throw new IllegalArgumentException(
                    "localCeiling must be 0 to limit (" + limit + "), but was " + localCeiling);
        }
        Coordination.requireTtl("slotTtl", slotTtl);
        Coordination.requireDecisionTimeout(timeout);
        this.limit = limit;
        this.slotTtl = slotTtl;
        this.localCeiling = localCeiling;
        this.timeout = timeout;
    }

    /**
     * Takes a slot for {@code key} if fewer than {@code limit} are held; empty otherwise, and empty when
     * the key's admission stays locked for the whole decision timeout. If the database does not answer
     * within the decision timeout (pool wait included), takes one of this instance's
     * {@code localCeiling} local slots instead (the permit says so: {@link Permit#local()}).
     */
    public Optional<Permit> tryAcquire(String key) {
        Identifiers.name("cap key", key);
        String holder = coord.nodeId() + "/" + UUID.randomUUID();
        long bound = Math.max(1, timeout.toMillis());
        AtomicBoolean abandoned = new AtomicBoolean();
        Coordination.Decision<Boolean> d;
        try {
            // One transaction, in READ COMMITTED whatever the pool's default isolation (Db.transaction).
            d = coord.decideInTransaction(
                    timeout,
                    "cap '" + name + "' for key '" + key + "'",
                    tx -> {
                        // Bounded waits for this transaction and the key's lock (one round trip), the count,
                        // and the slot if one is free.
                        if (!coord.store().admit(tx, name, key, holder, limit, slotTtl, bound)) {
                            return false;
                        }
                        coord.hooks().reach(Hooks.Points.CAP_BEFORE_COMMIT);
                        if (abandoned.get()) {
                            // The caller stopped waiting and decided locally: do not hold a slot it will not use.
                            throw new SQLException("the caller stopped waiting for this admission", "57014");
                        }
                        return true;
                    },
                    abandoned);
        } catch (BatonException e) {
            if (e.getCause() instanceof SQLException s && LOCK_NOT_AVAILABLE.equals(s.getSQLState())) {
                log.debug("cap '{}': admission of key '{}' stayed locked for {}; refused", name, key, timeout);
                return Optional.empty();
            }
            throw e;
        }
        if (d.answered()) {
            return d.value() ? Optional.of(new Permit(key, holder, false)) : Optional.empty();
        }
        coord.countFallback("concurrency_cap");
        log.warn(
                "cap '{}': the database did not answer within {} ({}); applying this instance's local ceiling of {} "
                        + "for key '{}'",
                name,
                timeout,
                d.failure() == null ? "timed out" : d.failure().getMessage(),
                localCeiling,
                key);
        Semaphore s = localSlots.computeIfAbsent(key, k -> new Semaphore(localCeiling));
        return s.tryAcquire() ? Optional.of(new Permit(key, holder, true)) : Optional.empty();
    }

    /** A held slot; close it to release. */
    public final class Permit implements AutoCloseable {
        private final String key;
        private final String holder;
        private final boolean local;
        private boolean closed;

        private Permit(String key, String holder, boolean local) {
            this.key = key;
            this.holder = holder;
            this.local = local;
        }

        /** The key this slot was taken for. */
        public String key() {
            return key;
        }

        /** True if this is a local fallback slot (the database was unreachable when it was taken). */
        public boolean local() {
            return local;
        }

        /** Extends the slot by its TTL; false if it already expired (and may have been given to another). */
        public boolean renew() {
            if (local) {
                return !closed;
            }
            return coord.db()
                    .callUnchecked(
                            "renewing a slot of cap '" + name + "'",
                            c -> coord.store().renewSlot(c, name, key, holder, slotTtl));
        }

        /** Releases the slot (idempotent). If the database is unreachable, the slot expires by itself. */
        @Override
        public synchronized void close() {
            if (closed) {
                return;
            }
            closed = true;
            if (local) {
                localSlots.get(key).release();
                return;
            }
            try {
                coord.db()
                        .call(
                                "releasing a slot of cap '" + name + "'",
                                c -> coord.store().releaseSlot(c, name, key, holder));
            } catch (SQLException e) {
                log.warn(
                        "releasing a slot of cap '{}' key '{}' failed; it expires within {}: {}",
                        name,
                        key,
                        slotTtl,
                        e.getMessage());
            }
        }
    }
}
