package dev.baton.console;

import jakarta.servlet.http.HttpServlet;
import org.eclipse.jetty.ee10.servlet.ServletContextHandler;
import org.eclipse.jetty.ee10.servlet.ServletHolder;
import org.eclipse.jetty.http.HttpCookie;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

/** The console on an embedded Jetty on a random port of 127.0.0.1, as {@code baton console} serves it. */
final class ConsoleJetty implements AutoCloseable {
    private final Server server;
    private final int port;

    private ConsoleJetty(Server server, int port) {
        this.server = server;
        this.port = port;
    }

    static ConsoleJetty start(HttpServlet servlet) {
        Server server = new Server();
        ServerConnector connector = new ServerConnector(server);
        connector.setHost("127.0.0.1");
        connector.setPort(0);
        server.addConnector(connector);
        ServletContextHandler context = new ServletContextHandler(ServletContextHandler.SESSIONS);
        context.setContextPath("/");
        context.getSessionHandler().setHttpOnly(true);
        context.getSessionHandler().setSameSite(HttpCookie.SameSite.STRICT);
        context.addServlet(new ServletHolder(servlet), "/*");
        server.setHandler(context);
        try {
            server.start();
        } catch (Exception e) {
            throw new IllegalStateException("could not start Jetty for the console", e);
        }
        return new ConsoleJetty(server, connector.getLocalPort());
    }

    String url(String path) {
        return "http://127.0.0.1:" + port + path;
    }

    @Override
    public void close() {
        try {
            server.stop();
        } catch (Exception e) {
            throw new IllegalStateException("could not stop Jetty", e);
        }
    }
}
