package dev.baton.cli;

/** A failure the command reports as one line on stderr, with its exit code. */
final class CliException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final int exitCode;

    CliException(int exitCode, String message) {
        super(message);
        this.exitCode = exitCode;
    }

    CliException(int exitCode, String message, Throwable cause) {
        super(message, cause);
        this.exitCode = exitCode;
    }

    int exitCode() {
        return exitCode;
    }

    /** Usage or connection problem: exit code 2. */
    static CliException usage(String message) {
        return new CliException(Main.EXIT_USAGE, message);
    }
}
