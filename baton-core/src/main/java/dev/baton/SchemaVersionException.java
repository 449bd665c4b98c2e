package dev.baton;

/** The Baton schema in the database is not one this version of Baton can run against. */
public class SchemaVersionException extends BatonException {
    private static final long serialVersionUID = 1L;

    private final int found;
    private final int supported;

    public SchemaVersionException(String message, int found, int supported) {
        super(message);
        this.found = found;
        this.supported = supported;
    }

    /** The version recorded in the database (0 when the schema is not installed). */
    public int found() {
        return found;
    }

    /** The newest version this Baton understands. */
    public int supported() {
        return supported;
    }
}
