package dev.baton;

import java.time.Duration;
import java.util.Objects;

/**
 * Timing of a {@link Leadership}, validated when built.
 */
public final class LeadershipConfig {
    /**
     * L = 11 s: survives a renewal failing for a few seconds (a failover, a long GC) without churn, and
     * a crashed leader is replaced within about 11 s (its lease runs out at most L after its last renewal).
     */
    public static final Duration DEFAULT_LEASE_TTL = Duration.ofSeconds(11);
    /** R = 2.5 s: L/2 = 5.5 s leaves room for two bounded renewal attempts before the local deadline. */
    public static final Duration DEFAULT_RENEW_INTERVAL = Duration.ofMillis(2500);
    /** Candidates poll every 3 s when notifications are unavailable. */
    public static final Duration DEFAULT_POLL_INTERVAL = Duration.ofSeconds(3);

    /** 10 s: how long {@code stop()} waits for the task to end before it releases the lease anyway. */
    public static final Duration DEFAULT_STOP_TIMEOUT = Duration.ofSeconds(10);

    private final Duration leaseTtl;
    private final Duration renewInterval;
    private final Duration pollInterval;
    private final Duration stopTimeout;

    private LeadershipConfig(Duration leaseTtl, Duration renewInterval, Duration pollInterval, Duration stopTimeout) {
        Checks.requirePositive("leaseTtl", leaseTtl, false);
        Checks.requirePositive("renewInterval", renewInterval, false);
        Checks.requirePositive("pollInterval", pollInterval, false);
        Checks.requirePositive("stopTimeout", stopTimeout, true);
        if (leaseTtl.compareTo(Leases.MIN_TTL) < 0 || leaseTtl.compareTo(Leases.MAX_TTL) > 0) {
            throw new IllegalArgumentException(
                    "leaseTtl must be between " + Leases.MIN_TTL + " and " + Leases.MAX_TTL + ", but was " + leaseTtl);
        }
        // Each renewal is bounded to R, so two confirmed renewals can be up to 2R apart even with a
        // healthy but slow database; the local deadline L/2 must leave room for that.
        if (leaseTtl.dividedBy(2).compareTo(renewInterval.multipliedBy(2)) <= 0) {
            throw new IllegalArgumentException("leaseTtl/2 (" + leaseTtl.dividedBy(2)
                    + ") must exceed 2 × renewInterval ("
                    + renewInterval.multipliedBy(2) + "); with leaseTtl " + leaseTtl + " use a renewInterval below "
                    + leaseTtl.dividedBy(4) + ", or a longer leaseTtl");
        }
        this.leaseTtl = leaseTtl;
        this.renewInterval = renewInterval;
        this.pollInterval = pollInterval;
        this.stopTimeout = stopTimeout;
    }

    /** L: how long a grant lasts on the database clock without renewal. */
    public Duration leaseTtl() {
        return leaseTtl;
    }

    /** R: how often the leader renews; each renewal call is bounded to R. */
    public Duration renewInterval() {
        return renewInterval;
    }

    /**
     * How often a candidate retries when no release notification arrives (jittered ±20%); a candidate also retries
     * as soon as the holder's lease is due to expire.
     */
    public Duration pollInterval() {
        return pollInterval;
    }

    /** How long {@link Leadership#stop()} waits for the task to finish before releasing. */
    public Duration stopTimeout() {
        return stopTimeout;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof LeadershipConfig o
                && leaseTtl.equals(o.leaseTtl)
                && renewInterval.equals(o.renewInterval)
                && pollInterval.equals(o.pollInterval)
                && stopTimeout.equals(o.stopTimeout);
    }

    @Override
    public int hashCode() {
        return Objects.hash(leaseTtl, renewInterval, pollInterval, stopTimeout);
    }

    @Override
    public String toString() {
        return "LeadershipConfig[" + "leaseTtl=" + leaseTtl + ", " + "renewInterval=" + renewInterval + ", "
                + "pollInterval=" + pollInterval + ", " + "stopTimeout=" + stopTimeout + "]";
    }

    /** The defaults: TTL 11 s, renewal every 2.5 s. */
    public static LeadershipConfig defaults() {
        return builder().build();
    }

    /** A builder starting from the defaults. */
    public static Builder builder() {
        return new Builder();
    }

    /** Builds a {@link LeadershipConfig}; validated in {@link #build()}. */
    public static final class Builder {
        private Duration leaseTtl = DEFAULT_LEASE_TTL;
        private Duration renewInterval = DEFAULT_RENEW_INTERVAL;
        private Duration pollInterval;
        private Duration stopTimeout = DEFAULT_STOP_TIMEOUT;

        private Builder() {}

        /** See {@link LeadershipConfig#leaseTtl()}; default {@link #DEFAULT_LEASE_TTL}. */
        public Builder leaseTtl(Duration v) {
            leaseTtl = Objects.requireNonNull(v, "leaseTtl");
            return this;
        }

        /** See {@link LeadershipConfig#renewInterval()}; default {@link #DEFAULT_RENEW_INTERVAL}. */
        public Builder renewInterval(Duration v) {
            renewInterval = Objects.requireNonNull(v, "renewInterval");
            return this;
        }

        /** Defaults to {@link #DEFAULT_POLL_INTERVAL}, or the renew interval if that is shorter. */
        public Builder pollInterval(Duration v) {
            pollInterval = Objects.requireNonNull(v, "pollInterval");
            return this;
        }

        /** See {@link LeadershipConfig#stopTimeout()}; default {@link #DEFAULT_STOP_TIMEOUT}. */
        public Builder stopTimeout(Duration v) {
            stopTimeout = Objects.requireNonNull(v, "stopTimeout");
            return this;
        }

        /** The configuration; throws {@link IllegalArgumentException} naming the rule a value breaks. */
        public LeadershipConfig build() {
            Duration poll = pollInterval != null
                    ? pollInterval
                    : renewInterval.compareTo(DEFAULT_POLL_INTERVAL) < 0 ? renewInterval : DEFAULT_POLL_INTERVAL;
            return new LeadershipConfig(leaseTtl, renewInterval, poll, stopTimeout);
        }
    }
}
