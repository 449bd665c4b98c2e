package dev.baton.console;

import jakarta.servlet.http.HttpServletRequest;
import java.util.Optional;

/**
 * Who may look at the console and who may act through it: the one place the standalone console's token and
 * a Spring application's roles plug in. The console asks {@link #mayView} before every page and action, and
 * {@link #actor} before every action (after checking that actions are enabled, and before checking the
 * request's CSRF token). Implementations must be thread-safe.
 */
public interface ConsoleAccess {

    /** Whether this request may see the console's pages. */
    boolean mayView(HttpServletRequest request);

    /**
     * Who acts on this request, recorded as the actor of the control or shown with the bulk action; or the
     * reason the request may not act.
     */
    Actor actor(HttpServletRequest request);

    /** The name an action is recorded under, or why the request may not act. */
    record Actor(Optional<String> name, String refusal) {
        /** A request that may act as {@code name}. */
        public static Actor of(String name) {
            if (name == null || name.isBlank()) {
                throw new IllegalArgumentException("actor name must not be blank, but was '" + name + "'");
            }
            return new Actor(Optional.of(name), "");
        }

        /** A request that may not act, and why (shown to the operator). */
        public static Actor refused(String why) {
            return new Actor(Optional.empty(), why);
        }
    }

    /**
     * The standalone console's access: nothing is shown until the browser presents {@code token} (as
     * {@code ?token=} on any page, or on the login form), which marks its session as signed in. Actions are
     * recorded as {@code console}, or {@code console:<operator>} when the form names an operator.
     *
     * @param token at least 16 characters; compared in constant time
     */
    static ConsoleAccess token(String token) {
        return new TokenAccess(token);
    }

    /** A new random token for {@link #token}: 24 random bytes, URL-safe base64 (32 characters). */
    static String newToken() {
        return TokenAccess.newToken();
    }

    /**
     * Access behind the application's own authentication (Spring Security): every request that reaches the
     * console may look; only a user in {@code role} may act, recorded under its {@code getRemoteUser()}.
     */
    static ConsoleAccess role(String role) {
        if (role == null || role.isBlank()) {
            throw new IllegalArgumentException("role must name a role, but was '" + role + "'");
        }
        return new ConsoleAccess() {
            @Override
            public boolean mayView(HttpServletRequest request) {
                return true;
            }

            @Override
            public Actor actor(HttpServletRequest request) {
                if (request.getRemoteUser() == null) {
                    return Actor.refused("actions need a signed-in user with role " + role);
                }
                if (!request.isUserInRole(role)) {
                    return Actor.refused("actions need role " + role + ", which the signed-in user does not have");
                }
                return Actor.of(request.getRemoteUser());
            }
        };
    }

    /**
     * No authentication: every request may look, and act as its remote user if the container knows one, else
     * as {@code console}. Only for a console the network already protects, and only when explicitly allowed
     * ({@code baton.console.allow-actions-without-security}).
     */
    static ConsoleAccess open() {
        return new ConsoleAccess() {
            @Override
            public boolean mayView(HttpServletRequest request) {
                return true;
            }

            @Override
            public Actor actor(HttpServletRequest request) {
                return Actor.of(Optional.ofNullable(request.getRemoteUser()).orElse("console"));
            }
        };
    }

    /** Every request may look; no request may act, for {@code why} (shown when one tries). */
    static ConsoleAccess viewOnly(String why) {
        return new ConsoleAccess() {
            @Override
            public boolean mayView(HttpServletRequest request) {
                return true;
            }

            @Override
            public Actor actor(HttpServletRequest request) {
                return Actor.refused(why);
            }
        };
    }
}
