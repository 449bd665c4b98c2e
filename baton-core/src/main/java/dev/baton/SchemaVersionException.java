package dev.baton;

/** The Baton schema in the database is not one this version of Baton can run against. */
public class SchemaVersionException extends BatonException {
    private static final long serialVersionUID = 1L;

    /** The schema version found in the database. */
    private final int found;
    /** The newest schema version this Baton supports. */
    private final int supported;

    /** The schema is at version {@code found}; this Baton supports up to {@code supported}. */
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
