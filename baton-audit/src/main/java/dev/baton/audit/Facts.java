package dev.baton.audit;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What the collector keeps of one class: its header for the type hierarchy, and for a class that is
 * reported, the facts the rules need (the ASM tree is dropped right after collection, so memory stays
 * proportional to the facts, not to the bytecode).
 */
final class Facts {
    private Facts() {}

    static final long[] NO_KEYS = new long[0];

    /**
     * The key of a call that does not dispatch ({@code invokespecial}, {@code invokestatic}): a
     * {@code super.init()} reaches the superclass's method only, never an override.
     */
    static long directKey(String owner, String name, String desc) {
        return key("=", owner, name, desc);
    }

    /** A 64-bit FNV-1a hash of the given parts: call sites and methods are matched by it, not by strings kept in memory. */
    static long key(String... parts) {
        long h = 0xcbf29ce484222325L;
        for (String part : parts) {
            for (int i = 0; i < part.length(); i++) {
                h ^= part.charAt(i);
                h *= 0x100000001b3L;
            }
            h ^= '|';
            h *= 0x100000001b3L;
        }
        return h;
    }

    /** The header of every class read, reported or library: enough for subtype and meta-annotation checks. */
    static final class Header {
        final String name;
        final String superName;
        final String[] interfaces;
        final int access;
        final List<String> annotations;
        ClassFacts facts; // null for a library class
        /**
         * For a library class: {@link #key} of each non-private instance method's name and descriptor,
         * sorted, so an application method overriding one of them is known to be callable from outside
         * the scanned code. Null for an application class (its methods are in {@link #facts}).
         */
        long[] methodKeys;

        Header(String name, String superName, String[] interfaces, int access, List<String> annotations) {
            this.name = name;
            this.superName = superName;
            this.interfaces = interfaces == null ? new String[0] : interfaces;
            this.access = access;
            this.annotations = annotations;
        }
    }

    /**
     * A use of a field: in which method (for display: {@code register (lambda)}), what, on which line,
     * and the method's own name and descriptor (to find who calls it).
     */
    record Use(String method, String what, int line, String methodName, String methodDesc) {}

    /** A call site kept because its name is one the rules look at, or because it targets the same class. */
    record Call(int opcode, String owner, String name, String desc, int line) {}

    /**
     * What a constructor argument was, where the rules may need it (collection-typed parameters): the
     * type it was allocated as ({@code new ConcurrentHashMap}), else the static type its producer
     * declares ({@code hazelcast.getMap(...)} returns {@code IMap}), and the caller's parameter it is, or -1.
     */
    record Arg(String allocated, String type, int param) {}

    /** A constructor call: {@code new owner(...)}, or {@code super(...)}/{@code this(...)} in a constructor. */
    record Construction(String owner, String desc, Arg[] args, int line) {}

    /** A file write: the API used, whether the path was a constant, configured (from a field) or a temp file. */
    record FileWrite(String api, String pathKind, String path, int line) {}

    static final class ClassFacts {
        final String name;
        final String sourceFile;
        final int access;
        final Map<String, FieldFacts> fields = new LinkedHashMap<>();
        final List<MethodFacts> methods = new ArrayList<>();
        /** Line of a reference to Quartz's in-memory job store (type, string or instantiation), or 0. */
        int ramJobStoreLine;

        ClassFacts(String name, String sourceFile, int access) {
            this.name = name;
            this.sourceFile = sourceFile;
            this.access = access;
        }
    }

    static final class FieldFacts {
        final String name;
        final String desc;
        final String signature;
        final int access;
        /** First write in an initializer: its line and method, or 0/null. */
        int initLine;

        String initMethod;
        /** First read anywhere: its line, or 0. */
        int firstUseLine;
        /** What initializers assigned: "new java/util/HashMap", "call java/util/Map.of". */
        final Set<String> assigned = new LinkedHashSet<>();
        /** Mutating calls on the field (or a view of it) outside initializers. */
        final List<Use> mutations = new ArrayList<>();
        /** Assignments to the field outside initializers. */
        final List<Use> reassignments = new ArrayList<>();
        /** Constructor descriptor to the index of the parameter stored in this field ({@code this.map = map}). */
        final Map<String, Integer> fromParam = new LinkedHashMap<>(1);

        FieldFacts(String name, String desc, String signature, int access) {
            this.name = name;
            this.desc = desc;
            this.signature = signature;
            this.access = access;
        }
    }

    static final class MethodFacts {
        final String name;
        final String desc;
        final int access;
        final List<String> annotations;
        final List<String> parameterTypes;
        int firstLine;
        final List<Call> calls = new ArrayList<>();
        /** Types instantiated here (NEW), with the line of the first one. */
        final Map<String, Integer> news = new LinkedHashMap<>();

        final List<FileWrite> fileWrites = new ArrayList<>();
        /** Constructor calls passing a collection-typed argument, with what each such argument was. */
        final List<Construction> constructions = new ArrayList<>(0);
        /** A backward jump: the method contains a loop. */
        boolean loop;
        /** MONITORENTER: a synchronized block. */
        int monitorLine;
        /** Runs only while the object is being built (constructor, static initializer, their private helpers, @PostConstruct). */
        boolean initializer;
        /** A fluent builder method ({@code return this}-style): treated as an initializer of its own object only. */
        boolean fluent;
        /** {@link #key} of every method this one invokes ({@code owner.name desc}), {@link #directKey} if it does not dispatch. */
        long[] callKeys = NO_KEYS;
        /** {@link #key} of every method this one takes a reference to ({@code this::register}): called from anywhere. */
        long[] referenceKeys = NO_KEYS;

        MethodFacts(String name, String desc, int access, List<String> annotations, List<String> parameterTypes) {
            this.name = name;
            this.desc = desc;
            this.access = access;
            this.annotations = annotations;
            this.parameterTypes = parameterTypes;
        }

        boolean annotated(String type) {
            return annotations.contains(type);
        }
    }
}
