package dev.baton.cli;

import dev.baton.Baton;
import dev.baton.LeaseInfo;
import dev.baton.NodeInfo;
import dev.baton.OwnershipView;
import java.io.PrintWriter;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import javax.sql.DataSource;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

@Command(name = "status", mixinStandardHelpOptions = true,
        header = "Shows every lease with its current owner, and every node with its role.",
        description = {"Shows who owns what right now: every lease with its current authorized owner, generation "
                + "(fencing token) and time left on the database clock, and every node with its role "
                + "(CURRENT_OWNER, ACTIVE, DRAINING, STALE, HISTORICAL). Read-only."},
        exitCodeListHeading = "%nExit codes:%n",
        exitCodeList = {"0:printed", "2:usage error, database unreachable, or the schema is not installed"})
final class StatusCommand implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Mixin
    DbOptions db;

    @Option(names = "--json", description = "Print JSON instead of tables.")
    boolean json;

    @Override
    public Integer call() {
        String url = db.url();
        String schema = db.schema();
        DataSource ds = Db.simple(url);
        Db.probe(ds, url);
        requireInstalled(ds, schema);
        // Never started (so nothing to close): reading leases and nodes needs no registration, heartbeat or listener.
        Baton baton = Baton.builder(ds).schema(schema).migrateOnStart(false).build();
        OwnershipView view = baton.nodes().ownership();
        PrintWriter out = spec.commandLine().getOut();
        out.print(json ? Json.write(toJson(schema, view)) : table(schema, view));
        out.flush();
        return Main.EXIT_OK;
    }

    static void requireInstalled(DataSource ds, String schema) {
        try (Connection c = ds.getConnection();
             PreparedStatement ps = c.prepareStatement(
                     "SELECT to_regclass(quote_ident(?) || '.lease') IS NOT NULL AND to_regclass(quote_ident(?) || '.node') IS NOT NULL")) {
            ps.setString(1, schema);
            ps.setString(2, schema);
            try (ResultSet rs = ps.executeQuery()) {
                rs.next();
                if (!rs.getBoolean(1)) {
                    throw CliException.usage("schema '" + schema + "' has no Baton tables; run `baton migrate --schema "
                            + schema + " --jdbc-url ...` first, or pass the right --schema");
                }
            }
        } catch (SQLException e) {
            throw new CliException(Main.EXIT_USAGE, "could not read schema '" + schema + "': " + Db.rootMessage(e), e);
        }
    }

    private static String table(String schema, OwnershipView view) {
        StringBuilder sb = new StringBuilder();
        sb.append("Baton schema '").append(schema).append("'");
        if (!view.dbNow().equals(Instant.EPOCH)) { // EPOCH: nothing was read that carries the database clock
            sb.append(", database time ").append(view.dbNow());
        }
        sb.append("\n\n");
        List<String[]> leaseRows = new ArrayList<>();
        leaseRows.add(new String[] {"LEASE", "OWNER", "GENERATION", "TIME LEFT", "ACQUIRED", "STATE"});
        for (OwnershipView.LeaseOwnership l : view.leases()) {
            LeaseInfo i = l.lease();
            String state = l.authorizedOwner().isPresent() ? (l.ownerNodeKnown() ? "held" : "held (owner not a registered node)")
                    : i.owner().isPresent() ? "expired (owner " + i.owner().get() + ")" : "free (released)";
            leaseRows.add(new String[] {i.name(), l.authorizedOwner().orElse("-"), Long.toString(i.generation()),
                    l.authorizedOwner().isPresent() ? Durations.human(i.remaining()) : "-",
                    ago(i.acquiredAt(), view.dbNow()), state});
        }
        sb.append("LEASES (").append(view.leases().size()).append(")\n");
        if (view.leases().isEmpty()) {
            sb.append("  none\n");
        } else {
            render(sb, leaseRows);
        }
        sb.append('\n');
        List<String[]> nodeRows = new ArrayList<>();
        nodeRows.add(new String[] {"NODE", "ROLE", "STATE", "HEARTBEAT", "HOST", "PID", "LEASES"});
        for (OwnershipView.NodeStatus n : view.nodes()) {
            NodeInfo i = n.node();
            nodeRows.add(new String[] {i.id(), n.role().name(), i.state().name().toLowerCase(java.util.Locale.ROOT),
                    ago(i.heartbeatAt(), i.dbNow()), i.host().orElse("-"), i.pid().map(String::valueOf).orElse("-"),
                    n.ownedLeases().isEmpty() ? "-" : String.join(",", n.ownedLeases())});
        }
        sb.append("NODES (").append(view.nodes().size()).append(")\n");
        if (view.nodes().isEmpty()) {
            sb.append("  none\n");
        } else {
            render(sb, nodeRows);
        }
        return sb.toString();
    }

    private static String ago(Instant then, Instant now) {
        Duration d = Duration.between(then, now);
        return d.isNegative() ? "just now" : Durations.human(d) + " ago";
    }

    private static void render(StringBuilder sb, List<String[]> rows) {
        int[] width = new int[rows.get(0).length];
        for (String[] r : rows) {
            for (int i = 0; i < r.length; i++) {
                width[i] = Math.max(width[i], r[i].length());
            }
        }
        for (String[] r : rows) {
            StringBuilder line = new StringBuilder("  ");
            for (int i = 0; i < r.length; i++) {
                line.append(r[i]);
                if (i + 1 < r.length) {
                    line.append(" ".repeat(width[i] - r[i].length() + 2));
                }
            }
            sb.append(line.toString().stripTrailing()).append('\n');
        }
    }

    private static Map<String, Object> toJson(String schema, OwnershipView view) {
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("schema", schema);
        root.put("dbNow", view.dbNow().equals(Instant.EPOCH) ? null : view.dbNow().toString());
        List<Object> leases = new ArrayList<>();
        for (OwnershipView.LeaseOwnership l : view.leases()) {
            LeaseInfo i = l.lease();
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("name", i.name());
            m.put("authorizedOwner", l.authorizedOwner().orElse(null));
            m.put("ownerNodeKnown", l.ownerNodeKnown());
            m.put("recordedOwner", i.owner().orElse(null));
            m.put("generation", i.generation());
            m.put("held", i.held());
            m.put("remainingMs", i.remaining().toMillis());
            m.put("acquiredAt", i.acquiredAt().toString());
            m.put("renewedAt", i.renewedAt().toString());
            m.put("expiresAt", i.expiresAt().toString());
            leases.add(m);
        }
        root.put("leases", leases);
        List<Object> nodes = new ArrayList<>();
        for (OwnershipView.NodeStatus n : view.nodes()) {
            NodeInfo i = n.node();
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("id", i.id());
            m.put("role", n.role().name());
            m.put("state", i.state().name());
            m.put("ownedLeases", List.copyOf(n.ownedLeases()));
            m.put("startedAt", i.startedAt().toString());
            m.put("heartbeatAt", i.heartbeatAt().toString());
            m.put("heartbeatIntervalMs", i.heartbeatInterval().toMillis());
            m.put("stoppedAt", i.stoppedAt().map(Instant::toString).orElse(null));
            m.put("host", i.host().orElse(null));
            m.put("pid", i.pid().orElse(null));
            m.put("protocolVersion", i.protocolVersion());
            nodes.add(m);
        }
        root.put("nodes", nodes);
        return root;
    }
}
