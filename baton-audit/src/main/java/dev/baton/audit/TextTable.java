package dev.baton.audit;

import java.util.List;

/**
 * Plain-text rows in aligned columns, two spaces apart and indented by two: the audit's console report
 * and the CLI's other reports print their tables with it.
 */
public final class TextTable {

    private TextTable() {}

    /** Appends {@code rows} (the first is the header; every row has the same number of cells) to {@code sb}. */
    public static void render(StringBuilder sb, List<String[]> rows) {
        int[] width = new int[rows.get(0).length];
        for (String[] r : rows) {
            for (int i = 0; i < r.length; i++) {
                width[i] = Math.max(width[i], r[i].length());
            }
        }
        for (String[] r : rows) {
            StringBuilder line = new StringBuilder("  ");
            for (int i = 0; i < r.length; i++) {
                line.append(r[i]);
                if (i + 1 < r.length) {
                    line.append(" ".repeat(width[i] - r[i].length() + 2));
                }
            }
            sb.append(line.toString().stripTrailing()).append('\n');
        }
    }
}
