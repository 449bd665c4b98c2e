package dev.baton.audit;

import java.util.Objects;
import org.objectweb.asm.tree.AbstractInsnNode;
import org.objectweb.asm.tree.analysis.Value;

/**
 * An abstract value for the data-flow pass: where a stack or local value came from. Only what the
 * rules need is tracked: the field it was read from (or a view of that field, such as
 * {@code map.values()}), whether it is a path or string built from constants, a temporary file, or
 * derived from a field, and the NEW instruction that created it.
 */
final class Origin implements Value {
    static final int CONST = 1;
    static final int TEMP = 2;
    static final int FROM_FIELD = 4;
    /** A lambda or method reference that captures nothing: what it computes comes from its arguments only. */
    static final int KEY_FUNCTION = 8;
    /** A value stored in the field's collection ({@code map.computeIfAbsent(k, f)}'s result): changing it changes the field's state. */
    static final int ELEMENT = 16;

    static final Origin ONE = new Origin(1, null, 0, null);
    static final Origin TWO = new Origin(2, null, 0, null);

    final int size;
    /** {@code owner.name} of the field this value is (or is a view of), or null. */
    final String field;

    final int flags;
    /** The NEW instruction that allocated this object, or null. */
    final AbstractInsnNode allocation;
    /**
     * The static type the producing instruction declares (a call's return type, a field's type, a
     * cast, a parameter's declared type), internal name; null if unknown or not tracked.
     */
    final String type;
    /** The index of the method parameter this value is, or -1. */
    final int param;

    Origin(int size, String field, int flags, AbstractInsnNode allocation) {
        this(size, field, flags, allocation, null, -1);
    }

    Origin(int size, String field, int flags, AbstractInsnNode allocation, String type, int param) {
        this.size = size;
        this.field = field;
        this.flags = flags;
        this.allocation = allocation;
        this.type = type;
        this.param = param;
    }

    Origin typed(String t) {
        return Objects.equals(t, type) ? this : new Origin(size, field, flags, allocation, t, param);
    }

    static Origin plain(int size) {
        return size == 2 ? TWO : ONE;
    }

    boolean has(int flag) {
        return (flags & flag) != 0;
    }

    @Override
    public int getSize() {
        return size;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Origin other
                && size == other.size
                && flags == other.flags
                && param == other.param
                && Objects.equals(field, other.field)
                && allocation == other.allocation
                && Objects.equals(type, other.type);
    }

    @Override
    public int hashCode() {
        return Objects.hash(size, field, flags, type, param) * 31 + System.identityHashCode(allocation);
    }
}
