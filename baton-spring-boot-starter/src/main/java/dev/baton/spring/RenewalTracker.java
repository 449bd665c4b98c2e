package dev.baton.spring;

import dev.baton.BatonMetrics;
import dev.baton.RevocationReason;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/** Remembers the last renewal of each lease this node leads, and its self-stops, for the health indicator. */
public final class RenewalTracker implements BatonMetrics {
    /** The last renewal of a lease led by this node. */
    public record LastRenewal(boolean confirmed, Instant at, Duration latency) {}

    private final Map<String, LastRenewal> last = new ConcurrentHashMap<>();
    private final AtomicLong selfStops = new AtomicLong();

    @Override
    public void leaseRenewed(String lease, Duration latency, boolean confirmed) {
        last.put(lease, new LastRenewal(confirmed, Instant.now(), latency));
    }

    @Override
    public void leadershipRevoked(String lease, RevocationReason reason) {
        last.remove(lease);
        if (reason == RevocationReason.DEADLINE) {
            selfStops.incrementAndGet();
        }
    }

    /** Leases this node leads, with their last renewal (sorted by name). */
    public Map<String, LastRenewal> lastRenewals() {
        return new TreeMap<>(last);
    }

    /** Terms this node ended itself because no renewal was confirmed in time. */
    public long selfStops() {
        return selfStops.get();
    }
}
