package dev.baton.console;

import dev.baton.LeaseHistoryEntry;
import dev.baton.LeaseInfo;
import dev.baton.ThroughputBucket;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.ToLongFunction;

/**
 * The geometry of the console's charts, drawn by the templates as inline SVG (no script, no chart library):
 * numbers only; labels go through {@code th:text} like every other value.
 */
final class Charts {
    static final int BAR_WIDTH = 720;
    static final int BAR_HEIGHT = 120;
    static final int TIMELINE_WIDTH = 760;
    static final int TIMELINE_LABEL = 220;
    static final int TIMELINE_ROW = 18;
    /** Owners get one of this many colours (classes o0 to o5 in console.css), by a hash of their id. */
    static final int OWNER_COLOURS = 6;

    private Charts() {}

    /** One bar per bucket, its height {@code value} scaled to the largest bucket. */
    static Map<String, Object> bars(
            List<ThroughputBucket> buckets, ToLongFunction<ThroughputBucket> value, String what) {
        long max = 0;
        for (ThroughputBucket b : buckets) {
            max = Math.max(max, value.applyAsLong(b));
        }
        List<Map<String, Object>> bars = new ArrayList<>();
        int n = Math.max(1, buckets.size());
        double w = (double) BAR_WIDTH / n;
        for (int i = 0; i < buckets.size(); i++) {
            ThroughputBucket b = buckets.get(i);
            long v = value.applyAsLong(b);
            double h = max == 0 ? 0 : (double) v * (BAR_HEIGHT - 2) / max;
            bars.add(Pages.row(
                    "x", fmt(i * w + 0.5),
                    "y", fmt(BAR_HEIGHT - h),
                    "w", fmt(Math.max(1, w - 1)),
                    "h", fmt(h),
                    "title", Pages.time(b.start()) + ": " + v + " " + what));
        }
        return Pages.row("width", BAR_WIDTH, "height", BAR_HEIGHT, "max", max, "bars", bars);
    }

    /**
     * The lease's terms on one time axis, oldest generation at the top: each bar runs from the term's
     * acquisition to its end (the next owner's takeover or a release), the live term to the database's now,
     * and a term that expired without a takeover to its expiry.
     */
    static Map<String, Object> timeline(LeaseInfo lease, List<LeaseHistoryEntry> newestFirst) {
        List<LeaseHistoryEntry> terms = new ArrayList<>(newestFirst);
        java.util.Collections.reverse(terms);
        Instant now = lease.dbNow();
        Instant from = terms.isEmpty() ? now : terms.get(0).acquiredAt();
        double span = Math.max(1, Duration.between(from, now).toMillis());
        double plot = TIMELINE_WIDTH - TIMELINE_LABEL - 10;
        List<Map<String, Object>> rows = new ArrayList<>();
        for (int i = 0; i < terms.size(); i++) {
            LeaseHistoryEntry t = terms.get(i);
            Instant end = end(lease, terms, i);
            double x0 = Duration.between(from, t.acquiredAt()).toMillis() / span * plot;
            double x1 = Duration.between(from, end).toMillis() / span * plot;
            int y = i * TIMELINE_ROW;
            rows.add(Pages.row(
                    "labelY", y + 13,
                    "label", "gen " + t.generation() + "  " + Pages.clip(t.owner(), 24),
                    "x", fmt(TIMELINE_LABEL + x0),
                    "y", y + 3,
                    "w", fmt(Math.max(2, x1 - x0)),
                    "h", TIMELINE_ROW - 6,
                    "cls", "term o" + Math.floorMod(t.owner().hashCode(), OWNER_COLOURS),
                    "title",
                            "generation " + t.generation() + ": " + t.owner() + ", " + Pages.time(t.acquiredAt())
                                    + " to " + Pages.time(end) + " ("
                                    + t.endReason().orElse(end.equals(now) ? "current" : "expired") + ")"));
        }
        return Pages.row(
                "width",
                TIMELINE_WIDTH,
                "height",
                Math.max(TIMELINE_ROW, terms.size() * TIMELINE_ROW) + 4,
                "rows",
                rows,
                "from",
                Pages.time(from),
                "to",
                Pages.time(now));
    }

    private static Instant end(LeaseInfo lease, List<LeaseHistoryEntry> terms, int i) {
        LeaseHistoryEntry t = terms.get(i);
        if (t.endedAt().isPresent()) {
            return t.endedAt().get();
        }
        if (i + 1 < terms.size()) {
            return terms.get(i + 1).acquiredAt();
        }
        // The latest term: live until its expiry on the database clock.
        return lease.held() || lease.expiresAt().isAfter(lease.dbNow()) ? lease.dbNow() : lease.expiresAt();
    }

    private static String fmt(double v) {
        return String.format(java.util.Locale.ROOT, "%.1f", v);
    }
}
