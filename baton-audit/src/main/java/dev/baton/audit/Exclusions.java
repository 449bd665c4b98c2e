package dev.baton.audit;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.LocalDate;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * Deliberate exclusions, checked in beside the code so the next sweep does not re-litigate them.
 * A YAML (or JSON) file:
 *
 * <pre>{@code
 * exclusions:
 *   - class: com.example.FeatureFlags        # binary class name; '*' matches any characters
 *     member: flags                          # optional: the field or method
 *     category: SINGLETON_STATE              # optional: the enum name or rule id
 *     reason: Read-only after start-up; every instance loads the same file.
 *     owner: platform-team                   # optional
 *     expires: 2027-01-31                    # optional: after this day the finding is reported again
 * }</pre>
 *
 * Every entry must carry a {@code reason}. An entry that matched nothing is reported as stale; an
 * expired entry no longer hides its findings and is reported. Immutable and thread-safe.
 */
public final class Exclusions {
    private static final Set<String> KEYS = Set.of("class", "member", "category", "reason", "owner", "expires");
    private static final Exclusions NONE = new Exclusions(List.of(), "(none)");

    /**
     * One exclusion.
     *
     * @param className binary class name or a pattern with {@code *}
     * @param member    field or method name, or null for every member
     * @param category  the category, or null for every category
     * @param reason    why this state is deliberate (never blank)
     * @param owner     who answers for it, or null
     * @param expires   the last day it applies, or null
     * @param where     where it was declared, e.g. {@code baton-audit.yml entry 3}
     */
    public record Entry(
            String className,
            String member,
            Category category,
            String reason,
            String owner,
            LocalDate expires,
            String where) {
        /** True if this entry covers {@code finding} (ignoring expiry). */
        public boolean matches(Finding finding) {
            return pattern(className).matcher(finding.className()).matches()
                    && (member == null || member.equals(finding.member()))
                    && (category == null || category == finding.category());
        }

        /** True if the entry no longer applies on {@code today}. */
        public boolean expiredOn(LocalDate today) {
            return expires != null && today.isAfter(expires);
        }

        /** {@code class[.member][ (category)]}. */
        public String target() {
            return className + (member == null ? "" : "." + member) + (category == null ? "" : " (" + category + ")");
        }

        private static Pattern pattern(String glob) {
            String[] parts = glob.split("\\*", -1);
            StringBuilder re = new StringBuilder();
            for (int i = 0; i < parts.length; i++) {
                re.append(i > 0 ? ".*" : "").append(Pattern.quote(parts[i]));
            }
            return Pattern.compile(re.toString());
        }
    }

    private final List<Entry> entries;
    private final String origin;

    private Exclusions(List<Entry> entries, String origin) {
        this.entries = List.copyOf(entries);
        this.origin = origin;
    }

    /** No exclusions. */
    public static Exclusions none() {
        return NONE;
    }

    /**
     * Reads an exclusions file (YAML or JSON).
     *
     * @throws AuditException if the file is missing or unreadable, or an entry is invalid; the message
     *                        names the file, the entry and the rule it broke
     */
    public static Exclusions load(Path file) {
        String text;
        try {
            text = Files.readString(file);
        } catch (NoSuchFileException e) {
            throw new AuditException("exclusions file " + file + " does not exist; create it (see docs/audit.md) or "
                    + "leave out the exclusions option");
        } catch (IOException e) {
            throw new AuditException("cannot read exclusions file " + file + ": " + e.getMessage(), e);
        }
        return parse(text, file.toString());
    }

    /**
     * Parses exclusions from YAML or JSON text; {@code origin} names the source in messages.
     *
     * @throws AuditException naming the entry and the rule it broke
     */
    public static Exclusions parse(String text, String origin) {
        JsonNode root;
        try {
            root = new ObjectMapper(new YAMLFactory()).readTree(text);
        } catch (JacksonException e) {
            throw new AuditException(
                    "exclusions file " + origin + " is not valid YAML or JSON: " + e.getOriginalMessage(), e);
        }
        if (root == null || root.isMissingNode() || root.isNull()) {
            return new Exclusions(List.of(), origin);
        }
        JsonNode list = root.isArray() ? root : root.get("exclusions");
        if (list == null || !list.isArray()) {
            throw new AuditException("exclusions file " + origin + " must hold a list under 'exclusions:' "
                    + "(each entry with class and reason), but its top level has " + fieldNames(root));
        }
        List<Entry> entries = new ArrayList<>();
        int n = 0;
        for (JsonNode e : list) {
            n++;
            String where = origin + " entry " + n;
            if (!e.isObject()) {
                throw new AuditException(where + " must be a mapping with class and reason, but was " + e);
            }
            Iterator<String> names = e.fieldNames();
            while (names.hasNext()) {
                String k = names.next();
                if (!KEYS.contains(k)) {
                    throw new AuditException(where + " has unknown key '" + k + "'; allowed: class, member, category, "
                            + "reason, owner, expires");
                }
            }
            String cls = text(e, "class");
            if (cls == null) {
                throw new AuditException(where + " has no 'class'; name the class the finding is in, e.g. "
                        + "class: com.example.FeatureFlags");
            }
            String label = where + " (class " + cls + ")";
            String reason = text(e, "reason");
            if (reason == null) {
                throw new AuditException(label + " has no 'reason'; every exclusion must say why the state is "
                        + "deliberate, so the next sweep does not re-litigate it");
            }
            Category category = null;
            if (text(e, "category") != null) {
                try {
                    category = Category.parse(text(e, "category"));
                } catch (IllegalArgumentException ex) {
                    throw new AuditException(label + ": " + ex.getMessage(), ex);
                }
            }
            LocalDate expires = null;
            if (text(e, "expires") != null) {
                try {
                    expires = LocalDate.parse(text(e, "expires"));
                } catch (DateTimeParseException ex) {
                    throw new AuditException(
                            label + ": expires must be a date like 2027-01-31, but was '" + text(e, "expires") + "'",
                            ex);
                }
            }
            entries.add(new Entry(cls, text(e, "member"), category, reason, text(e, "owner"), expires, where));
        }
        return new Exclusions(entries, origin);
    }

    private static String fieldNames(JsonNode root) {
        if (!root.isObject()) {
            return "a " + root.getNodeType().name().toLowerCase(java.util.Locale.ROOT);
        }
        List<String> names = new ArrayList<>();
        root.fieldNames().forEachRemaining(names::add);
        return names.isEmpty() ? "nothing" : "keys " + names;
    }

    private static String text(JsonNode e, String key) {
        JsonNode v = e.get(key);
        if (v == null || v.isNull()) {
            return null;
        }
        String s = v.asText().trim();
        return s.isEmpty() ? null : s;
    }

    /** The entries, in file order. */
    public List<Entry> entries() {
        return entries;
    }

    /** Where these exclusions came from (a file name, or "(none)"). */
    public String origin() {
        return origin;
    }
}
