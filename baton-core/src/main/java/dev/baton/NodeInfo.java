package dev.baton;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * A registered Baton node as the database sees it at {@code dbNow}.
 *
 * @param heartbeatInterval how often the node promised to beat; it is stale after {@link #STALE_AFTER_BEATS} missed
 * @param application       the application it runs ({@link Baton.Builder#application}); empty for nodes of
 *                          versions that did not record it
 * @param version           the application's version
 */
public record NodeInfo(
        String id,
        NodeState state,
        Instant startedAt,
        Instant heartbeatAt,
        Duration heartbeatInterval,
        Optional<Instant> stoppedAt,
        int protocolVersion,
        Optional<String> host,
        Optional<Long> pid,
        Optional<String> application,
        Optional<String> version,
        Instant dbNow) {
    /** A node that has not beaten for this many intervals, and never said it stopped, is stale. */
    public static final int STALE_AFTER_BEATS = 3;

    /** True if the node never recorded a clean stop but its heartbeat is overdue (crashed, paused, partitioned). */
    public boolean stale() {
        return state != NodeState.STOPPED
                && heartbeatAt
                        .plus(heartbeatInterval.multipliedBy(STALE_AFTER_BEATS))
                        .isBefore(dbNow);
    }
}
