package dev.baton;

import java.time.Instant;
import java.util.Optional;

/**
 * One control an operator issued, as recorded: the audit log of {@link Controls} is a list of these.
 *
 * @param id        increasing with every control issued (the audit log's order)
 * @param action    what it does
 * @param target    what it applies to: a node id, {@code app@version}, a job kind, a lease or schedule name
 * @param active    a standing control still in force; false once lifted, and always for one-shot actions
 * @param reason    why, as the operator wrote it
 * @param detail    what a one-shot action found and did (for a lease expiry: the term it ended)
 * @param createdBy who issued it
 * @param createdAt when, on the database clock
 * @param liftedBy  who lifted a standing control
 * @param liftedAt  when it was lifted
 */
public record ControlRecord(
        long id,
        ControlAction action,
        String target,
        boolean active,
        Optional<String> reason,
        Optional<String> detail,
        String createdBy,
        Instant createdAt,
        Optional<String> liftedBy,
        Optional<Instant> liftedAt) {}
