package dev.baton.audit;

import dev.baton.audit.Facts.Call;
import dev.baton.audit.Facts.ClassFacts;
import dev.baton.audit.Facts.FieldFacts;
import dev.baton.audit.Facts.FileWrite;
import dev.baton.audit.Facts.MethodFacts;
import dev.baton.audit.Facts.Use;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.objectweb.asm.Handle;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.Type;
import org.objectweb.asm.tree.AbstractInsnNode;
import org.objectweb.asm.tree.AnnotationNode;
import org.objectweb.asm.tree.ClassNode;
import org.objectweb.asm.tree.FieldInsnNode;
import org.objectweb.asm.tree.FieldNode;
import org.objectweb.asm.tree.InsnList;
import org.objectweb.asm.tree.InvokeDynamicInsnNode;
import org.objectweb.asm.tree.JumpInsnNode;
import org.objectweb.asm.tree.LdcInsnNode;
import org.objectweb.asm.tree.LineNumberNode;
import org.objectweb.asm.tree.MethodInsnNode;
import org.objectweb.asm.tree.MethodNode;
import org.objectweb.asm.tree.TypeInsnNode;
import org.objectweb.asm.tree.VarInsnNode;
import org.objectweb.asm.tree.analysis.Analyzer;
import org.objectweb.asm.tree.analysis.AnalyzerException;

/**
 * Turns one class's bytecode (an ASM tree, read once) into {@link ClassFacts}: field writes and reads
 * with their lines, mutating calls on fields (by a data-flow pass, so {@code this.seen.add(x)} and
 * {@code map.values().removeIf(...)} count but a local map does not), the call sites the rules look
 * at, loops, monitors and file writes. Nothing is loaded or run.
 */
final class Collector {
    private Collector() {}

    static final String RAM_JOB_STORE = "org/quartz/simpl/RAMJobStore";

    /** Method names whose call sites the rules read; everything else is dropped at collection time. */
    static final Set<String> INTERESTING = Set.of(
            // scheduling
            "scheduleAtFixedRate",
            "scheduleWithFixedDelay",
            "schedule",
            "newScheduledThreadPool",
            "newSingleThreadScheduledExecutor",
            "interval",
            "addFixedRateTask",
            "addFixedDelayTask",
            "addCronTask",
            "addTriggerTask",
            "subscribe",
            "subscribeWith",
            // threads and executors
            "start",
            "execute",
            "submit",
            "runAsync",
            "supplyAsync",
            "newFixedThreadPool",
            "newCachedThreadPool",
            "newSingleThreadExecutor",
            "newVirtualThreadPerTaskExecutor",
            "newWorkStealingPool",
            "startVirtualThread",
            "newThreadPerTaskExecutor",
            // waiting inside a loop
            "sleep",
            "wait",
            "take",
            "poll",
            "parkNanos",
            "park",
            "await",
            // writes to shared rows
            "executeUpdate",
            "executeBatch",
            "executeLargeUpdate",
            "executeLargeBatch",
            "update",
            "batchUpdate",
            "persist",
            "merge",
            "remove",
            "flush",
            "save",
            "saveAll",
            "saveAndFlush",
            "saveAllAndFlush",
            "delete",
            "deleteAll",
            "deleteById",
            "deleteAllById",
            "deleteAllInBatch",
            "deleteInBatch",
            // JVM locks
            "lock",
            "tryLock",
            "lockInterruptibly",
            // session state
            "setAttribute");

    private static final Set<String> NOT_STATE_TYPES = Set.of(
            "Ljava/lang/String;",
            "Ljava/lang/Integer;",
            "Ljava/lang/Long;",
            "Ljava/lang/Boolean;",
            "Ljava/lang/Class;",
            "Lorg/slf4j/Logger;",
            "Lorg/apache/commons/logging/Log;",
            "Ljava/util/logging/Logger;",
            "Lorg/apache/logging/log4j/Logger;",
            "Ljava/time/Duration;",
            "Ljava/time/Clock;");

    static ClassFacts collect(ClassNode cn) {
        String source = cn.sourceFile == null
                ? null
                : (cn.name.lastIndexOf('/') < 0 ? "" : cn.name.substring(0, cn.name.lastIndexOf('/') + 1))
                        + cn.sourceFile;
        ClassFacts cf = new ClassFacts(cn.name, source, cn.access);
        for (FieldNode f : cn.fields) {
            cf.fields.put(f.name, new FieldFacts(f.name, f.desc, f.signature, f.access));
        }
        List<MethodNode> nodes = cn.methods;
        Map<MethodNode, MethodFacts> byNode = new HashMap<>();
        Map<String, List<MethodFacts>> callers = new HashMap<>(); // callee name -> callers in this class
        Map<MethodFacts, List<Object[]>> writes = new HashMap<>(); // {field, line, assigned}
        Set<MethodNode> needsFlow = new HashSet<>();
        Set<MethodNode> needsTypes = new HashSet<>();
        for (MethodNode mn : nodes) {
            MethodFacts mf = new MethodFacts(
                    mn.name,
                    mn.desc,
                    mn.access,
                    annotations(mn.visibleAnnotations, mn.invisibleAnnotations),
                    parameterTypes(mn.desc));
            byNode.put(mn, mf);
            cf.methods.add(mf);
            scan(cn, cf, mn, mf, callers, writes, needsFlow, needsTypes);
        }
        markInitializers(cf, callers);
        for (Map.Entry<MethodFacts, List<Object[]>> e : writes.entrySet()) {
            MethodFacts mf = e.getKey();
            for (Object[] w : e.getValue()) {
                FieldFacts ff = cf.fields.get((String) w[0]);
                int line = (Integer) w[1];
                if (mf.initializer) {
                    if (ff.initMethod == null) {
                        ff.initMethod = mf.name;
                        ff.initLine = line;
                    }
                    if (w[2] != null) {
                        ff.assigned.add((String) w[2]);
                    }
                } else if (!isSetter(mf)) {
                    ff.reassignments.add(new Use(display(mf.name), "assigned", line, mf.name, mf.desc));
                }
            }
        }
        for (MethodNode mn : nodes) {
            MethodFacts mf = byNode.get(mn);
            boolean mutations = needsFlow.contains(mn) && !mf.initializer;
            if (mutations || needsTypes.contains(mn)) {
                flow(cn, cf, mn, mf, mutations, needsTypes.contains(mn));
            }
        }
        return cf;
    }

    /** Setter injection ({@code setX(value)}) is configuration, not runtime state. */
    private static boolean isSetter(MethodFacts mf) {
        return mf.name.length() > 3
                && mf.name.startsWith("set")
                && Character.isUpperCase(mf.name.charAt(3))
                && mf.parameterTypes.size() == 1;
    }

    private static void scan(
            ClassNode cn,
            ClassFacts cf,
            MethodNode mn,
            MethodFacts mf,
            Map<String, List<MethodFacts>> callers,
            Map<MethodFacts, List<Object[]>> writes,
            Set<MethodNode> needsFlow,
            Set<MethodNode> needsTypes) {
        InsnList insns = mn.instructions;
        int line = 0;
        int index = 0;
        Map<AbstractInsnNode, Integer> position = new HashMap<>();
        for (AbstractInsnNode insn = insns.getFirst(); insn != null; insn = insn.getNext()) {
            position.put(insn, index++);
        }
        long[] callKeys = new long[8];
        int calls = 0;
        long[] referenceKeys = Facts.NO_KEYS;
        for (AbstractInsnNode insn = insns.getFirst(); insn != null; insn = insn.getNext()) {
            if (insn instanceof LineNumberNode ln) {
                line = ln.line;
                if (mf.firstLine == 0 || line < mf.firstLine) {
                    mf.firstLine = line;
                }
                continue;
            }
            int op = insn.getOpcode();
            if (insn instanceof FieldInsnNode f) {
                if (f.owner.equals(cn.name) && cf.fields.containsKey(f.name)) {
                    if (op == Opcodes.PUTFIELD || op == Opcodes.PUTSTATIC) {
                        writes.computeIfAbsent(mf, k -> new ArrayList<>())
                                .add(new Object[] {f.name, line, assigned(insn)});
                        int param = op == Opcodes.PUTFIELD && mn.name.equals("<init>") ? storedParameter(mn, insn) : -1;
                        if (param >= 0) {
                            cf.fields.get(f.name).fromParam.putIfAbsent(mn.desc, param);
                        }
                    } else {
                        FieldFacts ff = cf.fields.get(f.name);
                        if (ff.firstUseLine == 0) {
                            ff.firstUseLine = line;
                        }
                        if (!NOT_STATE_TYPES.contains(f.desc) && (f.desc.startsWith("L") || f.desc.startsWith("["))) {
                            needsFlow.add(mn);
                        }
                    }
                }
            } else if (insn instanceof InvokeDynamicInsnNode indy) {
                for (Object arg : indy.bsmArgs) {
                    if (arg instanceof Handle h) {
                        referenceKeys = Arrays.copyOf(referenceKeys, referenceKeys.length + 1);
                        referenceKeys[referenceKeys.length - 1] =
                                h.getTag() == Opcodes.H_INVOKEVIRTUAL || h.getTag() == Opcodes.H_INVOKEINTERFACE
                                        ? Facts.key(h.getOwner(), h.getName(), h.getDesc())
                                        : Facts.directKey(h.getOwner(), h.getName(), h.getDesc());
                    }
                }
            } else if (insn instanceof MethodInsnNode m) {
                if (calls == callKeys.length) {
                    callKeys = Arrays.copyOf(callKeys, calls * 2);
                }
                callKeys[calls++] = op == Opcodes.INVOKEVIRTUAL || op == Opcodes.INVOKEINTERFACE
                        ? Facts.key(m.owner, m.name, m.desc)
                        : Facts.directKey(m.owner, m.name, m.desc);
                if (m.owner.equals(cn.name)) {
                    callers.computeIfAbsent(m.name, k -> new ArrayList<>()).add(mf);
                }
                if (INTERESTING.contains(m.name) || m.owner.equals(cn.name)) {
                    mf.calls.add(new Call(op, m.owner, m.name, m.desc, line));
                }
                if (m.owner.equals(RAM_JOB_STORE) && cf.ramJobStoreLine == 0) {
                    cf.ramJobStoreLine = Math.max(1, line);
                }
                FileApis.Kind k = FileApis.classify(m);
                if (k == FileApis.Kind.WRITE_CONSTRUCTOR || k == FileApis.Kind.WRITE_STATIC) {
                    needsFlow.add(mn);
                }
                if (op == Opcodes.INVOKESPECIAL
                        && m.name.equals("<init>")
                        && !m.owner.startsWith("java/")
                        && hasCollectionParameter(m.desc)) {
                    needsTypes.add(mn); // what is passed for a collection parameter: local, or distributed
                }
            } else if (insn instanceof TypeInsnNode t && op == Opcodes.NEW) {
                mf.news.putIfAbsent(t.desc, line);
                if (t.desc.equals(RAM_JOB_STORE) && cf.ramJobStoreLine == 0) {
                    cf.ramJobStoreLine = Math.max(1, line);
                }
            } else if (insn instanceof LdcInsnNode ldc) {
                if ((ldc.cst instanceof Type t && t.getInternalName().equals(RAM_JOB_STORE))
                        || (ldc.cst instanceof String s && s.contains("org.quartz.simpl.RAMJobStore"))) {
                    if (cf.ramJobStoreLine == 0) {
                        cf.ramJobStoreLine = Math.max(1, line);
                    }
                }
            } else if (insn instanceof JumpInsnNode j) {
                Integer target = position.get(j.label);
                if (target != null && target < position.get(insn)) {
                    mf.loop = true;
                }
            } else if (op == Opcodes.MONITORENTER && mf.monitorLine == 0) {
                mf.monitorLine = Math.max(1, line);
            }
        }
        mf.callKeys = calls == 0 ? Facts.NO_KEYS : Arrays.copyOf(callKeys, calls);
        mf.referenceKeys = referenceKeys;
    }

    private static final Map<String, Boolean> COLLECTION_TYPES = new java.util.concurrent.ConcurrentHashMap<>();

    /** A JDK map or collection type (answered from the running JDK's class metadata, cached). */
    static boolean collectionType(String internalName) {
        if (!internalName.startsWith("java/util/")) {
            return false;
        }
        return COLLECTION_TYPES.computeIfAbsent(internalName, n -> {
            try {
                Class<?> c = Class.forName(n.replace('/', '.'), false, ClassLoader.getPlatformClassLoader());
                return java.util.Map.class.isAssignableFrom(c) || java.util.Collection.class.isAssignableFrom(c);
            } catch (ClassNotFoundException | LinkageError e) {
                return false;
            }
        });
    }

    private static boolean hasCollectionParameter(String desc) {
        if (!desc.contains("Ljava/util/")) {
            return false;
        }
        for (Type t : Type.getArgumentTypes(desc)) {
            if (t.getSort() == Type.OBJECT && collectionType(t.getInternalName())) {
                return true;
            }
        }
        return false;
    }

    /** The instruction producing the value a store writes: casts and {@code Objects.requireNonNull} skipped. */
    private static AbstractInsnNode producer(AbstractInsnNode store) {
        AbstractInsnNode p = previous(store);
        while (p instanceof MethodInsnNode m
                && m.owner.equals("java/util/Objects")
                && m.name.equals("requireNonNull")) {
            p = previous(p);
            if (m.desc.equals("(Ljava/lang/Object;Ljava/lang/String;)Ljava/lang/Object;") && p instanceof LdcInsnNode) {
                p = previous(p);
            } else if (!m.desc.equals("(Ljava/lang/Object;)Ljava/lang/Object;")) {
                return null;
            }
        }
        return p;
    }

    private static AbstractInsnNode previous(AbstractInsnNode insn) {
        AbstractInsnNode p = insn.getPrevious();
        while (p != null && (p.getOpcode() < 0 || p.getOpcode() == Opcodes.CHECKCAST)) {
            p = p.getPrevious();
        }
        return p;
    }

    /** The constructor parameter a PUTFIELD stores ({@code this.map = map}), or -1. */
    private static int storedParameter(MethodNode mn, AbstractInsnNode store) {
        if (!(producer(store) instanceof VarInsnNode v) || v.getOpcode() != Opcodes.ALOAD) {
            return -1;
        }
        int slot = 1;
        Type[] args = Type.getArgumentTypes(mn.desc);
        for (int i = 0; i < args.length; i++) {
            if (slot == v.var) {
                return i;
            }
            slot += args[i].getSize();
        }
        return -1;
    }

    /** What the value stored by a PUTFIELD/PUTSTATIC came from, read backwards from the store. */
    private static String assigned(AbstractInsnNode store) {
        AbstractInsnNode p = producer(store);
        if (p instanceof MethodInsnNode m) {
            if (m.name.equals("<init>")) {
                return "new " + m.owner;
            }
            return "call " + m.owner + "." + m.name;
        }
        return null;
    }

    private static void markInitializers(ClassFacts cf, Map<String, List<MethodFacts>> callers) {
        Set<String> initNames = new HashSet<>();
        for (MethodFacts mf : cf.methods) {
            if (mf.name.equals("<init>")
                    || mf.name.equals("<clinit>")
                    || mf.name.startsWith("lambda$static$")
                    || mf.name.startsWith("lambda$new$")
                    || mf.annotated("jakarta/annotation/PostConstruct")
                    || mf.annotated("javax/annotation/PostConstruct")
                    || (mf.name.equals("afterPropertiesSet") && mf.desc.equals("()V"))
                    || fluent(cf, mf)) {
                mf.initializer = true;
                mf.fluent = fluent(cf, mf);
                initNames.add(mf.name);
            }
        }
        boolean changed = true;
        while (changed) {
            changed = false;
            for (MethodFacts mf : cf.methods) {
                if (mf.initializer) {
                    continue;
                }
                boolean lambdaOfInit = false;
                if (mf.name.startsWith("lambda$")) {
                    int end = mf.name.indexOf('$', 7);
                    lambdaOfInit = end > 7 && initNames.contains(mf.name.substring(7, end));
                }
                boolean onlyFromInit = false;
                if ((mf.access & Opcodes.ACC_PRIVATE) != 0) {
                    List<MethodFacts> cs = callers.get(mf.name);
                    onlyFromInit = cs != null && !cs.isEmpty() && cs.stream().allMatch(c -> c.initializer);
                }
                if (lambdaOfInit || onlyFromInit) {
                    mf.initializer = true;
                    initNames.add(mf.name);
                    changed = true;
                }
            }
        }
    }

    /** A builder or configurer method that returns its own object ({@code return this}-style): configuration, not state. */
    private static boolean fluent(ClassFacts cf, MethodFacts mf) {
        return (mf.access & Opcodes.ACC_STATIC) == 0
                && !mf.name.startsWith("<")
                && mf.desc.endsWith(")L" + cf.name + ";");
    }

    private static void flow(
            ClassNode cn, ClassFacts cf, MethodNode mn, MethodFacts mf, boolean mutations, boolean constructions) {
        InsnList insns = mn.instructions;
        int[] lines = new int[insns.size()];
        int line = 0;
        int i = 0;
        for (AbstractInsnNode insn = insns.getFirst(); insn != null; insn = insn.getNext(), i++) {
            if (insn instanceof LineNumberNode ln) {
                line = ln.line;
            }
            lines[i] = line;
        }
        String where = display(mf.name);
        Set<String> seen = new HashSet<>();
        Map<Integer, Facts.Construction> built = new java.util.TreeMap<>();
        OriginInterpreter.Sink sink = new OriginInterpreter.Sink() {
            @Override
            public void mutation(String field, String what, AbstractInsnNode insn) {
                if (!mutations) {
                    return;
                }
                String name = field.substring(field.lastIndexOf('.') + 1);
                FieldFacts ff = cf.fields.get(name);
                if (ff != null && seen.add(name + "#" + insns.indexOf(insn))) {
                    ff.mutations.add(new Use(where, what, lines[insns.indexOf(insn)], mf.name, mf.desc));
                }
            }

            @Override
            public void fileWrite(String api, Origin path, AbstractInsnNode insn) {
                if (!mutations || path == null || !seen.add("file#" + insns.indexOf(insn))) {
                    return;
                }
                String kind = path.has(Origin.TEMP)
                        ? "temp"
                        : path.has(Origin.CONST)
                                ? "constant"
                                : path.has(Origin.FROM_FIELD) || path.field != null ? "configured" : "unknown";
                mf.fileWrites.add(new FileWrite(api, kind, null, lines[insns.indexOf(insn)]));
            }

            @Override
            public void construction(MethodInsnNode init, List<? extends Origin> args) {
                if (init.getOpcode() != Opcodes.INVOKESPECIAL
                        || init.owner.startsWith("java/")
                        || !hasCollectionParameter(init.desc)) {
                    return;
                }
                Type[] params = Type.getArgumentTypes(init.desc);
                Facts.Arg[] out = new Facts.Arg[params.length];
                for (int i = 0; i < params.length && i < args.size(); i++) {
                    Origin a = args.get(i);
                    if (a != null
                            && params[i].getSort() == Type.OBJECT
                            && collectionType(params[i].getInternalName())) {
                        String allocated = a.allocation instanceof TypeInsnNode t ? t.desc : null;
                        out[i] = new Facts.Arg(allocated, a.type, a.param);
                    }
                }
                // The analyzer may visit an instruction again with merged values: the last visit holds.
                built.put(
                        insns.indexOf(init),
                        new Facts.Construction(init.owner, init.desc, out, lines[insns.indexOf(init)]));
            }
        };
        try {
            new Analyzer<>(
                            constructions
                                    ? new OriginInterpreter(
                                            cn.name, sink, mn.desc, (mn.access & Opcodes.ACC_STATIC) != 0)
                                    : new OriginInterpreter(cn.name, sink))
                    .analyze(cn.name, mn);
            mf.constructions.addAll(built.values());
        } catch (AnalyzerException | RuntimeException e) {
            // Unusual bytecode (old JSR/RET, obfuscation): this method's mutations stay unknown.
        }
    }

    /** {@code lambda$register$3} reads as {@code register (lambda)}. */
    static String display(String method) {
        if (method.startsWith("lambda$")) {
            int end = method.indexOf('$', 7);
            if (end > 7) {
                String outer = method.substring(7, end);
                return (outer.equals("new") ? "<init>" : outer.equals("static") ? "<clinit>" : outer) + " (lambda)";
            }
        }
        return method;
    }

    static List<String> annotations(List<AnnotationNode> visible, List<AnnotationNode> invisible) {
        List<String> out = new ArrayList<>(2);
        for (List<AnnotationNode> list : List.of(
                visible == null ? List.<AnnotationNode>of() : visible,
                invisible == null ? List.<AnnotationNode>of() : invisible)) {
            for (AnnotationNode a : list) {
                if (a.desc.length() > 2) {
                    out.add(a.desc.substring(1, a.desc.length() - 1));
                }
            }
        }
        return out;
    }

    private static List<String> parameterTypes(String desc) {
        Type[] args = Type.getArgumentTypes(desc);
        List<String> out = new ArrayList<>(args.length);
        for (Type t : args) {
            out.add(t.getSort() == Type.OBJECT ? t.getInternalName() : t.getDescriptor());
        }
        return out;
    }
}
