package dev.baton.bench;

import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * Tees standard error (where slf4j-simple writes) and counts Baton's warnings by kind, so a run that
 * "worked" but deadlocked, lost heartbeats or rescued jobs says so in its report.
 */
final class LogWatch {
    private static final Map<String, LongAdder> COUNTS = new ConcurrentHashMap<>();
    /** Substrings of Baton's log messages worth counting, and the name they are reported under. */
    private static final Map<String, String> KINDS = Map.of(
            "deadlock detected", "deadlock detected",
            "recording", "recording job outcomes failed",
            "heartbeat of", "job heartbeat not confirmed",
            "rescued", "expired attempts rescued (log lines)",
            "is no longer current", "attempt lost",
            "claiming from queue", "claim failed");

    private LogWatch() {}

    static void install() {
        PrintStream original = System.err;
        System.setErr(new PrintStream(
                new OutputStream() {
                    private final StringBuilder line = new StringBuilder();

                    @Override
                    public synchronized void write(int b) {
                        original.write(b);
                        if (b == '\n') {
                            inspect(line.toString());
                            line.setLength(0);
                        } else if (line.length() < 2000) {
                            line.append((char) b);
                        }
                    }

                    @Override
                    public synchronized void write(byte[] b, int off, int len) {
                        for (int i = off; i < off + len; i++) {
                            write(b[i]);
                        }
                    }

                    @Override
                    public void flush() {
                        original.flush();
                    }
                },
                true,
                StandardCharsets.UTF_8));
    }

    private static void inspect(String line) {
        boolean warn = line.contains(" WARN ");
        boolean error = line.contains(" ERROR ");
        if (warn || error) {
            count(error ? "ERROR lines" : "WARN lines");
        }
        KINDS.forEach((needle, name) -> {
            if (line.contains(needle) && (warn || error || needle.startsWith("deadlock"))) {
                count(name);
            }
        });
    }

    private static void count(String name) {
        COUNTS.computeIfAbsent(name, k -> new LongAdder()).increment();
    }

    /** Counts so far, by name. */
    static Map<String, Long> snapshot() {
        Map<String, Long> out = new TreeMap<>();
        COUNTS.forEach((k, v) -> out.put(k, v.sum()));
        return out;
    }

    static Map<String, Long> since(Map<String, Long> before) {
        Map<String, Long> out = new TreeMap<>();
        snapshot().forEach((k, v) -> {
            long d = v - before.getOrDefault(k, 0L);
            if (d > 0) {
                out.put(k, d);
            }
        });
        return out;
    }
}
