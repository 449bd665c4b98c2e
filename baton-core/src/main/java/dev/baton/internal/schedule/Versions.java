package dev.baton.internal.schedule;

/** Compares application versions naturally: "1.10.0" > "1.9.2", "2.0" > "2.0-rc1" is not attempted. */
public final class Versions {
    private Versions() {}

    /** Negative, zero or positive as {@code a} is older, equal or newer than {@code b}. */
    public static int compare(String a, String b) {
        String[] x = a.split("[.\\-+_]");
        String[] y = b.split("[.\\-+_]");
        for (int i = 0; i < Math.max(x.length, y.length); i++) {
            String p = i < x.length ? x[i] : "0";
            String q = i < y.length ? y[i] : "0";
            int c;
            if (p.matches("\\d{1,18}") && q.matches("\\d{1,18}")) {
                c = Long.compare(Long.parseLong(p), Long.parseLong(q));
            } else {
                c = p.compareTo(q);
            }
            if (c != 0) {
                return c;
            }
        }
        return 0;
    }
}
