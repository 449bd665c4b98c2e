package dev.baton.cli.auditfixture;

import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

/** Audited by AuditCommandTest: one high finding (a replay set) and one medium (a counter). */
public final class ReplayGuard {
    static final Set<String> SEEN_NONCES = new HashSet<>();
    static final AtomicLong CHECKS = new AtomicLong();
    static final List<String> ALLOWED = List.of("a", "b");

    private ReplayGuard() {}

    public static synchronized boolean first(String nonce) {
        CHECKS.incrementAndGet();
        return ALLOWED.contains(nonce) && SEEN_NONCES.add(nonce);
    }
}
