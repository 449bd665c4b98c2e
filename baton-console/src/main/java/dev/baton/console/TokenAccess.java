package dev.baton.console;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpSession;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;

/** The standalone console's token: a session that presented it may look and act (see {@link ConsoleAccess#token}). */
final class TokenAccess implements ConsoleAccess {
    static final String SIGNED_IN = "dev.baton.console.signedIn";
    /** Shorter tokens could be guessed by an attacker who can reach the port. */
    static final int MIN_TOKEN_LENGTH = 16;

    private final byte[] token;

    TokenAccess(String token) {
        if (token == null || token.length() < MIN_TOKEN_LENGTH) {
            throw new IllegalArgumentException("token must be at least " + MIN_TOKEN_LENGTH + " characters, but was "
                    + (token == null ? "null" : token.length() + " characters"));
        }
        this.token = token.getBytes(StandardCharsets.UTF_8);
    }

    /** A new random token: 24 bytes of {@link SecureRandom}, URL-safe base64 (32 characters). */
    static String newToken() {
        byte[] b = new byte[24];
        new SecureRandom().nextBytes(b);
        return Base64.getUrlEncoder().withoutPadding().encodeToString(b);
    }

    /** True if {@code presented} is the token; constant time, so the answer's timing does not leak a prefix. */
    boolean matches(String presented) {
        return presented != null && MessageDigest.isEqual(token, presented.getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public boolean mayView(HttpServletRequest request) {
        HttpSession s = request.getSession(false);
        return s != null && Boolean.TRUE.equals(s.getAttribute(SIGNED_IN));
    }

    @Override
    public Actor actor(HttpServletRequest request) {
        if (!mayView(request)) {
            return Actor.refused("sign in with the console's token first");
        }
        String operator = request.getParameter("operator");
        return Actor.of(operator == null || operator.isBlank() ? "console" : "console:" + operator.strip());
    }
}
