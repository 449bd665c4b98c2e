package dev.baton;

/**
 * This job attempt is no longer current: its lease expired and it was rescued (perhaps claimed
 * again elsewhere), or it was cancelled. Nothing it writes through {@link JobContext#transaction}
 * commits; stop and return.
 */
public class AttemptLostException extends BatonException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public AttemptLostException(String message) {
        super(message);
    }
}
