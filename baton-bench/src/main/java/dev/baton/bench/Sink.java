package dev.baton.bench;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Where every system's no-op job handler reports (static, because JobRunr and Quartz instantiate their
 * jobs reflectively). Backlog jobs have ids ≥ 0 and are only counted; latency probes have ids &lt; 0 and
 * their start times are kept.
 */
public final class Sink {
    static final AtomicLong RUNS = new AtomicLong();
    static final AtomicLong FIRST = new AtomicLong();
    static final AtomicLong LAST = new AtomicLong();
    static final ConcurrentHashMap<Long, Long> PROBES = new ConcurrentHashMap<>();
    static volatile long target = Long.MAX_VALUE;

    private Sink() {}

    /** The body of every benchmark job: no work, just the record that it started. */
    public static void ran(long id) {
        long now = System.nanoTime();
        if (id < 0) {
            PROBES.putIfAbsent(id, now);
            return;
        }
        FIRST.compareAndSet(0, now);
        if (RUNS.incrementAndGet() == target) {
            LAST.set(now);
        }
    }

    static void reset(long newTarget) {
        target = newTarget;
        RUNS.set(0);
        FIRST.set(0);
        LAST.set(0);
        PROBES.clear();
    }
}
