package dev.baton.audit;

import dev.baton.audit.Facts.Header;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Deque;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The type hierarchy of everything read (application and libraries), and subtype and
 * meta-annotation queries over it. JDK types that were not read are answered from the running JDK's
 * own class metadata (never from the scanned code, which is not loaded).
 */
final class ClassIndex {
    final Map<String, Header> headers = new HashMap<>();
    private final Map<String, List<String>> jdkSupertypes = new HashMap<>();
    private final Map<String, String> subtypeCache = new HashMap<>();
    private Set<String> packagePrefixes;

    void add(Header h) {
        headers.putIfAbsent(h.name, h);
    }

    Header get(String name) {
        return headers.get(name);
    }

    /** The direct supertypes of {@code name}, or none if it is unknown. */
    List<String> supertypes(String name) {
        Header h = headers.get(name);
        if (h != null) {
            List<String> out = new ArrayList<>(h.interfaces.length + 1);
            if (h.superName != null) {
                out.add(h.superName);
            }
            out.addAll(List.of(h.interfaces));
            return out;
        }
        if (name.startsWith("java/") || name.startsWith("javax/")) {
            return jdkSupertypes.computeIfAbsent(name, ClassIndex::fromJdk);
        }
        return List.of();
    }

    private static List<String> fromJdk(String name) {
        try {
            Class<?> c = Class.forName(name.replace('/', '.'), false, ClassLoader.getPlatformClassLoader());
            List<String> out = new ArrayList<>();
            if (c.getSuperclass() != null) {
                out.add(c.getSuperclass().getName().replace('.', '/'));
            }
            for (Class<?> i : c.getInterfaces()) {
                out.add(i.getName().replace('.', '/'));
            }
            return out;
        } catch (ClassNotFoundException | LinkageError e) {
            return List.of();
        }
    }

    /** The first of {@code targets} that {@code type} is or extends or implements, or null. */
    String subtypeOf(String type, Collection<String> targets) {
        if (type == null) {
            return null;
        }
        String key = type + "|" + targets.hashCode();
        String cached = subtypeCache.get(key);
        if (cached != null) {
            return cached.isEmpty() ? null : cached;
        }
        String found = null;
        Deque<String> todo = new ArrayDeque<>();
        Set<String> seen = new HashSet<>();
        todo.add(type);
        while (!todo.isEmpty() && found == null) {
            String t = todo.poll();
            if (!seen.add(t)) {
                continue;
            }
            if (targets.contains(t)) {
                found = t;
            } else {
                todo.addAll(supertypes(t));
            }
        }
        subtypeCache.put(key, found == null ? "" : found);
        return found;
    }

    boolean isSubtype(String type, String target) {
        return subtypeOf(type, Set.of(target)) != null;
    }

    /**
     * The first of {@code targets} among {@code annotations} or, for annotations that were read, their
     * meta-annotations (a custom stereotype annotated {@code @Service} counts); null if none.
     */
    String annotatedWith(List<String> annotations, Set<String> targets) {
        Deque<String> todo = new ArrayDeque<>(annotations);
        Set<String> seen = new HashSet<>();
        while (!todo.isEmpty()) {
            String a = todo.poll();
            if (!seen.add(a) || a.startsWith("java/lang/annotation/")) {
                continue;
            }
            if (targets.contains(a)) {
                return a;
            }
            Header h = headers.get(a);
            if (h != null) {
                todo.addAll(h.annotations);
            }
        }
        return null;
    }

    /** True if any class read (application or library) lives under {@code packagePrefix} (internal form). */
    boolean hasPackage(String packagePrefix) {
        if (packagePrefixes == null) {
            packagePrefixes = new HashSet<>();
            for (String n : headers.keySet()) {
                int i = n.lastIndexOf('/');
                while (i > 0) {
                    if (!packagePrefixes.add(n.substring(0, i + 1))) {
                        break;
                    }
                    i = n.lastIndexOf('/', i - 1);
                }
            }
        }
        return packagePrefixes.contains(packagePrefix);
    }
}
