package dev.baton;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.baton.internal.db.Db;
import dev.baton.internal.db.Identifiers;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.HexFormat;
import java.util.Optional;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Replay-protected grants (see {@link Coordination#grants}): a signed, self-contained token with an id,
 * a subject, an expiry on the database clock and the subject's revocation epoch, that is accepted
 * <em>once</em> across all instances, never after its expiry and never after its subject was revoked. The
 * step-up grant ("re-authenticated in the last 5 minutes, may change the e-mail address once") is the case
 * it was made for: a process-local "used grants" set accepts such a grant once per instance.
 *
 * <pre>{@code
 * Revocations sessions = baton.coordination().revocations("session", Duration.ofSeconds(5));
 * Grants stepUp = baton.coordination().grants("step-up", secretKey, sessions);
 * String token = stepUp.issue(userId, Duration.ofMinutes(5));        // after the second factor
 * Optional<Grants.Grant> g = stepUp.redeem(token);                  // on any node: present once
 * sessions.revokeAll(userId);                                         // "log out everywhere"
 * }</pre>
 *
 * <p>The signature (HMAC-SHA256 with the key) is checked without the database; the revocation epoch (through
 * the revocations' cache, within its staleness bound), the expiry and the single use when the grant is
 * redeemed, the last two in one statement on the database clock. Only the grant's id is stored, until the
 * grant expires. Thread-safe.
 */
public final class Grants {
    /** The shortest key accepted: 32 bytes (256 bits), the HMAC-SHA256 block of security. */
    public static final int MIN_KEY_BYTES = 32;
    /** The longest lifetime of a grant: grants are for short steps, not sessions. */
    public static final Duration MAX_TTL = Duration.ofDays(1);

    private static final String MAC = "HmacSHA256";
    private static final int MAX_TOKEN_CHARS = 2048;
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final SecureRandom RANDOM = new SecureRandom();

    /** A redeemed grant. */
    public record Grant(String purpose, String subject, String id, long epoch, Instant issuedAt, Instant expiresAt) {}

    private final Coordination coord;
    private final String purpose;
    private final SecretKeySpec key;
    private final Revocations revocations;

    Grants(Coordination coord, String purpose, byte[] key, Revocations revocations) {
        this.coord = coord;
        this.purpose = Identifiers.name("grant purpose", purpose);
        if (key == null || key.length < MIN_KEY_BYTES) {
            throw new IllegalArgumentException("the grant key must have at least " + MIN_KEY_BYTES + " bytes (random, "
                    + "secret, the same on every instance), but had " + (key == null ? "none" : key.length));
        }
        this.key = new SecretKeySpec(key.clone(), MAC);
        this.revocations = revocations;
    }

    /**
     * Issues a grant for {@code subject}, valid for {@code ttl} from now on the database clock, under the
     * subject's current revocation epoch. Returns the token (URL-safe); nothing is stored.
     */
    public String issue(String subject, Duration ttl) {
        Identifiers.name("subject", subject);
        Checks.requirePositive("ttl", ttl, false);
        if (ttl.compareTo(MAX_TTL) > 0) {
            throw new IllegalArgumentException("a grant's ttl must be at most " + MAX_TTL + ", but was " + ttl);
        }
        long epoch = revocations == null ? 0 : revocations.epoch(subject);
        Instant now = dbNow();
        byte[] id = new byte[16];
        RANDOM.nextBytes(id);
        ObjectNode payload = JSON.createObjectNode();
        payload.put("v", 1);
        payload.put("p", purpose);
        payload.put("s", subject);
        payload.put("id", HexFormat.of().formatHex(id));
        payload.put("e", epoch);
        payload.put("iat", now.toEpochMilli());
        payload.put("exp", now.plus(ttl).toEpochMilli());
        byte[] body;
        try {
            body = JSON.writeValueAsBytes(payload);
        } catch (Exception e) {
            throw new IllegalStateException("cannot encode a grant", e);
        }
        Base64.Encoder b64 = Base64.getUrlEncoder().withoutPadding();
        return b64.encodeToString(body) + "." + b64.encodeToString(sign(body));
    }

    /**
     * Redeems a token: returns the grant to at most one caller across all instances, if its signature is
     * valid, it is for this purpose, it has not expired on the database clock, its subject has not been
     * revoked since it was issued (within the revocations' staleness bound), and it was not redeemed
     * before. Empty otherwise, whatever the reason (a forged, expired, revoked or replayed grant looks the
     * same to the caller).
     *
     * @throws UnknownOutcomeException the connection failed during COMMIT: the grant may have been redeemed
     *                                 (a retry is then refused as a replay); ask the user to step up again
     */
    public Optional<Grant> redeem(String token) {
        Optional<Grant> verified = verify(token);
        if (verified.isEmpty()) {
            return Optional.empty();
        }
        Grant g = verified.get();
        if (revocations != null && !revocations.isCurrent(g.subject(), g.epoch())) {
            return Optional.empty();
        }
        try {
            boolean first = coord.db()
                    .transaction(
                            "redeeming a '" + purpose + "' grant",
                            "; the grant may have been used: ask for a new one",
                            c -> coord.store()
                                    .redeemGrant(c, purpose, g.id(), g.subject(), g.expiresAt(), coord.nodeId()));
            return first ? Optional.of(g) : Optional.empty();
        } catch (SQLException e) {
            throw Db.failed("redeeming a '" + purpose + "' grant", e);
        }
    }

    /**
     * Checks a token's signature and purpose only (no database, no expiry, no single use): what it claims,
     * if this key signed it for this purpose. Use {@link #redeem} to act on it.
     */
    public Optional<Grant> verify(String token) {
        if (token == null || token.isEmpty() || token.length() > MAX_TOKEN_CHARS) {
            return Optional.empty();
        }
        int dot = token.indexOf('.');
        if (dot <= 0 || dot != token.lastIndexOf('.')) {
            return Optional.empty();
        }
        try {
            Base64.Decoder b64 = Base64.getUrlDecoder();
            byte[] body = b64.decode(token.substring(0, dot));
            byte[] signature = b64.decode(token.substring(dot + 1));
            if (!MessageDigest.isEqual(sign(body), signature)) {
                return Optional.empty();
            }
            JsonNode p = JSON.readTree(body);
            if (p.path("v").asInt() != 1 || !purpose.equals(p.path("p").asText(null))) {
                return Optional.empty();
            }
            return Optional.of(new Grant(
                    purpose,
                    p.get("s").asText(),
                    p.get("id").asText(),
                    p.get("e").asLong(),
                    Instant.ofEpochMilli(p.get("iat").asLong()),
                    Instant.ofEpochMilli(p.get("exp").asLong())));
        } catch (IllegalArgumentException | java.io.IOException | NullPointerException e) {
            return Optional.empty(); // not base64, not JSON, or a field missing: not a grant of ours
        }
    }

    private byte[] sign(byte[] body) {
        try {
            Mac mac = Mac.getInstance(MAC);
            mac.init(key);
            return mac.doFinal(body);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is required by every Java platform", e);
        }
    }

    private Instant dbNow() {
        return coord.db()
                .callUnchecked(
                        "issuing a '" + purpose + "' grant (reading the database clock)",
                        c -> coord.store().dbNow(c));
    }
}
