package dev.baton;

import java.util.List;
import java.util.Optional;
import java.util.function.Function;

/**
 * One page of a list, in the list's order, and the cursor of the next page (empty on the last page).
 * Pass {@code next} as the {@code after} argument of the same list call to continue.
 *
 * @param items the entries of this page (at most the limit asked for)
 * @param next  the cursor of the next page; empty when this is the last page
 */
public record Page<T>(List<T> items, Optional<String> next) {
    /** The largest page any list call returns. */
    public static final int MAX_LIMIT = 1000;

    /** Checks the page's values. */
    public Page {
        items = List.copyOf(items);
    }

    /** A page from up to {@code limit + 1} rows: the extra row, if present, only says there is more. */
    static <T> Page<T> of(List<T> rows, int limit, Function<T, String> cursor) {
        if (rows.size() <= limit) {
            return new Page<>(rows, Optional.empty());
        }
        List<T> items = rows.subList(0, limit);
        return new Page<>(items, Optional.of(cursor.apply(items.get(limit - 1))));
    }

    static void requireLimit(int limit) {
        if (limit < 1 || limit > MAX_LIMIT) {
            throw new IllegalArgumentException("limit must be 1 to " + MAX_LIMIT + ", but was " + limit);
        }
    }
}
