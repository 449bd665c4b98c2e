package dev.baton.internal.job;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.PrintWriter;
import java.io.StringWriter;

/**
 * The error record of one failed attempt, as stored in a job's {@code errors} array: built with
 * Jackson and made storable whatever the exception carries. PostgreSQL's {@code jsonb} rejects NUL
 * characters and unpaired surrogates, and a message of megabytes would bloat every row it is appended
 * to, so messages and stacks are cleaned (NUL and lone surrogates become U+FFFD) and bounded.
 */
public final class JobErrors {
    /** Longest message kept, in characters (then "… (trimmed)"). */
    public static final int MAX_MESSAGE_CHARS = 8_000;
    /** Longest stack trace kept, in characters. */
    public static final int MAX_STACK_CHARS = 16_000;

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String TRIMMED = "\n... (trimmed)";

    private JobErrors() {}

    /** The error record of an attempt; {@code e} may be null (no stack). Never throws. */
    public static String json(int attempt, String node, String errorClass, String message, Throwable e) {
        ObjectNode o = JSON.createObjectNode();
        o.put("attempt", attempt);
        o.put("node", clean(node, 200));
        o.put("class", clean(errorClass, 500));
        o.put("message", clean(message, MAX_MESSAGE_CHARS));
        if (e != null) {
            o.put("stack", clean(stack(e), MAX_STACK_CHARS));
        }
        try {
            return JSON.writeValueAsString(o);
        } catch (Exception impossible) {
            return "{\"attempt\":" + attempt + ",\"class\":\"unrecordable\"}";
        }
    }

    /** A record for an attempt whose real error could not be stored (the last resort of a batch). */
    public static String unrecordable(String why) {
        return json(0, null, "unrecordable", "the error of this attempt could not be stored: " + why, null);
    }

    private static String stack(Throwable e) {
        StringWriter w = new StringWriter();
        try {
            e.printStackTrace(new PrintWriter(w));
        } catch (RuntimeException broken) {
            return e.getClass().getName() + " (stack trace unavailable: " + broken + ")";
        }
        return w.toString();
    }

    /**
     * {@code s} without NUL characters and unpaired surrogates (both replaced by U+FFFD), at most
     * {@code max} characters (never splitting a surrogate pair); null stays null.
     */
    public static String clean(String s, int max) {
        if (s == null) {
            return null;
        }
        boolean trimmed = s.length() > max;
        int end = trimmed ? max - TRIMMED.length() : s.length();
        if (trimmed && end > 0 && Character.isHighSurrogate(s.charAt(end - 1))) {
            end--; // keep the pair together: drop its first half rather than split it
        }
        StringBuilder out = null;
        for (int i = 0; i < end; i++) {
            char ch = s.charAt(i);
            boolean bad = ch == '\u0000'
                    || Character.isHighSurrogate(ch) && (i + 1 >= end || !Character.isLowSurrogate(s.charAt(i + 1)))
                    || Character.isLowSurrogate(ch) && (i == 0 || !Character.isHighSurrogate(s.charAt(i - 1)));
            if (bad && out == null) {
                out = new StringBuilder(end + TRIMMED.length());
                out.append(s, 0, i);
            }
            if (out != null) {
                out.append(bad ? '\uFFFD' : ch);
            }
        }
        String body = out != null ? out.toString() : s.substring(0, end);
        return trimmed ? body + TRIMMED : body;
    }
}
