package dev.varve.storage;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.TopicConfig;

import java.util.Map;

import static org.apache.kafka.common.config.ConfigDef.Range.atLeast;
import static org.apache.kafka.common.config.ConfigDef.Range.between;

/**
 * Broker-level settings of the log cleaner (compaction), under Kafka's key names. Memory sizes are
 * totals shared by the cleaner threads, as in Kafka: each thread gets {@code dedupeBufferSize / threads}
 * bytes of key-hash map and {@code ioBufferSize / threads} bytes of I/O buffers (half to read, half to
 * write; they grow only to hold a batch larger than that).
 *
 * <p>The broker-wide defaults of the topic-level compaction keys ({@code log.cleaner.min.cleanable.ratio}
 * for {@code min.cleanable.dirty.ratio}...) are not here: they are defaults of {@link LogConfig}; see
 * {@link #TOPIC_DEFAULT_KEYS}.
 *
 * @param enable            run the cleaner at all [log.cleaner.enable]
 * @param threads           cleaner workers, each cleaning one log at a time [log.cleaner.threads]
 * @param dedupeBufferSize  bytes of key-hash to offset map, all threads together [log.cleaner.dedupe.buffer.size]
 * @param ioBufferSize      bytes of read and write buffers, all threads together [log.cleaner.io.buffer.size]
 * @param loadFactor        how full a map may get before a round stops adding keys [log.cleaner.io.buffer.load.factor]
 * @param backoffMs         pause between passes that found nothing to clean [log.cleaner.backoff.ms]
 */
public record CleanerConfig(boolean enable, int threads, long dedupeBufferSize, int ioBufferSize, double loadFactor,
                            long backoffMs) {
    public static final String ENABLE = "log.cleaner.enable";
    public static final String THREADS = "log.cleaner.threads";
    public static final String DEDUPE_BUFFER_SIZE = "log.cleaner.dedupe.buffer.size";
    public static final String IO_BUFFER_SIZE = "log.cleaner.io.buffer.size";
    public static final String IO_BUFFER_LOAD_FACTOR = "log.cleaner.io.buffer.load.factor";
    public static final String BACKOFF_MS = "log.cleaner.backoff.ms";

    /** The smallest per-thread map accepted: room for a few dozen keys (small values help tests). */
    public static final int MIN_DEDUPE_BYTES_PER_THREAD = 1024;
    /** The smallest per-thread I/O buffer accepted (it grows to fit a larger batch). */
    public static final int MIN_IO_BYTES_PER_THREAD = 1024;

    /**
     * Broker key to topic key for the broker-wide defaults of the topic-level compaction settings, as
     * Kafka names them ({@code log.cleaner.delete.retention.ms} is the default of
     * {@code delete.retention.ms}...). The broker applies them when it builds the default {@link LogConfig}.
     */
    public static final Map<String, String> TOPIC_DEFAULT_KEYS = Map.of(
            "log.cleanup.policy", TopicConfig.CLEANUP_POLICY_CONFIG,
            "log.cleaner.min.cleanable.ratio", TopicConfig.MIN_CLEANABLE_DIRTY_RATIO_CONFIG,
            "log.cleaner.delete.retention.ms", TopicConfig.DELETE_RETENTION_MS_CONFIG,
            "log.cleaner.min.compaction.lag.ms", TopicConfig.MIN_COMPACTION_LAG_MS_CONFIG,
            "log.cleaner.max.compaction.lag.ms", TopicConfig.MAX_COMPACTION_LAG_MS_CONFIG);

    private static final ConfigDef DEF = new ConfigDef()
            .define(ENABLE, ConfigDef.Type.BOOLEAN, true, ConfigDef.Importance.MEDIUM,
                    "Enable the log cleaner (compaction of topics with cleanup.policy=compact).")
            .define(THREADS, ConfigDef.Type.INT, 1, atLeast(1), ConfigDef.Importance.MEDIUM,
                    "The number of background threads to use for log cleaning.")
            .define(DEDUPE_BUFFER_SIZE, ConfigDef.Type.LONG, 128L * 1024 * 1024, atLeast(MIN_DEDUPE_BYTES_PER_THREAD),
                    ConfigDef.Importance.MEDIUM, "The total memory used for log deduplication across all cleaner threads.")
            .define(IO_BUFFER_SIZE, ConfigDef.Type.INT, 512 * 1024, atLeast(MIN_IO_BYTES_PER_THREAD),
                    ConfigDef.Importance.MEDIUM, "The total memory used for log cleaner I/O buffers across all cleaner threads.")
            .define(IO_BUFFER_LOAD_FACTOR, ConfigDef.Type.DOUBLE, 0.9, between(0.1, 0.95), ConfigDef.Importance.MEDIUM,
                    "Log cleaner dedupe buffer load factor: how full the dedupe map may become.")
            .define(BACKOFF_MS, ConfigDef.Type.LONG, 15_000L, atLeast(0), ConfigDef.Importance.MEDIUM,
                    "The amount of time to sleep when there are no logs to clean.");

    /** Kafka's defaults: enabled, one thread, 128 MiB map, 512 KiB I/O buffers, load factor 0.9, 15 s back-off. */
    public static final CleanerConfig DEFAULT = fromMap(Map.of());

    public CleanerConfig {
        if (threads < 1) {
            throw new ConfigException(THREADS, threads, "must be at least 1");
        }
        if (dedupeBufferSize / threads < MIN_DEDUPE_BYTES_PER_THREAD) {
            throw new ConfigException(DEDUPE_BUFFER_SIZE, dedupeBufferSize,
                    "must be at least " + MIN_DEDUPE_BYTES_PER_THREAD + " bytes per cleaner thread");
        }
        if (ioBufferSize / threads < MIN_IO_BYTES_PER_THREAD) {
            throw new ConfigException(IO_BUFFER_SIZE, ioBufferSize,
                    "must be at least " + MIN_IO_BYTES_PER_THREAD + " bytes per cleaner thread");
        }
        if (!(loadFactor >= 0.1 && loadFactor <= 0.95)) {
            throw new ConfigException(IO_BUFFER_LOAD_FACTOR, loadFactor, "must be between 0.1 and 0.95");
        }
        if (backoffMs < 0) {
            throw new ConfigException(BACKOFF_MS, backoffMs, "must not be negative");
        }
    }

    /**
     * Parses the cleaner keys out of broker properties (other keys are ignored); absent keys take
     * Kafka's defaults. A bad value is refused with a {@link ConfigException} naming the key.
     */
    public static CleanerConfig fromMap(Map<String, ?> props) {
        Map<String, Object> mine = new java.util.HashMap<>();
        for (String key : DEF.names()) {
            if (props.containsKey(key)) {
                mine.put(key, props.get(key));
            }
        }
        Map<String, Object> parsed = DEF.parse(mine);
        return new CleanerConfig(
                (Boolean) parsed.get(ENABLE),
                (Integer) parsed.get(THREADS),
                (Long) parsed.get(DEDUPE_BUFFER_SIZE),
                (Integer) parsed.get(IO_BUFFER_SIZE),
                (Double) parsed.get(IO_BUFFER_LOAD_FACTOR),
                (Long) parsed.get(BACKOFF_MS));
    }

    /** The keys this class understands. */
    public static java.util.Set<String> names() {
        return DEF.names();
    }

    /**
     * Map bytes per thread: the share of {@code dedupeBufferSize}, capped at what one Java array can
     * hold (Kafka caps it the same way).
     */
    public int dedupeBytesPerThread() {
        return (int) Math.min(dedupeBufferSize / threads, Integer.MAX_VALUE - 64L);
    }

    /** Bytes of each of the two I/O buffers (read and write) of one thread. */
    public int ioBytesPerBufferPerThread() {
        return Math.max(MIN_IO_BYTES_PER_THREAD / 2, ioBufferSize / threads / 2);
    }

    /** This config with the cleaner switched on or off. */
    public CleanerConfig withEnable(boolean on) {
        return new CleanerConfig(on, threads, dedupeBufferSize, ioBufferSize, loadFactor, backoffMs);
    }
}
