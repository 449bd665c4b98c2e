package dev.baton.audit;

import java.util.List;
import java.util.Objects;
import java.util.Set;
import org.objectweb.asm.Handle;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.Type;
import org.objectweb.asm.tree.AbstractInsnNode;
import org.objectweb.asm.tree.FieldInsnNode;
import org.objectweb.asm.tree.InvokeDynamicInsnNode;
import org.objectweb.asm.tree.LdcInsnNode;
import org.objectweb.asm.tree.MethodInsnNode;
import org.objectweb.asm.tree.TypeInsnNode;
import org.objectweb.asm.tree.analysis.AnalyzerException;
import org.objectweb.asm.tree.analysis.BasicInterpreter;
import org.objectweb.asm.tree.analysis.BasicValue;
import org.objectweb.asm.tree.analysis.Interpreter;

/**
 * Tracks {@link Origin}s through one method and reports, through {@link Sink}, every mutating call
 * whose receiver is one of this class's fields (or a view of one), and every file write with what its
 * path was made of. Value sizes come from ASM's {@link BasicInterpreter}, so only origins are ours.
 */
final class OriginInterpreter extends Interpreter<Origin> {
    interface Sink {
        void mutation(String field, String what, AbstractInsnNode insn);

        void fileWrite(String api, Origin path, AbstractInsnNode insn);

        /** A constructor call ({@code new C(...)}, {@code super(...)}, {@code this(...)}) and what its arguments are. */
        default void construction(MethodInsnNode init, List<? extends Origin> args) {}
    }

    /** Calls that change the receiver: collections, maps, queues, caches, atomics, adders. */
    static final Set<String> MUTATORS = Set.of(
            "put",
            "putAll",
            "putIfAbsent",
            "remove",
            "removeIf",
            "removeAll",
            "retainAll",
            "clear",
            "compute",
            "computeIfAbsent",
            "computeIfPresent",
            "merge",
            "replace",
            "replaceAll",
            "add",
            "addAll",
            "addFirst",
            "addLast",
            "offer",
            "offerFirst",
            "offerLast",
            "poll",
            "pollFirst",
            "pollLast",
            "pollFirstEntry",
            "pollLastEntry",
            "pop",
            "push",
            "set",
            "sort",
            "take",
            "drainTo",
            "transfer",
            "removeFirst",
            "removeLast",
            "removeFirstOccurrence",
            "removeLastOccurrence",
            "putFirst",
            "putLast",
            "replaceValues",
            "invalidate",
            "invalidateAll",
            "refresh",
            "cleanUp",
            "incrementAndGet",
            "getAndIncrement",
            "decrementAndGet",
            "getAndDecrement",
            "addAndGet",
            "getAndAdd",
            "lazySet",
            "setPlain",
            "setRelease",
            "setOpaque",
            "compareAndSet",
            "weakCompareAndSet",
            "weakCompareAndSetPlain",
            "weakCompareAndSetVolatile",
            "weakCompareAndSetAcquire",
            "weakCompareAndSetRelease",
            "compareAndExchange",
            "compareAndExchangeAcquire",
            "compareAndExchangeRelease",
            "getAndSet",
            "updateAndGet",
            "getAndUpdate",
            "accumulateAndGet",
            "getAndAccumulate",
            "increment",
            "decrement",
            "reset",
            "sumThenReset",
            "accumulate");

    /** Calls whose result is a live view of the receiver: mutating the view mutates the field. */
    static final Set<String> VIEWS = Set.of(
            "values",
            "keySet",
            "entrySet",
            "iterator",
            "listIterator",
            "subList",
            "headMap",
            "tailMap",
            "subMap",
            "headSet",
            "tailSet",
            "subSet",
            "descendingMap",
            "descendingSet",
            "navigableKeySet",
            "descendingKeySet",
            "descendingIterator",
            "asMap",
            "asList",
            "reversed",
            "spliterator",
            "elementSet");

    /** Static helpers that mutate their first argument. */
    private static final Set<String> COLLECTIONS_MUTATORS =
            Set.of("addAll", "sort", "shuffle", "reverse", "swap", "fill", "rotate", "copy");

    private final String owner;
    private final Sink sink;
    private final BasicInterpreter sizes = new BasicInterpreter();
    /** Track static types and parameters (for constructor arguments); off for the mutation pass alone. */
    private final boolean types;
    /** Parameter index by local variable slot, for {@link #types}. */
    private final int[] paramOfLocal;

    OriginInterpreter(String owner, Sink sink) {
        this(owner, sink, null, false);
    }

    OriginInterpreter(String owner, Sink sink, String methodDesc, boolean isStatic) {
        super(Opcodes.ASM9);
        this.owner = owner;
        this.sink = sink;
        this.types = methodDesc != null;
        if (types) {
            Type[] args = Type.getArgumentTypes(methodDesc);
            int slots = isStatic ? 0 : 1;
            for (Type a : args) {
                slots += a.getSize();
            }
            paramOfLocal = new int[slots];
            java.util.Arrays.fill(paramOfLocal, -1);
            int slot = isStatic ? 0 : 1;
            for (int i = 0; i < args.length; i++) {
                paramOfLocal[slot] = i;
                slot += args[i].getSize();
            }
        } else {
            paramOfLocal = new int[0];
        }
    }

    private String typeOf(Type t) {
        return types && t.getSort() == Type.OBJECT ? t.getInternalName() : null;
    }

    private Origin withType(Origin o, Type t) {
        String name = typeOf(t);
        return name == null || o == null ? o : o.typed(name);
    }

    @Override
    public Origin newParameterValue(boolean isInstanceMethod, int local, Type type) {
        Origin v = newValue(type);
        if (types
                && v != null
                && local < paramOfLocal.length
                && paramOfLocal[local] >= 0
                && type.getSort() == Type.OBJECT) {
            return new Origin(v.size, null, 0, null, type.getInternalName(), paramOfLocal[local]);
        }
        return v;
    }

    private static Origin sized(BasicValue v) {
        return v == null ? null : Origin.plain(v.getSize());
    }

    private static BasicValue basic(Origin v) {
        return v == null ? null : v.size == 2 ? BasicValue.LONG_VALUE : BasicValue.REFERENCE_VALUE;
    }

    @Override
    public Origin newValue(Type type) {
        if (type == null) {
            return Origin.ONE;
        }
        if (type.getSort() == Type.VOID) {
            return null;
        }
        return Origin.plain(type.getSize());
    }

    @Override
    public Origin newOperation(AbstractInsnNode insn) throws AnalyzerException {
        switch (insn.getOpcode()) {
            case Opcodes.GETSTATIC -> {
                FieldInsnNode f = (FieldInsnNode) insn;
                int size = Type.getType(f.desc).getSize();
                Origin v = f.owner.equals(owner)
                        ? new Origin(size, f.owner + "." + f.name, Origin.FROM_FIELD, null)
                        : Origin.plain(size);
                return withType(v, Type.getType(f.desc));
            }
            case Opcodes.LDC -> {
                Object c = ((LdcInsnNode) insn).cst;
                if (c instanceof String) {
                    return new Origin(1, null, Origin.CONST, null);
                }
                return Origin.plain(c instanceof Long || c instanceof Double ? 2 : 1);
            }
            case Opcodes.NEW -> {
                return new Origin(1, null, 0, insn, types ? ((TypeInsnNode) insn).desc : null, -1);
            }
            default -> {
                return sized(sizes.newOperation(insn));
            }
        }
    }

    @Override
    public Origin copyOperation(AbstractInsnNode insn, Origin value) {
        return value;
    }

    @Override
    public Origin unaryOperation(AbstractInsnNode insn, Origin value) throws AnalyzerException {
        int op = insn.getOpcode();
        if (op == Opcodes.GETFIELD) {
            FieldInsnNode f = (FieldInsnNode) insn;
            int size = Type.getType(f.desc).getSize();
            Origin v = f.owner.equals(owner)
                    ? new Origin(size, f.owner + "." + f.name, Origin.FROM_FIELD, null)
                    : Origin.plain(size);
            return withType(v, Type.getType(f.desc));
        }
        if (op == Opcodes.CHECKCAST) {
            String cast = ((TypeInsnNode) insn).desc;
            return types && value != null && !cast.startsWith("[") ? value.typed(cast) : value;
        }
        return sized(sizes.unaryOperation(insn, basic(value)));
    }

    @Override
    public Origin binaryOperation(AbstractInsnNode insn, Origin value1, Origin value2) throws AnalyzerException {
        return sized(sizes.binaryOperation(insn, basic(value1), basic(value2)));
    }

    @Override
    public Origin ternaryOperation(AbstractInsnNode insn, Origin value1, Origin value2, Origin value3) {
        // xASTORE: writing into an array read from a field mutates the field's state.
        if (value1 != null && value1.field != null) {
            sink.mutation(value1.field, "[]=", insn);
        }
        return null;
    }

    @Override
    public Origin naryOperation(AbstractInsnNode insn, List<? extends Origin> values) throws AnalyzerException {
        if (insn instanceof MethodInsnNode m) {
            return call(m, values);
        }
        if (insn instanceof InvokeDynamicInsnNode indy) {
            // A bound method reference such as seen::add captures the field as its receiver.
            if (indy.bsmArgs.length > 1 && indy.bsmArgs[1] instanceof Handle h && !values.isEmpty()) {
                Origin captured = values.get(0);
                if (captured != null && captured.field != null && MUTATORS.contains(h.getName())) {
                    sink.mutation(captured.field, h.getName() + " (method reference)", insn);
                }
            }
            if (values.isEmpty() && indy.bsm.getOwner().equals("java/lang/invoke/LambdaMetafactory")) {
                return new Origin(1, null, Origin.KEY_FUNCTION, null);
            }
            return Origin.plain(Type.getReturnType(indy.desc).getSize());
        }
        return sized(sizes.naryOperation(insn, null));
    }

    private Origin call(MethodInsnNode m, List<? extends Origin> values) {
        Type ret = Type.getReturnType(m.desc);
        Origin result = ret.getSort() == Type.VOID ? null : withType(Origin.plain(ret.getSize()), ret);
        boolean isStatic = m.getOpcode() == Opcodes.INVOKESTATIC;
        Origin receiver = isStatic || values.isEmpty() ? null : values.get(0);
        if (types && m.name.equals("<init>") && !values.isEmpty()) {
            sink.construction(m, values.subList(1, values.size()));
        }
        if (receiver != null && receiver.field != null && !m.name.equals("<init>")) {
            if (MUTATORS.contains(m.name)) {
                String what = receiver.has(Origin.ELEMENT) ? m.name + " on a computeIfAbsent value" : m.name;
                if (m.name.equals("computeIfAbsent")
                        && values.size() == 3
                        && (values.get(2) == null || !values.get(2).has(Origin.KEY_FUNCTION))) {
                    what = "computeIfAbsent (with a capturing function)";
                }
                sink.mutation(receiver.field, what, m);
                if (m.name.equals("computeIfAbsent") && result != null) {
                    // The value stored for the key: adding to it (a multimap) changes the field's state too.
                    return new Origin(1, receiver.field, Origin.FROM_FIELD | Origin.ELEMENT, null);
                }
            } else if (VIEWS.contains(m.name) && result != null) {
                return new Origin(1, receiver.field, Origin.FROM_FIELD, null);
            }
        }
        if (isStatic
                && m.owner.equals("java/util/Collections")
                && COLLECTIONS_MUTATORS.contains(m.name)
                && !values.isEmpty()
                && values.get(0) != null
                && values.get(0).field != null) {
            sink.mutation(values.get(0).field, "Collections." + m.name, m);
        }
        // Paths: what a path value was made of, and file writes.
        FileApis.Kind kind = FileApis.classify(m);
        if (kind == FileApis.Kind.PATH_FROM_ARGS && result != null) {
            // Paths.get(first, more...): the first segment decides where the file lives; the varargs
            // array is built element by element and is not tracked.
            boolean varargs = isStatic && m.desc.contains("[Ljava/lang/String;");
            return new Origin(1, null, pathFlags(varargs ? values.subList(0, 1) : values), null);
        }
        if (kind == FileApis.Kind.TEMP && result != null) {
            return new Origin(1, null, Origin.TEMP, null);
        }
        if (kind == FileApis.Kind.CONSTRUCT_PATH && receiver != null) {
            // new File(...): remember what the allocated object was made of.
            if (receiver.allocation != null) {
                allocationFlags.put(receiver.allocation, pathFlags(values.subList(1, values.size())));
            }
        } else if (kind == FileApis.Kind.WRITE_CONSTRUCTOR && values.size() > 1) {
            sink.fileWrite(FileApis.simple(m.owner), resolve(values.get(1)), m);
        } else if (kind == FileApis.Kind.WRITE_STATIC && !values.isEmpty()) {
            int target = (m.name.equals("copy") || m.name.equals("move")) && values.size() > 1 ? 1 : 0;
            sink.fileWrite("Files." + m.name, resolve(values.get(target)), m);
        }
        return result;
    }

    private final java.util.Map<AbstractInsnNode, Integer> allocationFlags = new java.util.IdentityHashMap<>();

    /** An allocated File's flags are known once its constructor was seen. */
    private Origin resolve(Origin v) {
        if (v != null && v.allocation != null) {
            Integer f = allocationFlags.get(v.allocation);
            if (f != null) {
                return new Origin(1, null, f, null);
            }
        }
        return v;
    }

    /** CONST if every argument was constant, TEMP if any was temporary, FROM_FIELD if any came from a field. */
    private int pathFlags(List<? extends Origin> args) {
        boolean allConst = !args.isEmpty();
        int flags = 0;
        for (Origin a0 : args) {
            Origin a = resolve(a0);
            if (a == null) {
                allConst = false;
                continue;
            }
            if (a.has(Origin.TEMP)) {
                flags |= Origin.TEMP;
            }
            if (a.has(Origin.FROM_FIELD) || a.field != null) {
                flags |= Origin.FROM_FIELD;
            }
            if (!a.has(Origin.CONST)) {
                allConst = false;
            }
        }
        return allConst ? flags | Origin.CONST : flags;
    }

    @Override
    public void returnOperation(AbstractInsnNode insn, Origin value, Origin expected) {
        // nothing to track
    }

    @Override
    public Origin merge(Origin a, Origin b) {
        if (a.equals(b)) {
            return a;
        }
        int size = Math.min(a.size, b.size);
        String field = a.field != null && a.field.equals(b.field) ? a.field : null;
        // A path is constant only if it is on every path; temp or field-derived if on any.
        int flags = (a.flags & b.flags & Origin.CONST) | ((a.flags | b.flags) & (Origin.TEMP | Origin.FROM_FIELD));
        Origin m = new Origin(
                size,
                field,
                flags,
                a.allocation == b.allocation ? a.allocation : null,
                Objects.equals(a.type, b.type) ? a.type : null,
                a.param == b.param ? a.param : -1);
        return m.equals(a) ? a : m;
    }
}
