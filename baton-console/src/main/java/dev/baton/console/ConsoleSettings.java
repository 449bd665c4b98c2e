package dev.baton.console;

/**
 * How a console is mounted: whether it may act at all, and who may look and act ({@link ConsoleAccess}).
 * The console's base path is the path it is mounted at (the servlet's context and servlet path), read from
 * each request, so one servlet works at {@code /} (standalone) and at {@code /baton} (Spring).
 *
 * @param actionsEnabled false: a read-only console; every action is refused, whoever asks, and no action
 *                       control is shown
 * @param access         who may look and who may act
 */
public record ConsoleSettings(boolean actionsEnabled, ConsoleAccess access) {
    /** Checks the values. */
    public ConsoleSettings {
        if (access == null) {
            throw new IllegalArgumentException(
                    "access must be set (ConsoleAccess.token, role, open or viewOnly), " + "but was null");
        }
    }

    /** A read-only console behind {@code access}. */
    public static ConsoleSettings readOnly(ConsoleAccess access) {
        return new ConsoleSettings(false, access);
    }

    /** A console whose actions {@code access} authorizes. */
    public static ConsoleSettings withActions(ConsoleAccess access) {
        return new ConsoleSettings(true, access);
    }
}
