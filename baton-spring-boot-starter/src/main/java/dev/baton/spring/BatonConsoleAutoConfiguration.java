package dev.baton.spring;

import dev.baton.Baton;
import dev.baton.console.BatonConsoleServlet;
import dev.baton.console.ConsoleAccess;
import dev.baton.console.ConsoleSettings;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.web.servlet.ServletRegistrationBean;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.util.ClassUtils;

/**
 * Mounts Baton's operator console ({@code dev.baton:baton-console}) in a servlet web application at
 * {@code baton.console.path} when {@code baton.console.enabled=true}. Read-only unless
 * {@code baton.console.actions-enabled=true}; then, with Spring Security on the class path, an operator needs
 * {@code baton.console.role} to act (the application's security rules decide who reaches the path at all);
 * without it, actions are refused unless {@code baton.console.allow-actions-without-security=true}. Every
 * action also needs the console's CSRF token.
 */
@AutoConfiguration(after = BatonAutoConfiguration.class)
@ConditionalOnClass(
        name = {
            "dev.baton.console.BatonConsoleServlet",
            "jakarta.servlet.http.HttpServlet",
            "org.springframework.boot.web.servlet.ServletRegistrationBean"
        })
@ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
@ConditionalOnBean(Baton.class)
@ConditionalOnProperty(prefix = "baton.console", name = "enabled", havingValue = "true")
@EnableConfigurationProperties(BatonProperties.class)
public class BatonConsoleAutoConfiguration {
    private static final Logger log = LoggerFactory.getLogger(BatonConsoleAutoConfiguration.class);

    /** Present when Spring Security is on the class path (its request wrapper answers isUserInRole). */
    static final String SECURITY_CLASS = "org.springframework.security.core.context.SecurityContextHolder";

    @Bean
    ServletRegistrationBean<BatonConsoleServlet> batonConsole(
            Baton baton, BatonProperties properties, ApplicationContext context) {
        BatonProperties.Console p = properties.getConsole();
        String path = validPath(p.getPath());
        InvalidBatonPropertyException.check("baton.console.role", p.getRole(), () -> ConsoleAccess.role(p.getRole()));
        boolean security = ClassUtils.isPresent(SECURITY_CLASS, context.getClassLoader());
        ConsoleAccess access;
        if (security) {
            access = ConsoleAccess.role(p.getRole());
        } else if (p.isAllowActionsWithoutSecurity()) {
            access = ConsoleAccess.open();
        } else {
            access = ConsoleAccess.viewOnly("actions need Spring Security (and role " + p.getRole()
                    + "), or baton.console.allow-actions-without-security=true");
        }
        ConsoleSettings settings = new ConsoleSettings(p.isActionsEnabled(), access);
        if (p.isActionsEnabled() && !security && !p.isAllowActionsWithoutSecurity()) {
            log.warn(
                    "baton.console.actions-enabled=true, but Spring Security is not on the class path: the console "
                            + "at {} refuses every action (set baton.console.allow-actions-without-security=true to allow them "
                            + "to anyone who reaches it)",
                    path);
        }
        log.info(
                "Baton console at {} ({}{})",
                path,
                p.isActionsEnabled() ? "actions enabled" : "read-only",
                p.isActionsEnabled() ? (security ? ", role " + p.getRole() : ", no Spring Security") : "");
        ServletRegistrationBean<BatonConsoleServlet> bean =
                new ServletRegistrationBean<>(new BatonConsoleServlet(baton, settings), path + "/*");
        bean.setName("batonConsole");
        return bean;
    }

    static String validPath(String path) {
        if (path == null
                || !path.startsWith("/")
                || path.length() < 2
                || path.endsWith("/")
                || path.contains("*")
                || path.contains("?")
                || path.contains("#")
                || path.contains("//")) {
            throw new InvalidBatonPropertyException(
                    "baton.console.path",
                    path,
                    "must be a path like /baton: a leading slash, no trailing slash, no wildcard, query or fragment",
                    null);
        }
        return path;
    }
}
