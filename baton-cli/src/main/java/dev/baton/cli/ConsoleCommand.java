package dev.baton.cli;

import com.zaxxer.hikari.HikariDataSource;
import dev.baton.Baton;
import dev.baton.console.BatonConsoleServlet;
import dev.baton.console.ConsoleAccess;
import dev.baton.console.ConsoleSettings;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.concurrent.Callable;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.http.HttpCookie;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(
        name = "console",
        mixinStandardHelpOptions = true,
        sortOptions = false,
        header = "Serves the operator console (a web UI over the admin API) until stopped.",
        description = {
            "Serves Baton's operator console on embedded Jetty: overview (queues, throughput and failures, nodes, "
                    + "leases), jobs with filters and bulk actions, schedules, leases with their terms, nodes and "
                    + "controls, the audit log. Registers no node: it reads and acts through the database only.",
            "",
            "Binds 127.0.0.1 by default. Prints a random token at start, as a URL to open: without it every page "
                    + "answers 401. Read-only unless --actions; every action is recorded with its operator and checked "
                    + "against a CSRF token. Stop it with Ctrl-C."
        },
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {"0:stopped", "2:usage error, database unreachable, schema not installed, or port in use"})
final class ConsoleCommand implements Callable<Integer> {
    /** The port of a console started without --port. */
    static final int DEFAULT_PORT = 8080;

    @Spec
    CommandSpec spec;

    @Mixin
    DbOptions db;

    @Option(
            names = "--port",
            paramLabel = "PORT",
            defaultValue = "" + DEFAULT_PORT,
            description = "TCP port (default: ${DEFAULT-VALUE}; 0 picks a free one)")
    int port;

    @Option(
            names = "--bind",
            paramLabel = "ADDRESS",
            defaultValue = "127.0.0.1",
            description = "Address to listen on (default: ${DEFAULT-VALUE}, this machine only). The console speaks "
                    + "plain HTTP: put a TLS proxy in front before binding a public address.")
    String bind;

    @Option(
            names = "--actions",
            description = "Enable actions (bulk cancel/retry/delete, drain, retire, pause, expire a lease); "
                    + "read-only without it.")
    boolean actions;

    @Override
    public Integer call() throws Exception {
        if (port < 0 || port > 65_535) {
            throw CliException.usage("--port must be 0 to 65535, but was " + port);
        }
        String url = db.url();
        String schema = db.schema();
        PrintWriter out = spec.commandLine().getOut();
        try (Running console = start(url, schema, bind, port, actions)) {
            out.println("Baton console for schema '" + schema + "' ("
                    + (actions ? "actions enabled" : "read-only; --actions enables actions") + ")");
            out.println("Open: " + console.signInUrl());
            if (!InetAddress.getByName(bind).isLoopbackAddress()) {
                out.println("WARNING: listening on " + bind + " over plain HTTP: the token and the session cookie "
                        + "cross the network in clear; put a TLS proxy in front.");
            }
            out.println("Stop with Ctrl-C.");
            out.flush();
            console.server.join();
        }
        return Main.EXIT_OK;
    }

    /** A console serving on Jetty; {@link #close} stops it and its pool. */
    static final class Running implements AutoCloseable {
        final Server server;
        final HikariDataSource pool;
        final String token;
        final String host;
        final int port;

        Running(Server server, HikariDataSource pool, String token, String host, int port) {
            this.server = server;
            this.pool = pool;
            this.token = token;
            this.host = host;
            this.port = port;
        }

        /** The URL that signs a browser in: the console's address with the token. */
        String signInUrl() {
            return "http://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + port + "/?token=" + token;
        }

        String url(String path) {
            return "http://" + (host.contains(":") ? "[" + host + "]" : host) + ":" + port + path;
        }

        @Override
        public void close() {
            try {
                server.stop();
            } catch (Exception e) {
                throw new IllegalStateException("could not stop the console's server", e);
            } finally {
                pool.close();
            }
        }
    }

    /** Connects, checks the schema, and serves the console on {@code bind:port} with a new token. */
    static Running start(String url, String schema, String bind, int port, boolean actions) {
        try {
            InetAddress.getByName(bind);
        } catch (UnknownHostException e) {
            throw CliException.usage("--bind must be an address of this machine, but '" + bind + "' is unknown");
        }
        // A small pool: pages make a few short reads each; a bulk action holds one connection.
        HikariDataSource pool = Db.pool(url, "baton-console", 4);
        try {
            StatusCommand.requireInstalled(pool, schema);
            // Never started: the console registers no node and runs no worker, only the admin API's reads and actions.
            Baton baton =
                    Baton.builder(pool).schema(schema).migrateOnStart(false).build();
            String token = ConsoleAccess.newToken();
            ConsoleAccess access = ConsoleAccess.token(token);
            BatonConsoleServlet servlet = new BatonConsoleServlet(
                    baton, actions ? ConsoleSettings.withActions(access) : ConsoleSettings.readOnly(access));
            Server server = new Server();
            ServerConnector connector = new ServerConnector(server);
            connector.setHost(bind);
            connector.setPort(port);
            server.addConnector(connector);
            ServletContextHandler context = new ServletContextHandler(ServletContextHandler.SESSIONS);
            context.setContextPath("/");
            context.getSessionHandler().setHttpOnly(true);
            context.getSessionHandler().setSameSite(HttpCookie.SameSite.STRICT);
            // Sign in again after a quiet hour.
            context.getSessionHandler().setMaxInactiveInterval(3600);
            context.addServlet(new ServletHolder(servlet), "/*");
            server.setHandler(context);
            server.setStopAtShutdown(true);
            try {
                server.start();
            } catch (Exception e) {
                try {
                    server.stop();
                } catch (Exception ignored) {
                    // Reporting the start's failure matters more.
                }
                throw new CliException(
                        Main.EXIT_USAGE, "could not listen on " + bind + ":" + port + ": " + e.getMessage(), e);
            }
            return new Running(server, pool, token, bind, connector.getLocalPort());
        } catch (RuntimeException e) {
            pool.close();
            throw e;
        }
    }
}
