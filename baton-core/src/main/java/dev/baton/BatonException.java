package dev.baton;

/** Base class of the exceptions Baton throws for conditions a caller may want to handle. */
public class BatonException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** An exception with {@code message}. */
    public BatonException(String message) {
        super(message);
    }

    /** An exception with {@code message}, caused by {@code cause}. */
    public BatonException(String message, Throwable cause) {
        super(message, cause);
    }
}
