package dev.baton.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * The split CPU layout of {@code compare --cpu-layout split}: the PostgreSQL server (its postmaster and every
 * process it has forked; later backends inherit the mask at fork) pinned to CPU 0, this JVM (every thread; later
 * threads inherit it) to the other CPUs, as the two sit on separate machines in production. Uses {@code taskset}
 * from util-linux; the server must run on this machine and the caller may change its affinity (root, or the
 * server's own user).
 */
final class CpuLayout {
    private CpuLayout() {}

    /** The pinned processes, and the CPU lists to put back when the run ends. */
    static final class Pinned implements AutoCloseable {
        final String description;
        private final long postmaster;
        private final String serverCpus;
        private final String jvmCpus;

        private Pinned(String description, long postmaster, String serverCpus, String jvmCpus) {
            this.description = description;
            this.postmaster = postmaster;
            this.serverCpus = serverCpus;
            this.jvmCpus = jvmCpus;
        }

        /** Gives the server (the postmaster and every process it forked) and this JVM their CPUs back. */
        @Override
        public void close() throws Exception {
            for (long pid : server(postmaster)) {
                taskset(serverCpus, pid);
            }
            taskset(jvmCpus, ProcessHandle.current().pid());
        }
    }

    /** Pins both sides; closing the result gives them their CPUs back. */
    static Pinned split(Database db) throws Exception {
        int cpus = Runtime.getRuntime().availableProcessors();
        if (cpus < 2) {
            throw new IllegalStateException("--cpu-layout split needs at least 2 CPUs, this JVM sees " + cpus);
        }
        long postmaster;
        try (Connection c = db.connect()) {
            postmaster = Machine.localPostmaster(c);
        }
        if (postmaster < 0) {
            throw new IllegalStateException("--cpu-layout split needs the PostgreSQL server on this machine (the"
                    + " backend of a connection to it is not a local postgres process)");
        }
        long jvm = ProcessHandle.current().pid();
        String serverWas = cpuList(postmaster);
        String jvmWas = cpuList(jvm);
        List<Long> server = server(postmaster);
        for (long pid : server) {
            taskset("0", pid);
        }
        String jvmCpus = cpus == 2 ? "1" : "1-" + (cpus - 1);
        taskset(jvmCpus, jvm);
        return new Pinned(
                "split: PostgreSQL (postmaster " + postmaster + " and " + (server.size() - 1)
                        + " processes) on CPU 0, the JVM on CPU " + jvmCpus + " (taskset)",
                postmaster,
                serverWas,
                jvmWas);
    }

    /** The postmaster and the processes it has forked. */
    private static List<Long> server(long postmaster) throws IOException {
        List<Long> server = new ArrayList<>();
        server.add(postmaster);
        try (Stream<Path> procs = Files.list(Path.of("/proc"))) {
            for (Path p : (Iterable<Path>) procs::iterator) {
                String name = p.getFileName().toString();
                if (name.chars().allMatch(Character::isDigit)) {
                    try {
                        if (Machine.parent(Long.parseLong(name)) == postmaster) {
                            server.add(Long.parseLong(name));
                        }
                    } catch (IOException gone) {
                        // the process ended while we looked
                    }
                }
            }
        }
        return server;
    }

    /** The CPU list a process may run on, as taskset prints it ("0,1" or "0-3"). */
    private static String cpuList(long pid) throws Exception {
        String out = run("taskset", "-c", "-p", Long.toString(pid));
        return out.substring(out.lastIndexOf(':') + 1).strip();
    }

    private static void taskset(String cpuList, long pid) throws Exception {
        run("taskset", "-a", "-c", "-p", cpuList, Long.toString(pid));
    }

    private static String run(String... command) throws Exception {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes());
        if (p.waitFor() != 0) {
            throw new IllegalStateException(String.join(" ", command) + " failed: " + out.strip());
        }
        return out;
    }
}
