package dev.varve.broker;

import dev.varve.storage.checkpoint.CheckpointFile;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;

/**
 * The group config overrides of a single-node broker (a cluster keeps them in its metadata log as
 * ConfigRecords of resource type GROUP), in {@code <first log dir>/varve-group-configs}: one group per
 * line, its URL-encoded id and its keys, for example
 *
 * <pre>
 *   orders consumer.heartbeat.interval.ms=2000&amp;consumer.session.timeout.ms=30000
 * </pre>
 *
 * A group without overrides has no line. Thread-safe: reads see a consistent map; changes are
 * serialized and on disk (written and fsynced) before they are visible or answered.
 */
public final class LocalGroupConfigStore {
    public static final String FILE_NAME = "varve-group-configs";

    private record Line(String groupId, Map<String, String> configs) {
    }

    private static final CheckpointFile.Formatter<Line> FORMAT = new CheckpointFile.Formatter<>() {
        @Override
        public String toLine(Line l) {
            StringBuilder cfg = new StringBuilder();
            new TreeMap<>(l.configs()).forEach((k, v) -> {
                if (cfg.length() > 0) {
                    cfg.append('&');
                }
                cfg.append(encode(k)).append('=').append(encode(v));
            });
            return encode(l.groupId()) + " " + cfg;
        }

        @Override
        public Line fromLine(String line) {
            String[] parts = line.split(" ");
            if (parts.length != 2) {
                throw new IllegalArgumentException("expected a group id and its configs: " + line);
            }
            Map<String, String> configs = new LinkedHashMap<>();
            for (String kv : parts[1].split("&")) {
                int eq = kv.indexOf('=');
                if (eq <= 0) {
                    throw new IllegalArgumentException("expected key=value: " + kv);
                }
                configs.put(decode(kv.substring(0, eq)), decode(kv.substring(eq + 1)));
            }
            return new Line(decode(parts[0]), configs);
        }
    };

    private static String encode(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }

    private static String decode(String s) {
        return URLDecoder.decode(s, StandardCharsets.UTF_8);
    }

    private final CheckpointFile<Line> file;
    private volatile Map<String, Map<String, String>> byGroup;

    public LocalGroupConfigStore(File dir) throws IOException {
        this.file = new CheckpointFile<>(new File(dir, FILE_NAME), FORMAT);
        Map<String, Map<String, String>> loaded = new HashMap<>();
        for (Line l : file.read()) {
            loaded.put(l.groupId(), Map.copyOf(l.configs()));
        }
        this.byGroup = Map.copyOf(loaded);
    }

    /** The group's overrides; empty when it has none. */
    public Map<String, String> get(String groupId) {
        return byGroup.getOrDefault(groupId, Map.of());
    }

    /**
     * Replaces a group's overrides with {@code change} applied to the current ones, after {@code validate}
     * accepted the result (it throws to refuse); unless {@code validateOnly}, the result is on disk before
     * this returns.
     *
     * @return the overrides after the change (what they would be, when validating only)
     */
    public synchronized Map<String, String> alter(String groupId, UnaryOperator<Map<String, String>> change,
                                                  Consumer<Map<String, String>> validate, boolean validateOnly) {
        Map<String, String> updated = Map.copyOf(change.apply(new HashMap<>(get(groupId))));
        validate.accept(updated);
        if (!validateOnly && !updated.equals(get(groupId))) {
            Map<String, Map<String, String>> next = new HashMap<>(byGroup);
            if (updated.isEmpty()) {
                next.remove(groupId);
            } else {
                next.put(groupId, updated);
            }
            List<Line> lines = new ArrayList<>();
            new TreeMap<>(next).forEach((g, c) -> lines.add(new Line(g, c)));
            try {
                file.write(lines);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot write " + file.file(), e);
            }
            byGroup = Map.copyOf(next);
        }
        return updated;
    }
}
