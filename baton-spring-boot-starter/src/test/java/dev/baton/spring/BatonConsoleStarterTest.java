package dev.baton.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.baton.Baton;
import dev.baton.ControlRecord;
import dev.baton.console.BatonConsoleServlet;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.WebApplicationContextRunner;
import org.springframework.boot.web.servlet.ServletRegistrationBean;
import org.springframework.mock.web.MockHttpServletRequest;
import org.springframework.mock.web.MockHttpServletResponse;
import org.springframework.mock.web.MockHttpSession;
import org.springframework.mock.web.MockServletContext;

/**
 * The console mounted by the starter: not at all unless enabled, read-only by default, actions only for the
 * configured role when Spring Security is present, refused without it unless explicitly allowed, and never
 * without the CSRF token. The servlet is driven with Spring's servlet mocks (a user, roles, a session) against
 * the real database. To see {@link #enabledActionsNeedTheRoleAndTheCsrfToken} fail, register the servlet with
 * {@code ConsoleAccess.open()} whatever the class path: the user without the role drains the node.
 */
class BatonConsoleStarterTest extends StarterTestSupport {

    private WebApplicationContextRunner web() {
        WebApplicationContextRunner r = new WebApplicationContextRunner()
                .withConfiguration(
                        AutoConfigurations.of(BatonAutoConfiguration.class, BatonConsoleAutoConfiguration.class))
                .withBean(javax.sql.DataSource.class, () -> PG.newPool("starter-console", 4))
                .withPropertyValues(
                        "baton.schema=" + schema,
                        "baton.notifications=" + (PG.pooled() ? "POLL" : "AUTO"),
                        "baton.node-id=console-node",
                        "baton.worker.enabled=false");
        return r;
    }

    /** One browser session against the mounted console. */
    static final class Session {
        final BatonConsoleServlet servlet;
        final String path;
        final MockHttpSession session = new MockHttpSession();
        String user;
        String[] roles = {};

        Session(ServletRegistrationBean<?> bean) {
            this.servlet = (BatonConsoleServlet) bean.getServlet();
            this.path = bean.getUrlMappings().iterator().next().replace("/*", "");
        }

        MockHttpServletResponse send(String method, String page, Map<String, String> form) throws Exception {
            MockHttpServletRequest req = new MockHttpServletRequest(new MockServletContext(), method, path + page);
            req.setServletPath(path);
            req.setPathInfo(page);
            req.setSession(session);
            if (user != null) {
                req.setRemoteUser(user);
                req.addUserRole("ignored");
                for (String r : roles) {
                    req.addUserRole(r);
                }
            }
            form.forEach(req::addParameter);
            MockHttpServletResponse resp = new MockHttpServletResponse();
            servlet.service(req, resp);
            return resp;
        }

        String csrf() throws Exception {
            Matcher m = Pattern.compile("name=\"csrf\" value=\"([^\"]+)\"")
                    .matcher(send("GET", "/nodes", Map.of()).getContentAsString());
            assertThat(m.find()).as("a CSRF field on the nodes page").isTrue();
            return m.group(1);
        }
    }

    @Test
    void notMountedUnlessEnabled() {
        web().run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context).doesNotHaveBean("batonConsole");
        });
    }

    @Test
    void readOnlyByDefault() {
        web().withPropertyValues("baton.console.enabled=true").run(context -> {
            assertThat(context).hasNotFailed();
            ServletRegistrationBean<?> bean = context.getBean("batonConsole", ServletRegistrationBean.class);
            assertThat(bean.getUrlMappings()).containsExactly("/baton/*");
            Session s = new Session(bean);
            s.user = "alice";
            s.roles = new String[] {"BATON_ADMIN"};
            MockHttpServletResponse page = s.send("GET", "/nodes", Map.of());
            assertThat(page.getStatus()).isEqualTo(200);
            assertThat(page.getContentAsString()).contains("console-node").contains("href=\"/baton/jobs\"");
            assertThat(page.getHeader("Content-Security-Policy")).startsWith("default-src 'self'");
            MockHttpServletResponse post =
                    s.send("POST", "/actions/node/drain", Map.of("node", "console-node", "csrf", "x"));
            assertThat(post.getStatus()).isEqualTo(403);
            assertThat(post.getContentAsString()).contains("read-only");
            assertThat(context.getBean(Baton.class).controls().standing()).isEmpty();
        });
    }

    @Test
    void enabledActionsNeedTheRoleAndTheCsrfToken() {
        web().withPropertyValues(
                        "baton.console.enabled=true",
                        "baton.console.path=/ops/baton",
                        "baton.console.actions-enabled=true",
                        "baton.console.role=OPS")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    Session s = new Session(context.getBean("batonConsole", ServletRegistrationBean.class));
                    assertThat(s.path).isEqualTo("/ops/baton");
                    Map<String, String> drain = Map.of("node", "console-node", "reason", "deploy", "back", "/nodes");

                    s.user = "mallory";
                    String csrf = s.csrf();
                    MockHttpServletResponse noRole = s.send("POST", "/actions/node/drain", with(drain, csrf));
                    assertThat(noRole.getStatus()).isEqualTo(403);
                    assertThat(noRole.getContentAsString()).contains("actions need role OPS");

                    s.user = "alice";
                    s.roles = new String[] {"OPS"};
                    assertThat(s.send("POST", "/actions/node/drain", drain).getStatus())
                            .isEqualTo(403);
                    assertThat(s.send("POST", "/actions/node/drain", with(drain, csrf + "x"))
                                    .getStatus())
                            .isEqualTo(403);
                    Baton baton = context.getBean(Baton.class);
                    assertThat(baton.controls().standing()).isEmpty();

                    MockHttpServletResponse ok = s.send("POST", "/actions/node/drain", with(drain, csrf));
                    assertThat(ok.getStatus()).isEqualTo(303);
                    assertThat(ok.getHeader("Location")).isEqualTo("/ops/baton/nodes");
                    assertThat(baton.controls().standing())
                            .extracting(ControlRecord::target, ControlRecord::createdBy)
                            .containsExactly(org.assertj.core.groups.Tuple.tuple("console-node", "alice"));
                });
    }

    @Test
    void withoutSpringSecurityActionsAreRefusedUnlessExplicitlyAllowed() {
        WebApplicationContextRunner noSecurity = web().withClassLoader(
                        new FilteredClassLoader("org.springframework.security"))
                .withPropertyValues("baton.console.enabled=true", "baton.console.actions-enabled=true");
        Map<String, String> drain = Map.of("node", "console-node", "reason", "deploy");
        noSecurity.run(context -> {
            assertThat(context).hasNotFailed();
            Session s = new Session(context.getBean("batonConsole", ServletRegistrationBean.class));
            MockHttpServletResponse r = s.send("POST", "/actions/node/drain", with(drain, s.csrf()));
            assertThat(r.getStatus()).isEqualTo(403);
            assertThat(r.getContentAsString()).contains("baton.console.allow-actions-without-security=true");
        });
        noSecurity
                .withPropertyValues("baton.console.allow-actions-without-security=true")
                .run(context -> {
                    Session s = new Session(context.getBean("batonConsole", ServletRegistrationBean.class));
                    assertThat(s.send("POST", "/actions/node/drain", drain).getStatus())
                            .as("still no action without the CSRF token")
                            .isEqualTo(403);
                    assertThat(s.send("POST", "/actions/node/drain", with(drain, s.csrf()))
                                    .getStatus())
                            .isEqualTo(303);
                    assertThat(context.getBean(Baton.class).controls().standing())
                            .extracting(ControlRecord::createdBy)
                            .containsExactly("console");
                });
    }

    @Test
    void badConsolePropertiesFailTheStart() {
        for (String path : new String[] {"baton", "/baton/", "/baton/*", "/"}) {
            web().withPropertyValues("baton.console.enabled=true", "baton.console.path=" + path)
                    .run(context -> {
                        assertThat(context).hasFailed();
                        assertThat(context.getStartupFailure())
                                .hasStackTraceContaining("Invalid value '" + path + "' for baton.console.path: must be "
                                        + "a path like /baton");
                    });
        }
        web().withPropertyValues("baton.console.enabled=true", "baton.console.role= ")
                .run(context -> {
                    assertThat(context).hasFailed();
                    assertThat(context.getStartupFailure()).hasStackTraceContaining("baton.console.role");
                });
    }

    private static Map<String, String> with(Map<String, String> form, String csrf) {
        Map<String, String> m = new java.util.HashMap<>(form);
        m.put("csrf", csrf);
        return m;
    }
}
