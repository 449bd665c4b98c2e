package dev.baton.examples.audit.reports;

import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;

/**
 * At most {@code perAccount} heavyweight report queries per account at once, counted in this process:
 * with N instances one account runs N times that many. Registered by {@link ReportsConfiguration}.
 */
public class ReportConcurrencyLimiter {
    private final int perAccount;
    private final Map<UUID, Semaphore> permitsByAccount = new ConcurrentHashMap<>();

    public ReportConcurrencyLimiter(int perAccount) {
        this.perAccount = perAccount;
    }

    /** A release action if a slot was free; empty when the account is at its limit. */
    public Optional<Runnable> tryAcquire(UUID accountId) {
        Semaphore s = permitsByAccount.computeIfAbsent(accountId, id -> new Semaphore(perAccount));
        return s.tryAcquire() ? Optional.of(s::release) : Optional.empty();
    }
}
