package dev.baton.cli;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.lang.ProcessBuilder.Redirect;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * The node processes of a multi-process run: each is this CLI's {@code node} command in a JVM of its
 * own, with its JDBC URL handed over in {@link NodeCommand#URL_ENV} (never on the command line, where a
 * password would show in a process listing), stderr appended to {@code <logDir>/<id>.log} and stdout
 * lines passed to a listener. The fleet can pause, kill, stop and restart them, and on {@link #close()}
 * ends every process it ever started.
 */
final class NodeFleet implements AutoCloseable {
    /**
     * Receives every stdout line of every node process, on that process's reader thread, and every exit. Each
     * call names the process by pid: after a restart a late line or exit of the old process names the old pid.
     */
    interface Listener {
        void line(Node node, long pid, String line);

        default void exited(Node node, long pid, int exitCode) {}
    }

    /** One node id and its current process (a restart replaces the process, keeps the id). */
    static final class Node {
        final String id;
        final String url;
        volatile Process process;
        volatile OutputStream stdin; // kept open: the node exits when it closes (when this JVM dies)
        volatile boolean paused;
        /** SIGTERM sent to the current process: it drains and exits (or is killed after the grace). */
        volatile boolean stopping;

        Node(String id, String url) {
            this.id = id;
            this.url = url;
        }

        long pid() {
            return process.pid();
        }

        boolean alive() {
            return process != null && process.isAlive();
        }
    }

    private final Path logDir;
    private final Function<Node, List<String>> nodeArgs;
    private final Listener listener;
    private final Map<String, Node> nodes = Collections.synchronizedMap(new LinkedHashMap<>()); // in start order
    private final List<Process> everyProcess = new CopyOnWriteArrayList<>();
    private volatile boolean closed;

    /**
     * @param nodeArgs the {@code node} command's arguments for a node (after {@code node})
     */
    NodeFleet(Path logDir, Function<Node, List<String>> nodeArgs, Listener listener) {
        this.logDir = logDir;
        this.nodeArgs = nodeArgs;
        this.listener = listener;
    }

    List<Node> nodes() {
        return List.copyOf(nodes.values());
    }

    Node node(String id) {
        Node n = nodes.get(id);
        if (n == null) {
            throw new IllegalArgumentException("no node '" + id + "' in this run");
        }
        return n;
    }

    Path log(Node node) {
        return logDir.resolve(node.id + ".log");
    }

    /** Starts a new node process with id {@code id} connecting to {@code url}. */
    Node add(String id, String url) throws IOException {
        Node n = new Node(id, url);
        if (nodes.putIfAbsent(id, n) != null) {
            throw new IllegalArgumentException("node '" + id + "' already exists");
        }
        start(n);
        return n;
    }

    /** Starts a fresh process for a node whose previous process has ended. */
    synchronized void start(Node n) throws IOException {
        if (closed) {
            throw new IllegalStateException("the run is shutting down");
        }
        if (n.alive()) {
            throw new IllegalStateException(n.id + " is still running (pid " + n.pid() + ")");
        }
        String javaBin = ProcessHandle.current()
                .info()
                .command()
                .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        String classPath = Arrays.stream(System.getProperty("java.class.path").split(File.pathSeparator))
                .map(e -> Path.of(e).toAbsolutePath().toString())
                .collect(Collectors.joining(File.pathSeparator));
        List<String> cmd = new ArrayList<>(List.of(
                javaBin,
                "-Xmx128m",
                "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1",
                "-cp",
                classPath,
                Main.class.getName(),
                "node"));
        cmd.addAll(nodeArgs.apply(n));
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.environment().put(NodeCommand.URL_ENV, n.url);
        pb.redirectError(Redirect.appendTo(log(n).toFile()));
        Process p = pb.start();
        n.process = p;
        n.stdin = p.getOutputStream();
        n.paused = false;
        n.stopping = false;
        everyProcess.add(p);
        Thread reader = new Thread(() -> read(n, p), "baton-node-" + n.id + "-reader");
        reader.setDaemon(true);
        reader.start();
        p.onExit().thenAccept(x -> listener.exited(n, x.pid(), x.exitValue()));
    }

    private void read(Node n, Process p) {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            String line;
            while ((line = r.readLine()) != null) {
                listener.line(n, p.pid(), line.trim());
            }
        } catch (IOException e) {
            // the process is gone
        }
    }

    /** SIGSTOP: the process freezes, its sockets stay open, its clocks keep running. */
    void pause(Node n) throws IOException {
        signal(n, "STOP");
        n.paused = true;
    }

    /** SIGCONT; nothing to do when the process has ended meanwhile (a SIGKILL works on a stopped process). */
    void resume(Node n) throws IOException {
        try {
            signal(n, "CONT");
        } catch (IOException e) {
            if (n.alive()) {
                throw e;
            }
        }
        n.paused = false;
    }

    // Signals go through the ProcessHandle: Process.destroy() would also close our end of the node's stdout,
    // and the lines it prints while it shuts down would be lost.

    /** SIGKILL, and waits until the process is gone. */
    void kill(Node n) throws InterruptedException {
        Process p = n.process;
        p.toHandle().destroyForcibly();
        p.waitFor(10, TimeUnit.SECONDS);
        n.paused = false;
    }

    /** SIGTERM (SIGCONT first if paused) without waiting: the node drains and stops. No-op if it is not running. */
    void terminate(Node n) throws IOException {
        if (!n.alive()) {
            return;
        }
        if (n.paused) {
            resume(n);
        }
        n.stopping = true;
        n.process.toHandle().destroy();
    }

    /** SIGTERM (the node drains and stops); waits up to {@code grace}, then SIGKILL. Returns the exit code. */
    int stop(Node n, Duration grace) throws InterruptedException, IOException {
        Process p = n.process;
        terminate(n);
        return awaitOrKill(p, grace);
    }

    /** SIGTERM to every running node at once (they drain in parallel); waits up to {@code grace} each, then SIGKILL. */
    void stopAll(Duration grace) throws InterruptedException, IOException {
        List<Process> running = new ArrayList<>();
        for (Node n : nodes()) {
            if (n.alive()) {
                running.add(n.process);
                terminate(n);
            }
        }
        for (Process p : running) {
            awaitOrKill(p, grace);
        }
    }

    /** Returns the exit code, or -1 if the process outlived even SIGKILL by 10 s. */
    private static int awaitOrKill(Process p, Duration grace) throws InterruptedException {
        if (!p.waitFor(grace.toMillis(), TimeUnit.MILLISECONDS)) {
            p.toHandle().destroyForcibly();
            if (!p.waitFor(10, TimeUnit.SECONDS)) {
                return -1;
            }
        }
        return p.exitValue();
    }

    private static void signal(Node n, String signal) throws IOException {
        Process k = new ProcessBuilder("kill", "-" + signal, Long.toString(n.pid()))
                .redirectErrorStream(true)
                .start();
        try {
            if (!k.waitFor(10, TimeUnit.SECONDS) || k.exitValue() != 0) {
                String output = new String(k.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
                throw new IOException("kill -" + signal + " " + n.pid() + " failed: " + output);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while sending SIG" + signal, e);
        }
    }

    /** Idempotent: every process this fleet ever started ends (SIGCONT, SIGTERM, then SIGKILL after 10 s). */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (Node n : nodes()) {
            if (n.paused && n.alive()) {
                try {
                    resume(n);
                } catch (IOException e) {
                    // SIGKILL below works on a stopped process too
                }
            }
        }
        everyProcess.stream().filter(Process::isAlive).forEach(Process::destroy);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        for (Process p : everyProcess) {
            try {
                if (!p.waitFor(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                    p.destroyForcibly();
                    p.waitFor(5, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                p.destroyForcibly();
                Thread.currentThread().interrupt();
            }
            try {
                p.getOutputStream().close();
            } catch (IOException e) {
                // gone
            }
        }
    }
}
