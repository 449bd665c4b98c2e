package dev.baton;

import dev.baton.internal.db.Db;
import dev.baton.internal.db.Identifiers;
import dev.baton.internal.node.ControlStore;
import java.util.List;
import java.util.Optional;
import javax.sql.DataSource;

/**
 * Operators' controls, applied through the database: drain a node or retire an application version
 * (its nodes claim nothing new, finish or hand back their jobs and step down from every lease, as on
 * SIGTERM, but keep running so they can be resumed), disable a job kind, pause or resume a schedule,
 * expire a lease. Every node reads the standing controls with each heartbeat, so a control reaches every
 * running node within one heartbeat interval (and a node that starts obeys them before its first claim).
 *
 * <p>Every request is recorded — who, when, what, why — including one that changed nothing (its
 * {@link ControlRecord#detail()} says so): {@link #audit} lists them newest first. Two operators acting at
 * once on one target are put in order by the database: the first drain creates the control, the second
 * finds it in force. Thread-safe.
 *
 * <p>Nodes of a version before this API (schema 12) do not read controls; they hold once every node runs
 * this version or later.
 */
public final class Controls {
    /** The longest reason an operator may give. */
    public static final int MAX_REASON_LENGTH = 2000;

    /**
     * What expiring a lease does and does not stop, for the operator to confirm before {@link #expireLease}.
     */
    public static final String EXPIRE_LEASE_CONSEQUENCES = "Expiring the lease ends its current term now. From then on "
            + "the holder's fenced writes (LeaderContext.fenced, Leases.fenced) fail, and another node may take the "
            + "lease at the next generation at once. It does NOT stop the holder's process or anything it does without "
            + "a fence (calls to other systems, files, unfenced SQL) until the holder notices: at its next renewal, "
            + "or at its local deadline at the latest. A write fenced before the expiry and still in flight finishes "
            + "first (the expiry waits for it).";

    private final Db db;
    private final ControlStore store;
    private final Schedules schedules;

    Controls(DataSource dataSource, String schema, String leaseChannel, Schedules schedules) {
        this.db = Db.of(dataSource);
        this.store = new ControlStore(schema, leaseChannel);
        this.schedules = schedules;
    }

    /** What a control request did. */
    public record Result(boolean changed, ControlRecord record) {}

    /** Drains node {@code nodeId} until {@link #resumeNode}: it claims nothing new, hands back its jobs, steps down. */
    public Result drainNode(String nodeId, String actor, String reason) {
        return issue(ControlAction.DRAIN_NODE, Identifiers.name("node id", nodeId), actor, reason);
    }

    /** Lifts a drain of {@code nodeId}: it claims and campaigns again (unless its version is retired). */
    public Result resumeNode(String nodeId, String actor) {
        return lift(ControlAction.DRAIN_NODE, Identifiers.name("node id", nodeId), actor);
    }

    /**
     * Retires version {@code version} of application {@code app} (as declared with {@link
     * Baton.Builder#application}): its nodes are drained, and stay drained when restarted, until
     * {@link #unretireVersion}. Work moves to the nodes of other versions.
     */
    public Result retireVersion(String app, String version, String actor, String reason) {
        return issue(ControlAction.RETIRE_VERSION, versionTarget(app, version), actor, reason);
    }

    /** Lifts a retirement: the version's nodes claim and campaign again (unless drained one by one). */
    public Result unretireVersion(String app, String version, String actor) {
        return lift(ControlAction.RETIRE_VERSION, versionTarget(app, version), actor);
    }

    /**
     * Disables job kind {@code kind} on every node: none claims its jobs (they wait, using no attempt, and
     * are not failed as unhandled) until {@link #enableKind}. Attempts already running go on.
     */
    public Result disableKind(String kind, String actor, String reason) {
        return issue(ControlAction.DISABLE_KIND, Identifiers.name("job kind", kind), actor, reason);
    }

    /** Lifts a {@link #disableKind}. */
    public Result enableKind(String kind, String actor) {
        return lift(ControlAction.DISABLE_KIND, Identifiers.name("job kind", kind), actor);
    }

    /** Pauses schedule {@code name} cluster-wide (see {@link Schedules#pause}), recorded. */
    public Result pauseSchedule(String name, String actor, String reason) {
        return scheduleAction(ControlAction.PAUSE_SCHEDULE, name, actor, reason);
    }

    /** Resumes schedule {@code name} (see {@link Schedules#resume}), recorded. */
    public Result resumeSchedule(String name, String actor, String reason) {
        return scheduleAction(ControlAction.RESUME_SCHEDULE, name, actor, reason);
    }

    /**
     * Ends term {@code generation} of lease {@code name} now, if it is still the current term (so two
     * operators expiring the same term end it once). Read {@link #EXPIRE_LEASE_CONSEQUENCES} first: fencing
     * stops the old holder's fenced writes, not its process.
     */
    public Result expireLease(String name, long generation, String actor, String reason) {
        Identifiers.name("lease name", name);
        if (generation < 1) {
            throw new IllegalArgumentException(
                    "generation must be the lease's current generation (1 or more), but was " + generation);
        }
        String who = actor(actor);
        String why = reason(reason);
        String target = name;
        return db.transactionUnchecked("expiring lease '" + name + "'", c -> {
            Optional<ControlStore.ExpiredTerm> ended = store.expireLease(c, name, generation);
            String detail = ended.map(t -> "ended generation " + t.generation() + " held by '" + t.owner() + "'")
                    .orElse("no change: generation " + generation + " is not the lease's live term");
            return new Result(ended.isPresent(), store.record(c, ControlAction.EXPIRE_LEASE, target, why, detail, who));
        });
    }

    /** The standing controls in force, oldest first. */
    public List<ControlRecord> standing() {
        return db.callUnchecked("reading the standing controls", store::standing);
    }

    /**
     * One page of the record of every control request, newest first, starting after {@code after} (a
     * cursor from the previous page; {@code null} or empty for the first).
     *
     * @param limit 1 to {@link Page#MAX_LIMIT}
     */
    public Page<ControlRecord> audit(String after, int limit) {
        Page.requireLimit(limit);
        long before;
        if (after == null || after.isEmpty()) {
            before = Long.MAX_VALUE;
        } else {
            try {
                before = Long.parseLong(after);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException(
                        "cursor must be the next cursor of an earlier audit page, but was '" + after + "'");
            }
        }
        List<ControlRecord> rows = db.callUnchecked("reading the control log", c -> store.audit(c, before, limit + 1));
        return Page.of(rows, limit, r -> Long.toString(r.id()));
    }

    private Result issue(ControlAction action, String target, String actor, String reason) {
        String who = actor(actor);
        String why = reason(reason);
        return db.transactionUnchecked(describe(action, target), c -> {
            Optional<ControlRecord> issued = store.issue(c, action, target, why, who);
            if (issued.isPresent()) {
                return new Result(true, issued.get());
            }
            String since = store.findStanding(c, action, target)
                    .map(r -> " since " + r.createdAt() + " by '" + r.createdBy() + "' (control " + r.id() + ")")
                    .orElse("");
            return new Result(false, store.record(c, action, target, why, "no change: already in force" + since, who));
        });
    }

    private Result lift(ControlAction action, String target, String actor) {
        String who = actor(actor);
        return db.transactionUnchecked("lifting " + describe(action, target), c -> {
            Optional<ControlRecord> lifted = store.lift(c, action, target, who);
            if (lifted.isPresent()) {
                return new Result(true, lifted.get());
            }
            return new Result(false, store.record(c, action, target, null, "no change: not in force", who));
        });
    }

    private Result scheduleAction(ControlAction action, String name, String actor, String reason) {
        Schedule.validName(name);
        String who = actor(actor);
        String why = reason(reason);
        boolean pause = action == ControlAction.PAUSE_SCHEDULE;
        boolean exists = pause ? schedules.pause(name) : schedules.resume(name);
        if (!exists) {
            throw new IllegalArgumentException("there is no schedule named '" + name + "'");
        }
        return db.callUnchecked(
                describe(action, name),
                c -> new Result(true, store.record(c, action, name, why, pause ? "paused" : "resumed", who)));
    }

    private static String versionTarget(String app, String version) {
        return ControlStore.versionTarget(
                Identifiers.name("application name", app), Identifiers.name("application version", version));
    }

    private static String actor(String actor) {
        return Identifiers.name("actor (who is acting)", actor);
    }

    private static String reason(String reason) {
        if (reason != null && reason.length() > MAX_REASON_LENGTH) {
            throw new IllegalArgumentException("reason must be at most " + MAX_REASON_LENGTH + " characters, but was "
                    + reason.length() + " characters");
        }
        return reason;
    }

    private static String describe(ControlAction action, String target) {
        return action.name().toLowerCase(java.util.Locale.ROOT).replace('_', ' ') + " of '" + target + "'";
    }
}
