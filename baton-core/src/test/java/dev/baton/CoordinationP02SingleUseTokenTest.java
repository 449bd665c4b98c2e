package dev.baton;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReferenceArray;
import org.junit.jupiter.api.Test;

/**
 * FAULTS.md P02: a single-use token consumed concurrently on several nodes, or after expiry: one
 * success; expired tokens never succeed; only a hash is stored. Runs through PgBouncer too (E01).
 */
class CoordinationP02SingleUseTokenTest extends CoordinationFaultSupport {

    private static final int NODES = 4;
    private static final int TOKENS = 200;

    /**
     * P02: 200 tokens, minted on rotating nodes, each consumed by 2, 3 or 4 nodes released together
     * by a barrier: exactly one consumer gets the subject, everyone else gets empty.
     *
     * <p>Protection removed in a scratch copy and seen failing: the atomic {@code DELETE … RETURNING}
     * of {@code consume_token}, replaced by a read-then-delete ({@code WITH seen AS (SELECT …), gone
     * AS (DELETE … WHERE token_hash IN (SELECT token_hash FROM seen)) SELECT … FROM seen}). That
     * version is correct one call at a time, and only the race shows two successes for one token.
     */
    @Test
    void P02_tokenConsumedConcurrentlyOnSeveralNodesSucceedsOnce() throws Exception {
        List<Baton> nodes = nodes("p02", NODES, 3);
        List<String> tokens = new ArrayList<>();
        for (int i = 0; i < TOKENS; i++) {
            tokens.add(nodes.get(i % NODES)
                    .coordination()
                    .tokens()
                    .mint("ws-upgrade", "user-" + i, Duration.ofMinutes(5)));
        }
        AtomicIntegerArray successes = new AtomicIntegerArray(TOKENS);
        AtomicReferenceArray<String> subjects = new AtomicReferenceArray<>(TOKENS);
        CyclicBarrier barrier = new CyclicBarrier(NODES);
        List<Callable<Void>> tasks = new ArrayList<>();
        for (int t = 0; t < NODES; t++) {
            int me = t;
            Coordination coord = nodes.get(t).coordination();
            tasks.add(() -> {
                for (int i = 0; i < TOKENS; i++) {
                    int k = 2 + i % 3;
                    boolean racing = Math.floorMod(me - i, NODES) < k;
                    barrier.await(WAIT.toMillis(), TimeUnit.MILLISECONDS);
                    if (racing) {
                        Optional<String> got = coord.tokens().consume("ws-upgrade", tokens.get(i));
                        if (got.isPresent()) {
                            successes.incrementAndGet(i);
                            subjects.set(i, got.get());
                        }
                    }
                }
                return null;
            });
        }
        runAll(tasks);

        for (int i = 0; i < TOKENS; i++) {
            assertThat(successes.get(i))
                    .as("successful consumptions of token %d", i)
                    .isEqualTo(1);
            assertThat(subjects.get(i)).isEqualTo("user-" + i);
        }
        assertThat(count("SELECT count(*) FROM " + schema + ".single_use_token"))
                .as("consumed tokens are gone")
                .isZero();
        // And a consumed token stays consumed, on every node.
        for (Baton n : nodes) {
            assertThat(n.coordination().tokens().consume("ws-upgrade", tokens.get(0)))
                    .isEmpty();
        }
    }

    /**
     * P02: tokens consumed after their ttl has passed on the database clock never succeed, on any
     * node, even racing; the expired rows stay until the purge removes them.
     *
     * <p>Protection removed in a scratch copy and seen failing: {@code AND expires_at >
     * clock_timestamp()} in {@code consume_token} (every expired token was consumed once).
     */
    @Test
    void P02_tokenConsumedAfterExpiryNeverSucceeds() throws Exception {
        List<Baton> nodes = nodes("p02x", 3, 2);
        List<String> expired = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            expired.add(
                    nodes.get(i % 3).coordination().tokens().mint("ws-upgrade", "user-" + i, Duration.ofMillis(80)));
        }
        String live = nodes.get(0).coordination().tokens().mint("ws-upgrade", "user-live", Duration.ofMinutes(5));
        // Wait on the database clock until every short-lived token has expired.
        awaitDb("SELECT count(*) = 20 AND bool_and(expires_at <= clock_timestamp()) FROM " + schema
                + ".single_use_token WHERE subject <> 'user-live'");

        CyclicBarrier barrier = new CyclicBarrier(nodes.size());
        List<Callable<Integer>> tasks = new ArrayList<>();
        for (Baton n : nodes) {
            tasks.add(() -> {
                int succeeded = 0;
                for (String token : expired) {
                    barrier.await(WAIT.toMillis(), TimeUnit.MILLISECONDS);
                    if (n.coordination().tokens().consume("ws-upgrade", token).isPresent()) {
                        succeeded++;
                    }
                }
                return succeeded;
            });
        }
        assertThat(runAll(tasks)).as("expired tokens consumed, per node").containsOnly(0);
        assertThat(nodes.get(1).coordination().tokens().consume("ws-upgrade", live))
                .contains("user-live");

        assertThat(count("SELECT count(*) FROM " + schema + ".single_use_token"))
                .as("expired rows await the purge")
                .isEqualTo(20);
        assertThat(nodes.get(2).coordination().purgeExpired()).isEqualTo(20);
        assertThat(count("SELECT count(*) FROM " + schema + ".single_use_token"))
                .isZero();
        for (String token : expired) {
            assertThat(nodes.get(0).coordination().tokens().consume("ws-upgrade", token))
                    .isEmpty();
        }
    }

    /**
     * P02: only a hash is stored: {@code token_hash} is the 32-byte SHA-256 of the token, and no
     * column of the row holds the token's text or its decoded bytes.
     *
     * <p>Protection removed in a scratch copy and seen failing: hashing in {@code mint}/{@code consume}
     * (the token's own 32 random bytes stored as {@code token_hash}: the table's length check still
     * passes, this test does not).
     */
    @Test
    void P02_onlyTheTokenHashIsStored() throws Exception {
        Coordination coord = nodes("p02h", 1, 2).get(0).coordination();
        List<String> tokens = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            tokens.add(coord.tokens().mint("ws-upgrade", "user-" + i, Duration.ofMinutes(5)));
        }
        assertThat(
                        count(
                                "SELECT count(*) FROM information_schema.columns WHERE table_schema = '" + schema
                                        + "' AND table_name = 'single_use_token' AND column_name = 'token_hash' AND data_type = 'bytea'"))
                .isEqualTo(1);
        List<String> rows = new ArrayList<>();
        List<byte[]> hashes = new ArrayList<>();
        try (Connection c = pool.getConnection();
                ResultSet rs = c.createStatement()
                        .executeQuery("SELECT t.*, t::text AS whole_row, "
                                + "octet_length(t.token_hash) AS hash_len FROM " + schema + ".single_use_token t")) {
            ResultSetMetaData md = rs.getMetaData();
            while (rs.next()) {
                assertThat(rs.getInt("hash_len")).isEqualTo(32);
                hashes.add(rs.getBytes("token_hash"));
                StringBuilder all = new StringBuilder(rs.getString("whole_row"));
                for (int col = 1; col <= md.getColumnCount(); col++) {
                    all.append('\n').append(rs.getString(col));
                }
                rows.add(all.toString());
            }
        }
        assertThat(rows).hasSize(tokens.size());
        for (String token : tokens) {
            byte[] expected = Coordination.sha256(token);
            assertThat(hashes)
                    .as("a stored SHA-256 for every token")
                    .anySatisfy(h -> assertThat(h).isEqualTo(expected));
            String rawHex = HexFormat.of().formatHex(Base64.getUrlDecoder().decode(token));
            for (String row : rows) {
                assertThat(row).doesNotContain(token).doesNotContainIgnoringCase(rawHex);
            }
        }
        assertThat(coord.tokens().consume("ws-upgrade", tokens.get(3))).contains("user-3");
    }

    /**
     * P02: a token presented for the wrong purpose fails (and is not burnt by the attempt); garbage,
     * empty, null, over-long and altered tokens fail without an error.
     */
    @Test
    void P02_wrongPurposeAndGarbageTokensFailQuietly() throws Exception {
        List<Baton> nodes = nodes("p02g", 2, 2);
        Coordination a = nodes.get(0).coordination();
        Coordination b = nodes.get(1).coordination();
        String token = a.tokens().mint("ws-upgrade", null, Duration.ofMinutes(5));

        assertThat(b.tokens().consume("password-reset", token)).isEmpty();
        String altered = (token.charAt(0) == 'A' ? "B" : "A") + token.substring(1);
        for (String garbage : List.of(
                "",
                "garbage",
                "not a token at all!",
                "\u0000\u00ff\u2603",
                altered,
                token + "x",
                token.substring(1),
                "x".repeat(201),
                "x".repeat(200))) {
            assertThat(b.tokens().consume("ws-upgrade", garbage))
                    .as("consume(%s)", garbage)
                    .isEmpty();
        }
        assertThat(b.tokens().consume("ws-upgrade", null)).isEmpty();
        assertThat(count("SELECT count(*) FROM " + schema + ".single_use_token"))
                .isEqualTo(1);

        assertThat(b.tokens().consume("ws-upgrade", token))
                .as("null subject comes back empty")
                .contains("");
        assertThat(a.tokens().consume("ws-upgrade", token)).isEmpty();
    }
}
