package dev.varve.cli.client;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * Named sets of client settings, as rpk's profiles: each profile is Kafka client properties
 * ({@code bootstrap.servers}, {@code security.protocol}, {@code sasl.jaas.config}, ...); one of them is
 * current and used when a command names none. Kept as YAML in {@code $VARVE_CONFIG}, else
 * {@code $XDG_CONFIG_HOME/varve/profiles.yaml}, else {@code ~/.config/varve/profiles.yaml}:
 *
 * <pre>
 * current: prod
 * profiles:
 *   prod:
 *     bootstrap.servers: kafka-1:9092,kafka-2:9092
 *     security.protocol: SASL_SSL
 * </pre>
 */
public final class Profiles {
    private final Path file;
    private String current;
    private final Map<String, Map<String, String>> profiles = new TreeMap<>();

    private Profiles(Path file) {
        this.file = file;
    }

    /** Where profiles are kept, from the environment. */
    public static Path defaultFile(Map<String, String> env) {
        String explicit = env.get("VARVE_CONFIG");
        if (explicit != null && !explicit.isBlank()) {
            return Path.of(explicit);
        }
        String xdg = env.get("XDG_CONFIG_HOME");
        Path base = xdg != null && !xdg.isBlank() ? Path.of(xdg) : Path.of(System.getProperty("user.home"), ".config");
        return base.resolve("varve").resolve("profiles.yaml");
    }

    /** The profiles in {@code file} (none if it does not exist). */
    public static Profiles load(Path file) {
        Profiles p = new Profiles(file);
        if (!Files.exists(file)) {
            return p;
        }
        Object doc;
        try {
            doc = Output.parseDocument(Files.readString(file));
        } catch (IOException e) {
            throw new IllegalArgumentException("cannot read the profiles in " + file + ": " + e.getMessage());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("the profiles file " + file + " is not valid YAML: " + e.getMessage()
                    + " (fix or delete it)");
        }
        if (doc == null) {
            return p;
        }
        if (!(doc instanceof Map<?, ?> root)) {
            throw new IllegalArgumentException("the profiles file " + file + " must be a map with 'current' and 'profiles'");
        }
        Object cur = root.get("current");
        p.current = cur == null ? null : cur.toString();
        Object all = root.get("profiles");
        if (all instanceof Map<?, ?> m) {
            for (Map.Entry<?, ?> e : m.entrySet()) {
                Map<String, String> props = new TreeMap<>();
                if (e.getValue() instanceof Map<?, ?> values) {
                    values.forEach((k, v) -> props.put(String.valueOf(k), v == null ? "" : String.valueOf(v)));
                } else if (e.getValue() != null) {
                    throw new IllegalArgumentException("profile '" + e.getKey() + "' in " + file
                            + " must be a map of client properties");
                }
                p.profiles.put(String.valueOf(e.getKey()), props);
            }
        } else if (all != null) {
            throw new IllegalArgumentException("'profiles' in " + file + " must be a map of profile names to client properties");
        }
        return p;
    }

    public Path file() {
        return file;
    }

    /** The current profile's name, or null. */
    public String current() {
        return current;
    }

    public Map<String, Map<String, String>> all() {
        return profiles;
    }

    /** The named profile's properties; fails naming the ones there are when it does not exist. */
    public Map<String, String> get(String name) {
        Map<String, String> p = profiles.get(name);
        if (p == null) {
            throw new IllegalArgumentException("no profile '" + name + "' in " + file
                    + (profiles.isEmpty() ? " (create one with: varve profile create " + name + " --bootstrap-server HOST:PORT)"
                    : " (there are: " + String.join(", ", profiles.keySet()) + ")"));
        }
        return p;
    }

    public void put(String name, Map<String, String> properties) {
        profiles.put(name, new TreeMap<>(properties));
    }

    public boolean remove(String name) {
        boolean had = profiles.remove(name) != null;
        if (name.equals(current)) {
            current = null;
        }
        return had;
    }

    public void use(String name) {
        get(name);
        current = name;
    }

    /** Writes the profiles back (readable by the owner only: they may hold passwords). */
    public void save() throws IOException {
        Map<String, Object> root = new LinkedHashMap<>();
        if (current != null) {
            root.put("current", current);
        }
        root.put("profiles", profiles);
        Path dir = file.toAbsolutePath().getParent();
        if (dir != null) {
            Files.createDirectories(dir);
        }
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        Files.writeString(tmp, Output.YAML.serialize(root));
        try {
            Files.setPosixFilePermissions(tmp, java.nio.file.attribute.PosixFilePermissions.fromString("rw-------"));
        } catch (UnsupportedOperationException e) {
            // not a POSIX file system: left as created
        }
        Files.move(tmp, file, java.nio.file.StandardCopyOption.REPLACE_EXISTING, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
    }
}
