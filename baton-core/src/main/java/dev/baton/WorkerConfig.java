package dev.baton;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;

/**
 * How this node works jobs: which queues with how many concurrent jobs, and the timing of claims,
 * heartbeats and recovery. Validated when built.
 */
public final class WorkerConfig {
    /** 30 s: a crashed worker's jobs are rescued within about 30 s + the rescue interval. */
    public static final Duration DEFAULT_JOB_LEASE = Duration.ofSeconds(30);
    /** 5 s: half the lease (15 s) leaves room for two bounded heartbeats before a handler self-stops. */
    public static final Duration DEFAULT_HEARTBEAT_INTERVAL = Duration.ofSeconds(5);
    /** 1 s when polling; with LISTEN active, wake-ups are immediate and polls a fallback. */
    public static final Duration DEFAULT_POLL_INTERVAL = Duration.ofSeconds(1);

    /** 10 s: expired attempts return to their queue within a lease and 10 s. */
    public static final Duration DEFAULT_RESCUE_INTERVAL = Duration.ofSeconds(10);
    /** 3: a job that crashes its worker three times is failed rather than tried for ever. */
    public static final int DEFAULT_MAX_STALLS = 3;
    /** 30 s: most jobs finish within it; longer ones are told to stop, then released once they return. */
    public static final Duration DEFAULT_DRAIN_TIMEOUT = Duration.ofSeconds(30);
    /** 7 days: a week of finished jobs to look back on. */
    public static final Duration DEFAULT_RETENTION = Duration.ofDays(7);
    /** 1 MiB: payloads are for parameters, not documents. */
    public static final int DEFAULT_MAX_PAYLOAD_BYTES = 1 << 20;
    /**
     * 1 h: long enough for a rolling deploy or a worker fleet's restart to bring a handler back; short
     * enough that a job of a kind nobody handles (a typo, a removed handler) shows up as failed the same
     * day rather than waiting for ever.
     */
    public static final Duration DEFAULT_UNHANDLED_KIND_TIMEOUT = Duration.ofHours(1);

    private final Map<String, Integer> queues;
    private final Duration jobLease;
    private final Duration heartbeatInterval;
    private final Duration pollInterval;
    private final Duration rescueInterval;
    private final int maxStalls;
    private final Duration drainTimeout;
    private final Duration retention;
    private final int maxPayloadBytes;
    private final Duration unhandledKindTimeout;

    private WorkerConfig(
            Map<String, Integer> queues,
            Duration jobLease,
            Duration heartbeatInterval,
            Duration pollInterval,
            Duration rescueInterval,
            int maxStalls,
            Duration drainTimeout,
            Duration retention,
            int maxPayloadBytes,
            Duration unhandledKindTimeout) {
        Objects.requireNonNull(queues, "queues");
        queues.forEach((q, n) -> {
            JobRequest.validQueue(q);
            if (n == null || n < 1 || n > 1000) {
                throw new IllegalArgumentException("concurrency of queue '" + q + "' must be 1 to 1000, but was " + n);
            }
        });
        queues = Map.copyOf(queues);
        Checks.requirePositive("jobLease", jobLease, false);
        Checks.requirePositive("heartbeatInterval", heartbeatInterval, false);
        Checks.requirePositive("pollInterval", pollInterval, false);
        Checks.requirePositive("rescueInterval", rescueInterval, false);
        Checks.requirePositive("drainTimeout", drainTimeout, true);
        Checks.requirePositive("retention", retention, true);
        Checks.requirePositive("unhandledKindTimeout", unhandledKindTimeout, false);
        if (jobLease.compareTo(Leases.MIN_TTL) < 0) {
            throw new IllegalArgumentException("jobLease must be at least " + Leases.MIN_TTL + ", but was " + jobLease);
        }
        // Each heartbeat is bounded to one interval, so two answered beats can be two intervals apart;
        // a handler self-stops at half the lease after its last answered beat was sent.
        if (jobLease.dividedBy(2).compareTo(heartbeatInterval.multipliedBy(2)) <= 0) {
            throw new IllegalArgumentException("jobLease/2 (" + jobLease.dividedBy(2) + ") must exceed 2 × "
                    + "heartbeatInterval (" + heartbeatInterval.multipliedBy(2) + "); with jobLease " + jobLease
                    + " use a heartbeatInterval below " + jobLease.dividedBy(4) + ", or a longer jobLease");
        }
        if (maxStalls < 1 || maxStalls > 100) {
            throw new IllegalArgumentException("maxStalls must be 1 to 100, but was " + maxStalls);
        }
        if (maxPayloadBytes < 2 || maxPayloadBytes > 64 << 20) {
            throw new IllegalArgumentException(
                    "maxPayloadBytes must be 2 to " + (64 << 20) + ", but was " + maxPayloadBytes);
        }
        this.queues = queues;
        this.jobLease = jobLease;
        this.heartbeatInterval = heartbeatInterval;
        this.pollInterval = pollInterval;
        this.rescueInterval = rescueInterval;
        this.maxStalls = maxStalls;
        this.drainTimeout = drainTimeout;
        this.retention = retention;
        this.maxPayloadBytes = maxPayloadBytes;
        this.unhandledKindTimeout = unhandledKindTimeout;
    }

    /** Queue name → maximum concurrent jobs on this node (1 to 1000). */
    public Map<String, Integer> queues() {
        return queues;
    }

    /** How long a claimed attempt is valid without a heartbeat (database clock). */
    public Duration jobLease() {
        return jobLease;
    }

    /**
     * How often running attempts' leases are extended (one batched statement); each heartbeat call is bounded to one
     * interval.
     */
    public Duration heartbeatInterval() {
        return heartbeatInterval;
    }

    /** How often each queue is polled when no notification arrives. */
    public Duration pollInterval() {
        return pollInterval;
    }

    /** How often the maintenance leader returns expired attempts to their queue (when this node leads). */
    public Duration rescueInterval() {
        return rescueInterval;
    }

    /** After this many expired attempts a job ends failed. */
    public int maxStalls() {
        return maxStalls;
    }

    /**
     * On shutdown, how long running jobs may finish before they are told to stop (an attempt is released for other
     * nodes once its handler has returned).
     */
    public Duration drainTimeout() {
        return drainTimeout;
    }

    /** How long finished jobs are kept (then pruned in bounded batches). */
    public Duration retention() {
        return retention;
    }

    /** The largest encoded payload accepted at enqueue. */
    public int maxPayloadBytes() {
        return maxPayloadBytes;
    }

    /**
     * How long an available job whose kind no live node handles may wait before the maintenance leader fails it with
     * a clear error (nodes claim only kinds they handle); positive. A leader fails such jobs only after watching the
     * cluster for this long without a failed pass, so a backlog is not failed right after an outage. Retention, max
     * stalls and this timeout are declared in the node's row; the leader applies the most conservative of those of
     * the live workers.
     */
    public Duration unhandledKindTimeout() {
        return unhandledKindTimeout;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof WorkerConfig o
                && queues.equals(o.queues)
                && jobLease.equals(o.jobLease)
                && heartbeatInterval.equals(o.heartbeatInterval)
                && pollInterval.equals(o.pollInterval)
                && rescueInterval.equals(o.rescueInterval)
                && maxStalls == o.maxStalls
                && drainTimeout.equals(o.drainTimeout)
                && retention.equals(o.retention)
                && maxPayloadBytes == o.maxPayloadBytes
                && unhandledKindTimeout.equals(o.unhandledKindTimeout);
    }

    @Override
    public int hashCode() {
        return Objects.hash(
                queues,
                jobLease,
                heartbeatInterval,
                pollInterval,
                rescueInterval,
                maxStalls,
                drainTimeout,
                retention,
                maxPayloadBytes,
                unhandledKindTimeout);
    }

    @Override
    public String toString() {
        return "WorkerConfig[" + "queues=" + queues + ", " + "jobLease=" + jobLease + ", " + "heartbeatInterval="
                + heartbeatInterval + ", " + "pollInterval=" + pollInterval + ", " + "rescueInterval=" + rescueInterval
                + ", " + "maxStalls=" + maxStalls + ", " + "drainTimeout=" + drainTimeout + ", " + "retention="
                + retention + ", " + "maxPayloadBytes=" + maxPayloadBytes + ", " + "unhandledKindTimeout="
                + unhandledKindTimeout + "]";
    }

    /** A builder starting from the defaults (no queues). */
    public static Builder builder() {
        return new Builder();
    }

    /** A builder starting from this configuration's values. */
    public Builder toBuilder() {
        return new Builder(this);
    }

    /** Builds a {@link WorkerConfig}; validated in {@link #build()}. */
    public static final class Builder {
        private final Map<String, Integer> queues = new LinkedHashMap<>();
        private Duration jobLease = DEFAULT_JOB_LEASE;
        private Duration heartbeatInterval = DEFAULT_HEARTBEAT_INTERVAL;
        private Duration pollInterval = DEFAULT_POLL_INTERVAL;
        private Duration rescueInterval = DEFAULT_RESCUE_INTERVAL;
        private int maxStalls = DEFAULT_MAX_STALLS;
        private Duration drainTimeout = DEFAULT_DRAIN_TIMEOUT;
        private Duration retention = DEFAULT_RETENTION;
        private int maxPayloadBytes = DEFAULT_MAX_PAYLOAD_BYTES;
        private Duration unhandledKindTimeout = DEFAULT_UNHANDLED_KIND_TIMEOUT;

        private Builder() {}

        /** A builder starting from {@code config}'s values. */
        private Builder(WorkerConfig config) {
            queues.putAll(config.queues());
            jobLease = config.jobLease();
            heartbeatInterval = config.heartbeatInterval();
            pollInterval = config.pollInterval();
            rescueInterval = config.rescueInterval();
            maxStalls = config.maxStalls();
            drainTimeout = config.drainTimeout();
            retention = config.retention();
            maxPayloadBytes = config.maxPayloadBytes();
            unhandledKindTimeout = config.unhandledKindTimeout();
        }

        /**
         * Work {@code queue} with up to {@code concurrency} handlers at once on this node. A slot is free again when
         * its handler returns; up to as many more attempts may wait for their outcome to be recorded (their rows
         * stay in state {@code running} until it is), so one batch's outcomes are written while the next is claimed.
         */
        public Builder queue(String queue, int concurrency) {
            queues.put(JobRequest.validQueue(queue), concurrency);
            return this;
        }

        /** See {@link WorkerConfig#jobLease()}; default {@link #DEFAULT_JOB_LEASE}. */
        public Builder jobLease(Duration v) {
            jobLease = v;
            return this;
        }

        /** See {@link WorkerConfig#heartbeatInterval()}; default {@link #DEFAULT_HEARTBEAT_INTERVAL}. */
        public Builder heartbeatInterval(Duration v) {
            heartbeatInterval = v;
            return this;
        }

        /** See {@link WorkerConfig#pollInterval()}; default {@link #DEFAULT_POLL_INTERVAL}. */
        public Builder pollInterval(Duration v) {
            pollInterval = v;
            return this;
        }

        /** See {@link WorkerConfig#rescueInterval()}; default {@link #DEFAULT_RESCUE_INTERVAL}. */
        public Builder rescueInterval(Duration v) {
            rescueInterval = v;
            return this;
        }

        /** See {@link WorkerConfig#maxStalls()}; default {@link #DEFAULT_MAX_STALLS}. */
        public Builder maxStalls(int v) {
            maxStalls = v;
            return this;
        }

        /** See {@link WorkerConfig#drainTimeout()}; default {@link #DEFAULT_DRAIN_TIMEOUT}. */
        public Builder drainTimeout(Duration v) {
            drainTimeout = v;
            return this;
        }

        /** See {@link WorkerConfig#retention()}; default {@link #DEFAULT_RETENTION}. */
        public Builder retention(Duration v) {
            retention = v;
            return this;
        }

        /** See {@link WorkerConfig#maxPayloadBytes()}; default {@link #DEFAULT_MAX_PAYLOAD_BYTES}. */
        public Builder maxPayloadBytes(int v) {
            maxPayloadBytes = v;
            return this;
        }

        /** See {@link WorkerConfig#unhandledKindTimeout()}; default {@link #DEFAULT_UNHANDLED_KIND_TIMEOUT}. */
        public Builder unhandledKindTimeout(Duration v) {
            unhandledKindTimeout = v;
            return this;
        }

        /** The configuration; throws {@link IllegalArgumentException} naming the rule a value breaks. */
        public WorkerConfig build() {
            return new WorkerConfig(
                    queues,
                    jobLease,
                    heartbeatInterval,
                    pollInterval,
                    rescueInterval,
                    maxStalls,
                    drainTimeout,
                    retention,
                    maxPayloadBytes,
                    unhandledKindTimeout);
        }
    }
}
