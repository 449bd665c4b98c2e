package dev.baton.audit;

import java.util.Set;
import org.objectweb.asm.tree.MethodInsnNode;

/** The JDK file APIs the local-file rule understands: path construction, temp files, and writes. */
final class FileApis {
    private FileApis() {}

    enum Kind {
        NONE,
        PATH_FROM_ARGS,
        CONSTRUCT_PATH,
        TEMP,
        WRITE_CONSTRUCTOR,
        WRITE_STATIC
    }

    private static final Set<String> WRITE_TYPES =
            Set.of("java/io/FileOutputStream", "java/io/FileWriter", "java/io/PrintWriter", "java/io/PrintStream");
    private static final Set<String> FILES_WRITES =
            Set.of("write", "writeString", "newOutputStream", "newBufferedWriter", "createFile", "move", "copy");

    static Kind classify(MethodInsnNode m) {
        String o = m.owner;
        String n = m.name;
        if ((o.equals("java/nio/file/Paths") && n.equals("get"))
                || (o.equals("java/nio/file/Path") && n.equals("of"))
                || ((o.equals("java/nio/file/Path") || o.equals("sun/nio/fs/UnixPath"))
                        && (n.equals("resolve")
                                || n.equals("resolveSibling")
                                || n.equals("toAbsolutePath")
                                || n.equals("normalize")))
                || (o.equals("java/io/File") && (n.equals("toPath") || n.equals("getAbsoluteFile")))
                || (o.equals("java/nio/file/Path") && n.equals("toFile"))) {
            return Kind.PATH_FROM_ARGS;
        }
        if ((o.equals("java/nio/file/Files") && (n.equals("createTempFile") || n.equals("createTempDirectory")))
                || (o.equals("java/io/File") && n.equals("createTempFile"))) {
            return Kind.TEMP;
        }
        if (n.equals("<init>")) {
            if (o.equals("java/io/File")) {
                return Kind.CONSTRUCT_PATH;
            }
            // Only the constructors whose first argument is a path (String or File), not a stream.
            if (WRITE_TYPES.contains(o)
                    && (m.desc.startsWith("(Ljava/lang/String;") || m.desc.startsWith("(Ljava/io/File;"))) {
                return Kind.WRITE_CONSTRUCTOR;
            }
            return Kind.NONE;
        }
        if (o.equals("java/nio/file/Files") && FILES_WRITES.contains(n)) {
            return Kind.WRITE_STATIC;
        }
        return Kind.NONE;
    }

    static String simple(String internal) {
        return "new " + internal.substring(internal.lastIndexOf('/') + 1);
    }
}
