package dev.baton.cli;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine;

/**
 * Parses the durations the command line accepts: {@code 500ms}, {@code 30s}, {@code 1m}, {@code 1m30s},
 * {@code 2h}, {@code 1.5s}, or ISO-8601 such as {@code PT30S}. A bare number is refused (the unit is
 * never guessed).
 */
final class Durations {
    private static final Pattern PART = Pattern.compile("(\\d+(?:\\.\\d+)?)(ms|s|m|h|d)");

    private Durations() {}

    static Duration parse(String text) {
        if (text == null || text.isBlank()) {
            throw new IllegalArgumentException("a duration is required, such as 30s, 500ms, 1m or PT30S");
        }
        String s = text.trim().toLowerCase(Locale.ROOT);
        if (s.startsWith("pt") || s.startsWith("p")) {
            try {
                return nonNegative(text, Duration.parse(s.toUpperCase(Locale.ROOT)));
            } catch (DateTimeParseException e) {
                throw invalid(text);
            }
        }
        Matcher m = PART.matcher(s);
        int at = 0;
        Duration total = Duration.ZERO;
        while (at < s.length()) {
            if (!m.find(at) || m.start() != at) {
                throw invalid(text);
            }
            double value = Double.parseDouble(m.group(1));
            double nanosPerUnit = switch (m.group(2)) {
                case "ms" -> 1e6;
                case "s" -> 1e9;
                case "m" -> 60e9;
                case "h" -> 3600e9;
                default -> 86400e9;
            };
            double nanos = value * nanosPerUnit;
            if (nanos > 365 * 86400e9) {
                throw new IllegalArgumentException("duration '" + text + "' is too long");
            }
            total = total.plusNanos(Math.round(nanos));
            at = m.end();
        }
        return total;
    }

    private static Duration nonNegative(String text, Duration d) {
        if (d.isNegative()) {
            throw new IllegalArgumentException("duration '" + text + "' is negative");
        }
        return d;
    }

    private static IllegalArgumentException invalid(String text) {
        return new IllegalArgumentException("'" + text + "' is not a duration; use a number with a unit "
                + "(500ms, 30s, 1m, 1m30s, 2h) or ISO-8601 (PT30S)");
    }

    /** Short human form: 850 ms, 2.3 s, 1m 30s. */
    static String human(Duration d) {
        long ms = d.toMillis();
        if (ms < 1000) {
            return ms + " ms";
        }
        if (ms < 60_000) {
            return String.format(Locale.ROOT, "%.1f s", ms / 1000.0);
        }
        long s = Math.round(ms / 1000.0);
        return (s / 60) + "m " + (s % 60) + "s";
    }

    /** The picocli converter. */
    static final class Converter implements CommandLine.ITypeConverter<Duration> {
        @Override
        public Duration convert(String value) {
            try {
                return parse(value);
            } catch (IllegalArgumentException e) {
                throw new CommandLine.TypeConversionException(e.getMessage());
            }
        }
    }
}
