package dev.baton.testkit;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An in-process TCP proxy that injects network faults between a test and a server, in the spirit
 * of Toxiproxy but without an external binary.
 *
 * <pre>{@code
 * try (FaultProxy proxy = FaultProxy.start(PG.host(), PG.port())) {
 *   String url = PG.jdbcUrlVia("127.0.0.1", proxy.port());
 *   ...
 *   proxy.blackHole();   // partition
 *   ...
 *   proxy.heal();
 * }
 * }</pre>
 *
 * <p>The proxy listens on {@code 127.0.0.1} on an ephemeral port. For each accepted client it
 * immediately opens a connection to the target (even while black-holed: the target may therefore
 * see a connection whose first bytes never arrive) and pumps bytes in each direction on its own
 * daemon thread, named {@code baton-fault-proxy-<port>-c<n>-c2s} / {@code -s2c}.
 *
 * <p><b>Faults.</b> Every fault can be switched at any time, from any thread, and applies at once
 * to existing connections as well as new ones. Faults are decided per chunk of bytes at the moment
 * the proxy would forward it:
 *
 * <ul>
 *   <li>{@link #latency(Duration)}: each chunk is held at least this long after it was read,
 *       in both directions. Chunks are forwarded one at a time per direction, so back-to-back
 *       chunks may be delayed more than once: the delay is a lower bound.
 *   <li>{@link #blackHole()}: nothing is forwarded in either direction. Sockets stay open (no FIN,
 *       no RST); bytes that arrive meanwhile are read and <b>dropped</b>, never delivered later,
 *       as in a network partition. New connections are still accepted.
 *   <li>{@link #blackHoleServerToClient()}: client-to-server bytes flow, server-to-client bytes
 *       are dropped; models a lost reply such as a commit acknowledgement.
 *   <li>{@link #heal()}: clears all faults, including latency; bytes read from then on flow.
 *   <li>{@link #resetAll()}: aborts every current connection with a TCP RST on both sides.
 * </ul>
 *
 * <p><b>Connection ends.</b> When one side closes (FIN) or resets, the proxy passes that on to the
 * other side, unless that direction is black-holed: then the close is held until the direction
 * flows again, like a FIN that TCP retransmits once a partition heals. Only data is dropped.
 *
 * <p>All methods are thread-safe. {@link #close()} stops the listener and closes every connection.
 */
public final class FaultProxy implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(FaultProxy.class);

    private static final int BUFFER_SIZE = 16 * 1024;

    private static final int CONNECT_TIMEOUT_MILLIS = 10_000;

    private enum Direction {
        CLIENT_TO_SERVER("c2s"),
        SERVER_TO_CLIENT("s2c");

        final String tag;

        Direction(String tag) {
            this.tag = tag;
        }
    }

    private final String targetHost;
    private final int targetPort;
    private final ServerSocket listener;
    private final int port;
    private final Set<Link> links = ConcurrentHashMap.newKeySet();
    private final AtomicLong connectionIds = new AtomicLong();
    private final AtomicLong bytesForwarded = new AtomicLong();

    /**
     * Monitor notified whenever a fault changes or a connection closes, so that threads holding a
     * chunk (latency) or a close (black hole) re-evaluate promptly instead of polling.
     */
    private final Object faultsChanged = new Object();

    private volatile long latencyNanos;
    private volatile boolean dropClientToServer;
    private volatile boolean dropServerToClient;
    private volatile boolean closed;

    private FaultProxy(String targetHost, int targetPort, ServerSocket listener) {
        this.targetHost = targetHost;
        this.targetPort = targetPort;
        this.listener = listener;
        this.port = listener.getLocalPort();
    }

    /**
     * Starts a proxy to {@code targetHost:targetPort}, listening on {@code 127.0.0.1} on an
     * ephemeral port. The target is not contacted until a client connects.
     *
     * @param targetHost host to forward to; not blank
     * @param targetPort port to forward to, 1..65535
     * @return the running proxy; close it when done
     * @throws IOException if the listening socket cannot be opened
     * @throws IllegalArgumentException if the host is blank or the port out of range
     */
    public static FaultProxy start(String targetHost, int targetPort) throws IOException {
        Objects.requireNonNull(targetHost, "targetHost");
        if (targetHost.isBlank()) {
            throw new IllegalArgumentException("targetHost must not be blank, was '" + targetHost + "'");
        }
        if (targetPort < 1 || targetPort > 65535) {
            throw new IllegalArgumentException("targetPort must be in 1..65535, was " + targetPort);
        }
        ServerSocket listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        FaultProxy proxy = new FaultProxy(targetHost, targetPort, listener);
        Thread acceptor = new Thread(proxy::acceptLoop, "baton-fault-proxy-" + proxy.port + "-accept");
        acceptor.setDaemon(true);
        acceptor.start();
        log.debug("Fault proxy 127.0.0.1:{} -> {}:{} started", proxy.port, targetHost, targetPort);
        return proxy;
    }

    /**
     * Returns the local port clients connect to (on {@code 127.0.0.1}).
     *
     * @return the listening port
     */
    public int port() {
        return port;
    }

    /**
     * Delays every chunk, in both directions, by at least {@code latency}; {@code Duration.ZERO}
     * removes the delay. Chunks already being held are re-evaluated against the new value.
     *
     * @param latency the minimum delay, not negative
     * @throws IllegalArgumentException if {@code latency} is negative
     */
    public void latency(Duration latency) {
        Objects.requireNonNull(latency, "latency");
        if (latency.isNegative()) {
            throw new IllegalArgumentException("latency must not be negative, was " + latency);
        }
        latencyNanos = saturatedNanos(latency);
        signalFaultsChanged();
    }

    /**
     * Stops forwarding in both directions while keeping every socket open; bytes that arrive are
     * dropped. New connections are accepted but nothing flows over them either.
     */
    public void blackHole() {
        dropClientToServer = true;
        dropServerToClient = true;
        signalFaultsChanged();
    }

    /**
     * Forwards client-to-server bytes but drops server-to-client bytes, so the server does the work
     * and the client never hears about it (a lost acknowledgement).
     */
    public void blackHoleServerToClient() {
        dropClientToServer = false;
        dropServerToClient = true;
        signalFaultsChanged();
    }

    /**
     * Clears every fault (black holes and latency): bytes read from now on are forwarded normally.
     * Bytes dropped earlier stay lost. Connection closes held back by a black hole are delivered.
     */
    public void heal() {
        dropClientToServer = false;
        dropServerToClient = false;
        latencyNanos = 0;
        signalFaultsChanged();
    }

    /**
     * Aborts every current connection with a TCP RST towards both the client and the server (linger
     * zero, then close). Faults and the listener are unaffected; new connections work as before.
     */
    public void resetAll() {
        for (Link link : List.copyOf(links)) {
            link.abort();
        }
    }

    /**
     * Returns the number of accepted connections not yet fully closed.
     *
     * @return current connection count
     */
    public int openConnections() {
        return links.size();
    }

    /**
     * Returns the total number of bytes delivered, both directions, over the proxy's lifetime.
     * Dropped bytes are not counted.
     *
     * @return bytes forwarded so far
     */
    public long bytesForwarded() {
        return bytesForwarded.get();
    }

    /** Stops accepting and closes every connection (normal close, not RST). Idempotent. */
    @Override
    public void close() {
        closed = true;
        try {
            listener.close();
        } catch (IOException e) {
            log.debug("Closing fault proxy listener on port {} failed", port, e);
        }
        for (Link link : List.copyOf(links)) {
            link.close();
        }
        signalFaultsChanged();
    }

    @Override
    public String toString() {
        return "FaultProxy[127.0.0.1:" + port + " -> " + targetHost + ":" + targetPort
                + ", open=" + links.size() + ", latency=" + Duration.ofNanos(latencyNanos)
                + ", dropC2S=" + dropClientToServer + ", dropS2C=" + dropServerToClient + "]";
    }

    private boolean dropping(Direction direction) {
        return direction == Direction.CLIENT_TO_SERVER ? dropClientToServer : dropServerToClient;
    }

    private void signalFaultsChanged() {
        synchronized (faultsChanged) {
            faultsChanged.notifyAll();
        }
    }

    private void acceptLoop() {
        while (!closed) {
            Socket client;
            try {
                client = listener.accept();
            } catch (IOException e) {
                if (closed) {
                    return;
                }
                log.warn("Fault proxy on port {} failed to accept a connection", port, e);
                // Back off briefly so a persistent error (such as running out of file descriptors)
                // does not spin a core.
                LockSupport.parkNanos(Duration.ofMillis(50).toNanos());
                continue;
            }
            Link link = new Link(connectionIds.incrementAndGet(), client);
            links.add(link);
            if (closed) {
                // close() may have swept the set before this link was added.
                link.close();
                return;
            }
            Thread t = new Thread(link::connectAndPump, link.threadName(Direction.CLIENT_TO_SERVER));
            t.setDaemon(true);
            t.start();
        }
    }

    private static long saturatedNanos(Duration d) {
        try {
            return d.toNanos();
        } catch (ArithmeticException e) {
            return Long.MAX_VALUE;
        }
    }

    /** One proxied client connection and its upstream connection. */
    private final class Link {
        private final long id;
        private final Socket client;
        private Socket server; // guarded by this
        private boolean finished; // guarded by this
        private final AtomicInteger pumpsDone = new AtomicInteger();

        Link(long id, Socket client) {
            this.id = id;
            this.client = client;
        }

        String threadName(Direction direction) {
            return "baton-fault-proxy-" + port + "-c" + id + "-" + direction.tag;
        }

        /** Runs on the c2s thread: connects upstream, starts the s2c pump, then pumps c2s. */
        void connectAndPump() {
            Socket upstream = new Socket();
            try {
                client.setTcpNoDelay(true);
                // Without TCP_NODELAY, Nagle plus delayed ACKs would add tens of milliseconds to small
                // protocol messages and blur the latency the test asked for.
                upstream.setTcpNoDelay(true);
                upstream.connect(new InetSocketAddress(targetHost, targetPort), CONNECT_TIMEOUT_MILLIS);
            } catch (IOException e) {
                log.debug("Fault proxy {}: connection {} could not reach {}:{}", port, id, targetHost, targetPort, e);
                closeQuietly(upstream);
                close();
                return;
            }
            synchronized (this) {
                if (finished) {
                    // Reset or closed while we were connecting.
                    abortQuietly(upstream);
                    return;
                }
                server = upstream;
            }
            Thread s2c = new Thread(
                    () -> pump(Direction.SERVER_TO_CLIENT, upstream, client), threadName(Direction.SERVER_TO_CLIENT));
            s2c.setDaemon(true);
            s2c.start();
            pump(Direction.CLIENT_TO_SERVER, client, upstream);
        }

        private void pump(Direction direction, Socket from, Socket to) {
            byte[] buffer = new byte[BUFFER_SIZE];
            try {
                InputStream in = from.getInputStream();
                OutputStream out = to.getOutputStream();
                while (true) {
                    int n;
                    try {
                        n = in.read(buffer);
                    } catch (IOException e) {
                        if (isFinished()) {
                            return;
                        }
                        // The source was reset: pass the reset on, once the direction flows again.
                        holdWhileDropping(direction);
                        abort();
                        return;
                    }
                    if (n < 0) {
                        holdWhileDropping(direction);
                        if (isFinished()) {
                            return;
                        }
                        to.shutdownOutput(); // FIN to the other side, which may still send to us
                        if (pumpsDone.incrementAndGet() == 2) {
                            close();
                        }
                        return;
                    }
                    holdForLatency(System.nanoTime());
                    if (dropping(direction) || isFinished()) {
                        continue; // a partition loses data; it is not buffered for later
                    }
                    out.write(buffer, 0, n);
                    out.flush();
                    bytesForwarded.addAndGet(n);
                }
            } catch (IOException e) {
                // Writing to (or half-closing) the destination failed: it is gone, so end both sides.
                if (!isFinished()) {
                    log.debug("Fault proxy {}: connection {} {} failed", port, id, direction.tag, e);
                    abort();
                }
            }
        }

        /** Waits until the chunk read at {@code readAt} is at least the current latency old. */
        private void holdForLatency(long readAt) {
            synchronized (faultsChanged) {
                while (!isFinished()) {
                    long remaining = readAt + latencyNanos - System.nanoTime();
                    if (latencyNanos == 0 || remaining <= 0) {
                        return;
                    }
                    waitOnFaults(remaining);
                }
            }
        }

        /** Waits while {@code direction} is black-holed (and the link is still up). */
        private void holdWhileDropping(Direction direction) {
            synchronized (faultsChanged) {
                while (dropping(direction) && !isFinished()) {
                    waitOnFaults(Long.MAX_VALUE);
                }
            }
        }

        /** Called holding {@link #faultsChanged}. */
        private void waitOnFaults(long nanos) {
            long millis = Math.max(1, Math.min(nanos / 1_000_000, 1_000));
            try {
                // Bounded wait as a safety net; every state change also notifies.
                faultsChanged.wait(millis);
            } catch (InterruptedException e) {
                // Only close() or a test's own interrupt can get here: drop the connection.
                Thread.currentThread().interrupt();
                abort();
            }
        }

        synchronized boolean isFinished() {
            return finished || closed;
        }

        /** Ends the connection with RST on both sides. */
        void abort() {
            Socket upstream;
            synchronized (this) {
                if (finished) {
                    return;
                }
                finished = true;
                upstream = server;
            }
            abortQuietly(client);
            abortQuietly(upstream);
            forget();
        }

        /** Ends the connection with a normal close on both sides. */
        void close() {
            Socket upstream;
            synchronized (this) {
                if (finished) {
                    return;
                }
                finished = true;
                upstream = server;
            }
            closeQuietly(client);
            closeQuietly(upstream);
            forget();
        }

        private void forget() {
            links.remove(this);
            signalFaultsChanged();
        }
    }

    private static void abortQuietly(Socket socket) {
        if (socket == null) {
            return;
        }
        try {
            // Linger zero makes close() send RST instead of FIN, like a crashed peer or middlebox.
            socket.setSoLinger(true, 0);
        } catch (SocketException e) {
            // Already closed: nothing left to reset.
        }
        closeQuietly(socket);
    }

    private static void closeQuietly(Socket socket) {
        if (socket == null) {
            return;
        }
        try {
            socket.close();
        } catch (IOException e) {
            // Closing is best effort; the socket is unusable either way.
        }
    }
}
