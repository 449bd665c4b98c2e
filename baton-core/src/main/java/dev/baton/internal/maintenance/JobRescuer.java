package dev.baton.internal.maintenance;

import dev.baton.internal.job.JobSettings;
import dev.baton.internal.service.Service;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Optional;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Returns attempts whose lease expired to their queue (or fails them after max stalls), and fails jobs of
 * kinds no live node handles once they have waited out the unhandled-kind timeout. One instance per
 * maintenance term; a pass every rescue interval.
 *
 * <p>The job settings are the cluster's ({@link Maintenance#clusterJobSettings()}), read again once a minute,
 * and at every pass while no worker looks live (as right after an outage, before the heartbeats are back),
 * so the rescue resumes as soon as they are. Jobs of unhandled kinds are failed only once this term has
 * watched the cluster for the whole timeout without a failed pass: after an outage every heartbeat looks
 * stale for a while.
 */
public final class JobRescuer extends Service {
    private static final Logger log = LoggerFactory.getLogger(JobRescuer.class);
    /** How often the cluster's job settings are read again while they are known. */
    public static final Duration SETTINGS_REFRESH = Duration.ofMinutes(1);

    private final Maintenance work;
    private Optional<JobSettings> settings = Optional.empty();
    private long settingsReadAt;
    private long watchingSince;

    public JobRescuer(Maintenance work, LongSupplier ticker) {
        super("baton-rescuer", ticker);
        this.work = work;
        this.watchingSince = ticker.getAsLong();
    }

    @Override
    protected long runOnce() {
        try {
            long now = ticker.getAsLong();
            if (settings.isEmpty() || now - settingsReadAt >= SETTINGS_REFRESH.toNanos()) {
                settings = work.clusterJobSettings();
                settingsReadAt = now;
            }
            if (settings.isPresent()) {
                work.rescueOnce(settings.get());
                if (ticker.getAsLong() - watchingSince
                        >= settings.get().unhandledKindTimeout().toNanos()) {
                    work.failUnhandledOnce(settings.get());
                }
            }
        } catch (SQLException | RuntimeException e) {
            watchingSince = ticker.getAsLong();
            log.warn("rescuing jobs failed, retrying in {}: {}", work.pace(), e.getMessage());
        }
        return work.pace().toNanos();
    }
}
