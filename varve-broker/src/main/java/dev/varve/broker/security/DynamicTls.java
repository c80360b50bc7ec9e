package dev.varve.broker.security;

import dev.varve.storage.checkpoint.CheckpointFile;
import org.apache.kafka.common.config.ConfigException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.File;
import java.io.IOException;
import java.net.URLDecoder;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.AbstractMap;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * A broker's dynamic TLS settings (KIP-226: {@code listener.name.<name>.ssl.keystore.*} and
 * {@code .ssl.truststore.*} changed with kafka-configs, no restart), applied to the listeners through
 * {@link ListenerSecurity#reconfigureTls}. A cluster broker takes them from its own broker resource in the
 * metadata ({@link #applyFromMetadata}); a single node keeps them in {@code <first log dir>/varve-dynamic-tls}
 * (owner-only: it may hold store passwords, as Kafka's metadata does) and applies them again at start.
 */
public final class DynamicTls {
    private static final Logger LOG = LoggerFactory.getLogger(DynamicTls.class);
    public static final String FILE_NAME = "varve-dynamic-tls";

    private static final CheckpointFile.Formatter<Map.Entry<String, String>> FORMAT = new CheckpointFile.Formatter<>() {
        @Override
        public String toLine(Map.Entry<String, String> e) {
            return URLEncoder.encode(e.getKey(), StandardCharsets.UTF_8) + " " + URLEncoder.encode(e.getValue(), StandardCharsets.UTF_8);
        }

        @Override
        public Map.Entry<String, String> fromLine(String line) {
            String[] p = line.split(" ");
            if (p.length != 2) {
                throw new IllegalArgumentException("expected a key and a value: " + line);
            }
            return new AbstractMap.SimpleImmutableEntry<>(URLDecoder.decode(p[0], StandardCharsets.UTF_8),
                    URLDecoder.decode(p[1], StandardCharsets.UTF_8));
        }
    };

    private final ListenerSecurity security;
    private final CheckpointFile<Map.Entry<String, String>> file;
    private Map<String, String> current = Map.of();

    /** @param dir a single node's first log dir (its settings are read and applied now); null in a cluster */
    public DynamicTls(ListenerSecurity security, File dir) throws IOException {
        this.security = security;
        this.file = dir == null ? null : new CheckpointFile<>(new File(dir, FILE_NAME), FORMAT);
        if (file != null) {
            Map<String, String> stored = new TreeMap<>();
            for (Map.Entry<String, String> e : file.read()) {
                stored.put(e.getKey(), e.getValue());
            }
            if (!stored.isEmpty()) {
                security.reconfigureTls(stored, false);
                current = Map.copyOf(stored);
                LOG.info("dynamic TLS settings applied: {}", stored.keySet());
            }
        }
    }

    /** The dynamic TLS settings in force. */
    public synchronized Map<String, String> current() {
        return current;
    }

    /**
     * A single node's IncrementalAlterConfigs of its broker resource: sets (non-null) or deletes (null)
     * dynamic TLS keys; checked, applied and written before this returns, or refused whole.
     *
     * @throws ConfigException when a key is not a dynamic TLS key or the new stores are refused
     */
    public synchronized void alter(Map<String, String> changes, boolean validateOnly) {
        Map<String, String> next = new TreeMap<>(current);
        changes.forEach((k, v) -> {
            if (!ListenerSecurity.isDynamicTlsKey(k)) {
                throw new ConfigException(k, v, "not a broker setting Varve can change without a restart (the TLS "
                        + "keystore and truststore settings of a listener, listener.name.<name>.ssl.*)");
            }
            if (v == null) {
                next.remove(k);
            } else {
                next.put(k, v);
            }
        });
        security.reconfigureTls(next, true);
        if (validateOnly) {
            return;
        }
        if (file != null) {
            List<Map.Entry<String, String>> lines = new ArrayList<>(next.entrySet());
            try {
                file.write(lines);
                Files.setPosixFilePermissions(file.file().toPath(), PosixFilePermissions.fromString("rw-------"));
            } catch (IOException | UnsupportedOperationException e) {
                throw new org.apache.kafka.common.errors.KafkaStorageException("cannot write " + file.file() + ": " + e.getMessage(), e);
            }
        }
        security.reconfigureTls(next, false);
        current = Map.copyOf(next);
        LOG.info("TLS reconfigured: {}", next.keySet());
    }

    /**
     * A cluster broker: the dynamic TLS keys of its own broker resource in a new metadata image. Applied when
     * they changed; stores that are refused are logged and the listeners keep what they have.
     */
    public synchronized void applyFromMetadata(Map<String, String> brokerConfigs) {
        Map<String, String> next = new TreeMap<>();
        brokerConfigs.forEach((k, v) -> {
            if (ListenerSecurity.isDynamicTlsKey(k) && v != null) {
                next.put(k, v);
            }
        });
        if (next.equals(current)) {
            return;
        }
        try {
            security.reconfigureTls(next, false);
            current = Map.copyOf(next);
            LOG.info("TLS reconfigured from the metadata: {}", next.keySet());
        } catch (RuntimeException e) {
            LOG.error("the dynamic TLS settings in the metadata are refused; the listeners keep their stores: {}", e.getMessage());
        }
    }
}
