package dev.baton.console;

import dev.baton.Admin;
import dev.baton.Baton;
import dev.baton.BulkResult;
import dev.baton.Controls;
import dev.baton.EnqueueResult;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.servlet.http.HttpSession;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.thymeleaf.TemplateEngine;
import org.thymeleaf.context.Context;
import org.thymeleaf.templatemode.TemplateMode;
import org.thymeleaf.templateresolver.ClassLoaderTemplateResolver;

/**
 * Baton's operator console: one servlet serving its pages (overview, jobs, a job, schedules, leases, a lease's
 * timeline of terms, nodes, controls and their audit log) and its stylesheet, over {@link Admin}. Mount it at
 * any path ({@code /*} or {@code /baton/*}); its links follow the path it is reached at.
 *
 * <p>Security, on every request: {@link ConsoleAccess#mayView} before any page (the standalone console's token);
 * actions are POST only, and each is refused unless actions are enabled ({@link ConsoleSettings#actionsEnabled}),
 * {@link ConsoleAccess#actor} names who acts, and the form carries the session's CSRF token (compared in constant
 * time). Every value shown, job payloads and error messages included, is escaped by the templates; the
 * responses carry a Content-Security-Policy that allows no inline script and no other origin, and forbid
 * framing. The console never shows how it connects to the database.
 *
 * <p>Thread-safe: one instance serves every request.
 */
public final class BatonConsoleServlet extends HttpServlet {
    private static final long serialVersionUID = 1L;
    private static final Logger log = LoggerFactory.getLogger(BatonConsoleServlet.class);

    static final String CSRF = "dev.baton.console.csrf";
    static final String FLASH = "dev.baton.console.flash";
    /** The security headers of every response. */
    static final Map<String, String> HEADERS = Map.of(
            "Content-Security-Policy",
            "default-src 'self'; script-src 'none'; object-src 'none'; base-uri 'none'; form-action 'self'; "
                    + "frame-ancestors 'none'",
            "X-Frame-Options",
            "DENY",
            "X-Content-Type-Options",
            "nosniff",
            "Referrer-Policy",
            "no-referrer",
            "Cache-Control",
            "no-store");

    private final transient Admin admin;
    private final transient Pages pages;
    private final ConsoleSettings settings;
    private final transient TemplateEngine templates;
    private final transient byte[] css;
    private final transient SecureRandom random = new SecureRandom();

    /** A console over {@code baton}'s admin API (a started node, or one built and never started). */
    public BatonConsoleServlet(Baton baton, ConsoleSettings settings) {
        this(baton.admin(), settings);
    }

    /** A console over {@code admin}. */
    public BatonConsoleServlet(Admin admin, ConsoleSettings settings) {
        if (admin == null || settings == null) {
            throw new IllegalArgumentException(
                    "admin and settings must be set, but admin was " + admin + " and settings " + settings);
        }
        this.admin = admin;
        this.pages = new Pages(admin);
        this.settings = settings;
        ClassLoaderTemplateResolver r = new ClassLoaderTemplateResolver(BatonConsoleServlet.class.getClassLoader());
        r.setPrefix("dev/baton/console/templates/");
        r.setSuffix(".html");
        r.setTemplateMode(TemplateMode.HTML);
        r.setCharacterEncoding("UTF-8");
        r.setCacheable(true);
        this.templates = new TemplateEngine();
        templates.setTemplateResolver(r);
        try (InputStream in = BatonConsoleServlet.class.getResourceAsStream("static/console.css")) {
            if (in == null) {
                throw new IllegalStateException("dev/baton/console/static/console.css is missing from the jar");
            }
            this.css = in.readAllBytes();
        } catch (IOException e) {
            throw new IllegalStateException("could not read the console's stylesheet", e);
        }
    }

    /** The settings this console runs with. */
    public ConsoleSettings settings() {
        return settings;
    }

    /** Sets the security headers on every response, whatever the method (a refused PUT included). */
    @Override
    protected void service(HttpServletRequest req, HttpServletResponse resp)
            throws jakarta.servlet.ServletException, IOException {
        headers(resp);
        super.service(req, resp);
    }

    // ---------------------------------------------------------------- GET

    @Override
    protected void doGet(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        String path = path(req);
        if (path.equals("/static/console.css")) {
            resp.setContentType("text/css;charset=utf-8");
            resp.setHeader("Cache-Control", "max-age=3600");
            resp.getOutputStream().write(css);
            return;
        }
        if (settings.access() instanceof TokenAccess token && req.getParameter("token") != null) {
            signIn(req, resp, token, req.getParameter("token"), path);
            return;
        }
        if (!settings.access().mayView(req)) {
            loginPage(req, resp, HttpServletResponse.SC_UNAUTHORIZED, null);
            return;
        }
        Map<String, Object> m = model(req, path);
        String base = (String) m.get("base");
        String template;
        int status = HttpServletResponse.SC_OK;
        try {
            if (path.equals("/") || path.isEmpty()) {
                template = "overview";
                pages.overview(m, base);
            } else if (path.equals("/jobs")) {
                template = "jobs";
                try {
                    Pages.JobFilter f = Pages.JobFilter.of(req::getParameter, req::getParameterValues);
                    pages.jobs(m, base, f, req.getParameter("cursor"));
                } catch (IllegalArgumentException e) {
                    m.putIfAbsent("filter", Pages.row("states", List.of()));
                    m.putIfAbsent("jobs", List.of());
                    m.putIfAbsent("filterParams", List.of());
                    m.putIfAbsent("next", "");
                    m.putIfAbsent("paged", false);
                    m.putIfAbsent("back", "/jobs");
                    m.putIfAbsent("maxBulk", Admin.MAX_BULK);
                    m.put("problem", e.getMessage());
                    status = HttpServletResponse.SC_BAD_REQUEST;
                }
            } else if (path.startsWith("/jobs/")) {
                template = "job";
                long id = parseId(path.substring("/jobs/".length()));
                if (id < 1 || !pages.job(m, id)) {
                    notFound(req, resp, m, "no job " + path.substring("/jobs/".length()));
                    return;
                }
            } else if (path.equals("/schedules")) {
                template = "schedules";
                pages.schedules(m, base, req.getParameter("after"));
            } else if (path.equals("/leases")) {
                template = "leases";
                pages.leases(m, base, req.getParameter("after"));
            } else if (path.equals("/lease")) {
                template = "lease";
                String name = req.getParameter("name");
                if (name == null || !pages.lease(m, base, name)) {
                    notFound(req, resp, m, "no lease named '" + name + "'");
                    return;
                }
            } else if (path.equals("/lease/expire")) {
                template = "expire";
                String name = req.getParameter("name");
                long generation = parseId(req.getParameter("generation"));
                if (name == null || generation < 1 || !pages.expireConfirmation(m, base, name, generation)) {
                    notFound(req, resp, m, "no lease named '" + name + "' at generation " + generation);
                    return;
                }
            } else if (path.equals("/nodes")) {
                template = "nodes";
                pages.nodes(m, base);
            } else if (path.equals("/controls")) {
                template = "controls";
                pages.controls(m, base, req.getParameter("after"));
            } else {
                notFound(req, resp, m, "no page " + path);
                return;
            }
        } catch (IllegalArgumentException e) {
            m.put("problem", e.getMessage());
            render(resp, "problem", m, HttpServletResponse.SC_BAD_REQUEST);
            return;
        } catch (RuntimeException e) {
            log.warn("console page {} failed", path, e);
            m.put("problem", "reading the page failed: " + e.getMessage());
            render(resp, "problem", m, HttpServletResponse.SC_INTERNAL_SERVER_ERROR);
            return;
        }
        render(resp, template, m, status);
    }

    // ---------------------------------------------------------------- POST

    @Override
    protected void doPost(HttpServletRequest req, HttpServletResponse resp) throws IOException {
        req.setCharacterEncoding("UTF-8");
        String path = path(req);
        if (path.equals("/login") && settings.access() instanceof TokenAccess token) {
            signIn(req, resp, token, req.getParameter("token"), "/");
            return;
        }
        if (!settings.access().mayView(req)) {
            loginPage(req, resp, HttpServletResponse.SC_UNAUTHORIZED, null);
            return;
        }
        if (!path.startsWith("/actions/")) {
            refuse(req, resp, HttpServletResponse.SC_NOT_FOUND, "no action " + path);
            return;
        }
        if (!settings.actionsEnabled()) {
            refuse(req, resp, HttpServletResponse.SC_FORBIDDEN, "this console is read-only: actions are disabled");
            return;
        }
        ConsoleAccess.Actor actor = settings.access().actor(req);
        if (actor.name().isEmpty()) {
            refuse(req, resp, HttpServletResponse.SC_FORBIDDEN, "not allowed: " + actor.refusal());
            return;
        }
        if (!csrfMatches(req)) {
            refuse(
                    req,
                    resp,
                    HttpServletResponse.SC_FORBIDDEN,
                    "refused: the form's CSRF token is missing or wrong (reload the page and try again)");
            return;
        }
        String who = actor.name().get();
        String message;
        boolean ok = true;
        try {
            message = act(path.substring("/actions".length()), req, who);
            log.info("console action {} by '{}': {}", path, who, message);
        } catch (IllegalArgumentException e) {
            ok = false;
            message = e.getMessage();
        } catch (RuntimeException e) {
            log.warn("console action {} by '{}' failed", path, who, e);
            ok = false;
            message = "failed: " + e.getMessage();
        }
        req.getSession().setAttribute(FLASH, Map.of("ok", ok, "text", message));
        resp.setStatus(HttpServletResponse.SC_SEE_OTHER);
        resp.setHeader("Location", base(req) + back(req.getParameter("back")));
    }

    private String act(String action, HttpServletRequest req, String who) {
        Controls controls = admin.controls();
        String reason = blankToNull(req.getParameter("reason"));
        switch (action) {
            case "/jobs" -> {
                String op = required(req, "op");
                List<Long> ids = new ArrayList<>();
                String[] given = req.getParameterValues("ids");
                if (given != null) {
                    for (String s : given) {
                        long id = parseId(s);
                        if (id < 1) {
                            throw new IllegalArgumentException("ids must be job ids, but one was '" + s + "'");
                        }
                        ids.add(id);
                    }
                }
                if (ids.isEmpty()) {
                    throw new IllegalArgumentException("select at least one job");
                }
                BulkResult r = switch (op) {
                    case "cancel" -> admin.cancelJobs(ids);
                    case "retry" -> admin.retryJobs(ids);
                    case "delete" -> admin.deleteJobs(ids);
                    default ->
                        throw new IllegalArgumentException("op must be cancel, retry or delete, but was '" + op + "'");
                };
                return describe(op, ids.size() + " selected jobs", r);
            }
            case "/jobs/matching" -> {
                String op = required(req, "op");
                Pages.JobFilter f = Pages.JobFilter.of(req::getParameter, req::getParameterValues);
                var q = f.toQuery();
                BulkResult r = switch (op) {
                    case "cancel" -> admin.cancelJobs(q);
                    case "retry" -> admin.retryJobs(q);
                    case "delete" -> admin.deleteJobs(q);
                    default ->
                        throw new IllegalArgumentException("op must be cancel, retry or delete, but was '" + op + "'");
                };
                return describe(op, "the jobs matching " + q, r)
                        + (r.more() ? "; more match beyond the " + Admin.MAX_BULK + " taken: apply again" : "");
            }
            case "/node/drain" -> {
                return result("drain node", controls.drainNode(required(req, "node"), who, reason));
            }
            case "/node/resume" -> {
                return result("resume node", controls.resumeNode(required(req, "node"), who));
            }
            case "/version/retire" -> {
                return result(
                        "retire version",
                        controls.retireVersion(required(req, "app"), required(req, "version"), who, reason));
            }
            case "/version/unretire" -> {
                return result(
                        "unretire version",
                        controls.unretireVersion(required(req, "app"), required(req, "version"), who));
            }
            case "/kind/disable" -> {
                return result("disable kind", controls.disableKind(required(req, "kind"), who, reason));
            }
            case "/kind/enable" -> {
                return result("enable kind", controls.enableKind(required(req, "kind"), who));
            }
            case "/schedule/pause" -> {
                return result("pause schedule", controls.pauseSchedule(required(req, "schedule"), who, reason));
            }
            case "/schedule/resume" -> {
                return result("resume schedule", controls.resumeSchedule(required(req, "schedule"), who, reason));
            }
            case "/schedule/trigger" -> {
                String name = required(req, "schedule");
                EnqueueResult r = admin.schedules().trigger(name);
                return "triggered schedule '" + name + "': " + r;
            }
            case "/lease/expire" -> {
                String name = required(req, "name");
                long generation = parseId(required(req, "generation"));
                return result("expire lease", controls.expireLease(name, generation, who, reason));
            }
            default -> throw new IllegalArgumentException("no action " + action);
        }
    }

    private static String describe(String op, String what, BulkResult r) {
        return op + " " + what + ": matched " + r.matched() + ", changed " + r.changed()
                + (op.equals("cancel") ? ", asked to stop " + r.cancelRequested() : "")
                + ", left alone " + (r.matched() - r.changed() - r.cancelRequested());
    }

    private static String result(String what, Controls.Result r) {
        return what + " '" + r.record().target() + "': " + (r.changed() ? "done" : "no change")
                + r.record().detail().map(d -> " (" + d + ")").orElse("") + ", recorded as control "
                + r.record().id();
    }

    // ---------------------------------------------------------------- security

    private static void headers(HttpServletResponse resp) {
        HEADERS.forEach(resp::setHeader);
    }

    private void signIn(
            HttpServletRequest req, HttpServletResponse resp, TokenAccess token, String presented, String path)
            throws IOException {
        if (!token.matches(presented)) {
            loginPage(req, resp, HttpServletResponse.SC_UNAUTHORIZED, "that is not this console's token");
            return;
        }
        HttpSession s = req.getSession(true);
        // A new session id on sign-in, so an id planted before it (session fixation) is worth nothing.
        req.changeSessionId();
        s.setAttribute(TokenAccess.SIGNED_IN, Boolean.TRUE);
        resp.setStatus(HttpServletResponse.SC_SEE_OTHER);
        resp.setHeader("Location", base(req) + (path.isEmpty() ? "/" : path));
    }

    private void loginPage(HttpServletRequest req, HttpServletResponse resp, int status, String problem)
            throws IOException {
        Map<String, Object> m = new HashMap<>();
        m.put("base", base(req));
        m.put("problem", problem == null ? "" : problem);
        m.put("tokenLogin", settings.access() instanceof TokenAccess);
        render(resp, "login", m, status);
    }

    /** The session's CSRF token, made on first use: 32 random bytes. */
    private String csrfToken(HttpServletRequest req) {
        HttpSession s = req.getSession(true);
        Object t = s.getAttribute(CSRF);
        if (t instanceof String str) {
            return str;
        }
        byte[] b = new byte[32];
        random.nextBytes(b);
        String made = Base64.getUrlEncoder().withoutPadding().encodeToString(b);
        s.setAttribute(CSRF, made);
        return made;
    }

    private static boolean csrfMatches(HttpServletRequest req) {
        HttpSession s = req.getSession(false);
        Object expected = s == null ? null : s.getAttribute(CSRF);
        String given = req.getParameter("csrf");
        return expected instanceof String e
                && given != null
                && MessageDigest.isEqual(e.getBytes(StandardCharsets.UTF_8), given.getBytes(StandardCharsets.UTF_8));
    }

    private void refuse(HttpServletRequest req, HttpServletResponse resp, int status, String why) throws IOException {
        Map<String, Object> m = model(req, path(req));
        m.put("problem", why);
        render(resp, "problem", m, status);
    }

    // ---------------------------------------------------------------- rendering

    private Map<String, Object> model(HttpServletRequest req, String path) {
        Map<String, Object> m = new HashMap<>();
        m.put("base", base(req));
        m.put("path", path);
        m.put("actions", settings.actionsEnabled());
        m.put("tokenLogin", settings.access() instanceof TokenAccess);
        m.put("csrf", settings.actionsEnabled() ? csrfToken(req) : "");
        m.put("problem", "");
        HttpSession s = req.getSession(false);
        Object flash = s == null ? null : s.getAttribute(FLASH);
        if (flash != null) {
            s.removeAttribute(FLASH);
        }
        m.put("flash", flash);
        return m;
    }

    private void notFound(HttpServletRequest req, HttpServletResponse resp, Map<String, Object> m, String what)
            throws IOException {
        m.put("problem", what);
        render(resp, "problem", m, HttpServletResponse.SC_NOT_FOUND);
    }

    private void render(HttpServletResponse resp, String template, Map<String, Object> model, int status)
            throws IOException {
        Context ctx = new Context(Locale.ROOT, model);
        String html = templates.process(template, ctx);
        resp.setStatus(status);
        resp.setContentType("text/html;charset=utf-8");
        resp.getOutputStream().write(html.getBytes(StandardCharsets.UTF_8));
    }

    // ---------------------------------------------------------------- helpers

    /** The console's path: where it is mounted, without a trailing slash ({@code ""} at the root). */
    static String base(HttpServletRequest req) {
        return req.getContextPath() + req.getServletPath();
    }

    private static String path(HttpServletRequest req) {
        String p = req.getPathInfo();
        return p == null ? "/" : p;
    }

    /** Where to go after an action: a path of the console given by the form, never another site. */
    static String back(String back) {
        if (back == null || !back.startsWith("/") || back.startsWith("//") || back.contains("\\")) {
            return "/";
        }
        for (int i = 0; i < back.length(); i++) {
            if (Character.isISOControl(back.charAt(i))) {
                return "/";
            }
        }
        return back;
    }

    private static long parseId(String s) {
        if (s == null || s.isEmpty() || s.length() > 19) {
            return -1;
        }
        for (int i = 0; i < s.length(); i++) {
            if (s.charAt(i) < '0' || s.charAt(i) > '9') {
                return -1;
            }
        }
        return Long.parseLong(s);
    }

    private static String required(HttpServletRequest req, String name) {
        String v = req.getParameter(name);
        if (v == null || v.isBlank()) {
            throw new IllegalArgumentException(name + " is required");
        }
        return v.strip();
    }

    private static String blankToNull(String s) {
        return s == null || s.isBlank() ? null : s.strip();
    }
}
