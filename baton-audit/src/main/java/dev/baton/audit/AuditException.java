package dev.baton.audit;

/**
 * The audit could not run: a path is missing or unreadable, a jar is corrupt, or an exclusions file
 * is invalid. The message names the bad value, the rule and the fix.
 */
public final class AuditException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public AuditException(String message) {
        super(message);
    }

    public AuditException(String message, Throwable cause) {
        super(message, cause);
    }
}
