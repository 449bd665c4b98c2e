package dev.baton.spring;

/** A {@code baton.*} property (or annotation attribute) has a value Baton refuses; names it and the rule. */
public class InvalidBatonPropertyException extends IllegalStateException {
    private static final long serialVersionUID = 1L;
    private final String property;
    private final transient Object value;
    private final String rule;

    public InvalidBatonPropertyException(String property, Object value, String rule, Throwable cause) {
        super((value == null ? "Invalid " : "Invalid value '" + value + "' for ") + property + ": " + rule, cause);
        this.property = property;
        this.value = value;
        this.rule = rule;
    }

    public String property() {
        return property;
    }

    public Object value() {
        return value;
    }

    public String rule() {
        return rule;
    }

    /** Runs {@code step}; an {@link IllegalArgumentException} becomes this exception naming {@code property}. */
    static void check(String property, Object value, Runnable step) {
        try {
            step.run();
        } catch (IllegalArgumentException e) {
            throw new InvalidBatonPropertyException(property, value, e.getMessage(), e);
        }
    }
}
