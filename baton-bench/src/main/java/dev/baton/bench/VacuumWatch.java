package dev.baton.bench;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * Watches, four times a second, whether a VACUUM (autovacuum's or anyone's) is running on a table of one schema,
 * so that a latency report can say which of its slow stretches had a vacuum beside them: on two cores a vacuum of
 * the job table takes most of one for seconds. One connection of its own, one query on pg_stat_progress_vacuum
 * per look.
 */
final class VacuumWatch implements AutoCloseable {
    static final long EVERY_NANOS = 250_000_000L;

    private final Thread thread;
    private final List<long[]> looks = new ArrayList<>(); // {System.nanoTime(), 1 if a vacuum was running else 0}
    private volatile boolean stop;

    private VacuumWatch(Database db, String schema) {
        thread = new Thread(() -> watch(db, schema), "vacuum-watch");
        thread.setDaemon(true);
    }

    static VacuumWatch start(Database db, String schema) {
        VacuumWatch w = new VacuumWatch(db, schema);
        w.thread.start();
        return w;
    }

    private void watch(Database db, String schema) {
        try (Connection c = db.connect();
                PreparedStatement ps = c.prepareStatement("SELECT count(*) FROM pg_stat_progress_vacuum v"
                        + " JOIN pg_class r ON r.oid = v.relid JOIN pg_namespace n ON n.oid = r.relnamespace"
                        + " WHERE n.nspname = ?")) {
            ps.setString(1, schema);
            while (!stop) {
                long at = System.nanoTime();
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    synchronized (looks) {
                        looks.add(new long[] {at, rs.getLong(1) > 0 ? 1 : 0});
                    }
                }
                TimeUnit.NANOSECONDS.sleep(Math.max(0, at + EVERY_NANOS - System.nanoTime()));
            }
        } catch (SQLException e) {
            System.out.println("  vacuum watch failed: " + e.getMessage());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Seconds with a vacuum running on the schema's tables, per window of {@code seconds} from {@code start}
     * (System.nanoTime()), as many windows as {@code windows}: each look stands for the quarter second after it.
     */
    String secondsPerWindow(long start, int seconds, int windows) {
        synchronized (looks) {
            return secondsPerWindow(looks, start, seconds, windows);
        }
    }

    static String secondsPerWindow(List<long[]> looks, long start, int seconds, int windows) {
        double[] per = new double[windows];
        for (long[] l : looks) {
            long w = (l[0] - start) / (seconds * 1_000_000_000L);
            if (l[0] >= start && w < windows && l[1] == 1) {
                per[(int) w] += EVERY_NANOS / 1e9;
            }
        }
        StringBuilder b = new StringBuilder();
        for (double v : per) {
            b.append(b.length() == 0 ? "" : " ").append(String.format(Locale.ROOT, "%.1f", v));
        }
        return b.toString();
    }

    @Override
    public void close() throws InterruptedException {
        stop = true;
        thread.join();
    }
}
