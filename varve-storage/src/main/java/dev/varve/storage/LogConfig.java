package dev.varve.storage;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.record.TimestampType;

import java.util.HashMap;
import java.util.Map;

import static org.apache.kafka.common.config.ConfigDef.Range.atLeast;

/**
 * Per-partition log settings, under Kafka's topic-level key names (plus {@code retention.messages},
 * a Varve addition), including the compaction settings ({@code cleanup.policy},
 * {@code min.cleanable.dirty.ratio}, {@code delete.retention.ms}, {@code min.compaction.lag.ms},
 * {@code max.compaction.lag.ms}). Values are validated by Kafka's own {@link ConfigDef}, so a bad value is
 * refused with a message naming the key.
 *
 * @param segmentBytes          roll the active segment when it would grow past this many bytes
 * @param segmentMs             roll the active segment when its first batch is this old
 * @param segmentIndexBytes     preallocated size of each index file; a full index rolls the segment
 * @param indexIntervalBytes    bytes of log between two offset-index entries
 * @param retentionMs           delete segments whose newest record is older than this; -1 keeps forever
 * @param retentionBytes        delete the oldest segments while the log is larger than this; -1: no limit
 * @param retentionMessages     delete the oldest segments while more than this many offsets would remain; -1: no limit
 * @param flushMessages         fsync after this many appended records (1 = before every append returns)
 * @param flushMs               fsync when the last fsync is older than this
 * @param maxMessageBytes       largest record batch accepted, in bytes
 * @param fileDeleteDelayMs     how long a deleted segment's files stay (renamed *.deleted) for in-flight readers
 * @param timestampType         CreateTime (producer's) or LogAppendTime (broker's clock)
 * @param timestampBeforeMaxMs  reject CreateTime timestamps older than now minus this
 * @param timestampAfterMaxMs   reject CreateTime timestamps newer than now plus this
 * @param compact               {@code cleanup.policy} contains {@code compact}: the cleaner keeps the latest record per key
 * @param delete                {@code cleanup.policy} contains {@code delete}: time, size and count retention apply
 * @param minCleanableDirtyRatio clean a compacted log when its dirty share of bytes is above this
 * @param deleteRetentionMs     how long a tombstone stays readable after the cleaner first keeps it
 * @param minCompactionLagMs    records younger than this are never compacted
 * @param maxCompactionLagMs    records older than this are compacted whatever the dirty ratio (also caps segment.ms)
 * @param compressionType       {@code compression.type}: {@code producer} keeps each batch's codec; a codec
 *                              name ({@code uncompressed}, {@code gzip}, {@code snappy}, {@code lz4},
 *                              {@code zstd}) recompresses produced batches of another codec to it
 * @param segmentJitterMs       each segment rolls up to this much (at random, below segment.ms) before its age
 *                              limit, so that many partitions created together do not roll together
 */
public record LogConfig(
        int segmentBytes,
        long segmentMs,
        int segmentIndexBytes,
        int indexIntervalBytes,
        long retentionMs,
        long retentionBytes,
        long retentionMessages,
        long flushMessages,
        long flushMs,
        int maxMessageBytes,
        long fileDeleteDelayMs,
        TimestampType timestampType,
        long timestampBeforeMaxMs,
        long timestampAfterMaxMs,
        boolean compact,
        boolean delete,
        double minCleanableDirtyRatio,
        long deleteRetentionMs,
        long minCompactionLagMs,
        long maxCompactionLagMs,
        String compressionType,
        long segmentJitterMs) {

    /** {@code compression.type=producer}: batches keep the codec their producer chose. */
    public static final String PRODUCER_COMPRESSION = "producer";

    /** Varve's record-count retention limit (no Kafka equivalent). */
    public static final String RETENTION_MESSAGES_CONFIG = "retention.messages";

    /** The smallest segment size accepted (Kafka refuses below 1 MiB; small values help tests). */
    public static final int MIN_SEGMENT_BYTES = 256;

    /** The smallest index size accepted: room for a few entries of each index. */
    public static final int MIN_INDEX_BYTES = 64;

    private static final ConfigDef DEF = new ConfigDef()
            .define(TopicConfig.SEGMENT_BYTES_CONFIG, ConfigDef.Type.INT, 1024 * 1024 * 1024, atLeast(MIN_SEGMENT_BYTES),
                    ConfigDef.Importance.HIGH, TopicConfig.SEGMENT_BYTES_DOC)
            .define(TopicConfig.SEGMENT_MS_CONFIG, ConfigDef.Type.LONG, 7 * 24 * 60 * 60 * 1000L, atLeast(1),
                    ConfigDef.Importance.MEDIUM, TopicConfig.SEGMENT_MS_DOC)
            .define(TopicConfig.SEGMENT_INDEX_BYTES_CONFIG, ConfigDef.Type.INT, 10 * 1024 * 1024, atLeast(MIN_INDEX_BYTES),
                    ConfigDef.Importance.MEDIUM, TopicConfig.SEGMENT_INDEX_BYTES_DOC)
            .define(TopicConfig.INDEX_INTERVAL_BYTES_CONFIG, ConfigDef.Type.INT, 4096, atLeast(0),
                    ConfigDef.Importance.MEDIUM, TopicConfig.INDEX_INTERVAL_BYTES_DOC)
            .define(TopicConfig.RETENTION_MS_CONFIG, ConfigDef.Type.LONG, 7 * 24 * 60 * 60 * 1000L, atLeast(-1),
                    ConfigDef.Importance.HIGH, TopicConfig.RETENTION_MS_DOC)
            .define(TopicConfig.RETENTION_BYTES_CONFIG, ConfigDef.Type.LONG, -1L, atLeast(-1),
                    ConfigDef.Importance.HIGH, TopicConfig.RETENTION_BYTES_DOC)
            .define(RETENTION_MESSAGES_CONFIG, ConfigDef.Type.LONG, -1L, atLeast(-1),
                    ConfigDef.Importance.MEDIUM, "Delete the oldest segments while more than this many offsets would remain; -1 for no limit.")
            .define(TopicConfig.FLUSH_MESSAGES_INTERVAL_CONFIG, ConfigDef.Type.LONG, Long.MAX_VALUE, atLeast(1),
                    ConfigDef.Importance.MEDIUM, TopicConfig.FLUSH_MESSAGES_INTERVAL_DOC)
            .define(TopicConfig.FLUSH_MS_CONFIG, ConfigDef.Type.LONG, Long.MAX_VALUE, atLeast(0),
                    ConfigDef.Importance.MEDIUM, TopicConfig.FLUSH_MS_DOC)
            .define(TopicConfig.MAX_MESSAGE_BYTES_CONFIG, ConfigDef.Type.INT, 1024 * 1024 + 12, atLeast(0),
                    ConfigDef.Importance.MEDIUM, TopicConfig.MAX_MESSAGE_BYTES_DOC)
            .define(TopicConfig.FILE_DELETE_DELAY_MS_CONFIG, ConfigDef.Type.LONG, 60_000L, atLeast(0),
                    ConfigDef.Importance.LOW, TopicConfig.FILE_DELETE_DELAY_MS_DOC)
            .define(TopicConfig.MESSAGE_TIMESTAMP_TYPE_CONFIG, ConfigDef.Type.STRING, "CreateTime",
                    ConfigDef.ValidString.in("CreateTime", "LogAppendTime"),
                    ConfigDef.Importance.MEDIUM, TopicConfig.MESSAGE_TIMESTAMP_TYPE_DOC)
            .define(TopicConfig.MESSAGE_TIMESTAMP_BEFORE_MAX_MS_CONFIG, ConfigDef.Type.LONG, Long.MAX_VALUE, atLeast(0),
                    ConfigDef.Importance.MEDIUM, TopicConfig.MESSAGE_TIMESTAMP_BEFORE_MAX_MS_DOC)
            .define(TopicConfig.MESSAGE_TIMESTAMP_AFTER_MAX_MS_CONFIG, ConfigDef.Type.LONG, 60 * 60 * 1000L, atLeast(0),
                    ConfigDef.Importance.MEDIUM, TopicConfig.MESSAGE_TIMESTAMP_AFTER_MAX_MS_DOC)
            .define(TopicConfig.CLEANUP_POLICY_CONFIG, ConfigDef.Type.LIST, TopicConfig.CLEANUP_POLICY_DELETE,
                    ConfigDef.ValidList.in(false, TopicConfig.CLEANUP_POLICY_COMPACT, TopicConfig.CLEANUP_POLICY_DELETE),
                    ConfigDef.Importance.MEDIUM, TopicConfig.CLEANUP_POLICY_DOC)
            .define(TopicConfig.MIN_CLEANABLE_DIRTY_RATIO_CONFIG, ConfigDef.Type.DOUBLE, 0.5, ConfigDef.Range.between(0, 1),
                    ConfigDef.Importance.MEDIUM, TopicConfig.MIN_CLEANABLE_DIRTY_RATIO_DOC)
            .define(TopicConfig.DELETE_RETENTION_MS_CONFIG, ConfigDef.Type.LONG, 86_400_000L, atLeast(0),
                    ConfigDef.Importance.MEDIUM, TopicConfig.DELETE_RETENTION_MS_DOC)
            .define(TopicConfig.MIN_COMPACTION_LAG_MS_CONFIG, ConfigDef.Type.LONG, 0L, atLeast(0),
                    ConfigDef.Importance.MEDIUM, TopicConfig.MIN_COMPACTION_LAG_MS_DOC)
            .define(TopicConfig.MAX_COMPACTION_LAG_MS_CONFIG, ConfigDef.Type.LONG, Long.MAX_VALUE, atLeast(1),
                    ConfigDef.Importance.MEDIUM, TopicConfig.MAX_COMPACTION_LAG_MS_DOC)
            .define(TopicConfig.SEGMENT_JITTER_MS_CONFIG, ConfigDef.Type.LONG, 0L, atLeast(0),
                    ConfigDef.Importance.LOW, TopicConfig.SEGMENT_JITTER_MS_DOC)
            .define(TopicConfig.COMPRESSION_TYPE_CONFIG, ConfigDef.Type.STRING, PRODUCER_COMPRESSION,
                    ConfigDef.ValidString.in(PRODUCER_COMPRESSION, "uncompressed", "gzip", "snappy", "lz4", "zstd"),
                    ConfigDef.Importance.MEDIUM, TopicConfig.COMPRESSION_TYPE_DOC);

    /** Kafka's defaults. */
    public static final LogConfig DEFAULT = fromMap(Map.of());

    public LogConfig {
        if (segmentBytes < MIN_SEGMENT_BYTES) {
            throw new ConfigException(TopicConfig.SEGMENT_BYTES_CONFIG, segmentBytes, "must be at least " + MIN_SEGMENT_BYTES);
        }
        if (segmentIndexBytes < MIN_INDEX_BYTES) {
            throw new ConfigException(TopicConfig.SEGMENT_INDEX_BYTES_CONFIG, segmentIndexBytes, "must be at least " + MIN_INDEX_BYTES);
        }
        if (flushMessages < 1) {
            throw new ConfigException(TopicConfig.FLUSH_MESSAGES_INTERVAL_CONFIG, flushMessages, "must be at least 1");
        }
        if (!compact && !delete) {
            throw new ConfigException(TopicConfig.CLEANUP_POLICY_CONFIG, "", "must contain compact, delete or both");
        }
        if (minCompactionLagMs > maxCompactionLagMs) {
            throw new ConfigException(TopicConfig.MIN_COMPACTION_LAG_MS_CONFIG, minCompactionLagMs,
                    "must not be greater than max.compaction.lag.ms (" + maxCompactionLagMs + ")");
        }
    }

    /** {@code cleanup.policy} as Kafka writes it: {@code delete}, {@code compact} or {@code compact,delete}. */
    public String cleanupPolicy() {
        if (compact && delete) {
            return TopicConfig.CLEANUP_POLICY_COMPACT + "," + TopicConfig.CLEANUP_POLICY_DELETE;
        }
        return compact ? TopicConfig.CLEANUP_POLICY_COMPACT : TopicConfig.CLEANUP_POLICY_DELETE;
    }

    /**
     * The age at which the active segment rolls: {@code segment.ms}, or for a compacted log
     * {@code max.compaction.lag.ms} when smaller, so that no record waits in the (never cleaned) active
     * segment longer than the lag allows (Kafka's rule).
     */
    public long effectiveSegmentMs() {
        return compact ? Math.min(segmentMs, maxCompactionLagMs) : segmentMs;
    }

    /**
     * The codec produced batches are stored with, or empty for {@code producer} (each batch keeps its own).
     */
    public java.util.Optional<org.apache.kafka.common.record.internal.CompressionType> targetCompression() {
        if (compressionType.equals(PRODUCER_COMPRESSION)) {
            return java.util.Optional.empty();
        }
        return java.util.Optional.of(compressionType.equals("uncompressed")
                ? org.apache.kafka.common.record.internal.CompressionType.NONE
                : org.apache.kafka.common.record.internal.CompressionType.forName(compressionType));
    }

    /**
     * A new segment's roll jitter, as Kafka draws it: uniform in [0, min(segment.jitter.ms,
     * segment.ms)), 0 without jitter.
     */
    public long randomSegmentJitterMs() {
        long bound = Math.min(segmentJitterMs, effectiveSegmentMs());
        return bound <= 0 ? 0 : java.util.concurrent.ThreadLocalRandom.current().nextLong(bound);
    }

    /** Parses Kafka-named keys; unknown keys are ignored here (the broker warns about them). */
    public static LogConfig fromMap(Map<String, ?> props) {
        Map<String, Object> parsed = DEF.parse(props);
        return new LogConfig(
                (Integer) parsed.get(TopicConfig.SEGMENT_BYTES_CONFIG),
                (Long) parsed.get(TopicConfig.SEGMENT_MS_CONFIG),
                (Integer) parsed.get(TopicConfig.SEGMENT_INDEX_BYTES_CONFIG),
                (Integer) parsed.get(TopicConfig.INDEX_INTERVAL_BYTES_CONFIG),
                (Long) parsed.get(TopicConfig.RETENTION_MS_CONFIG),
                (Long) parsed.get(TopicConfig.RETENTION_BYTES_CONFIG),
                (Long) parsed.get(RETENTION_MESSAGES_CONFIG),
                (Long) parsed.get(TopicConfig.FLUSH_MESSAGES_INTERVAL_CONFIG),
                (Long) parsed.get(TopicConfig.FLUSH_MS_CONFIG),
                (Integer) parsed.get(TopicConfig.MAX_MESSAGE_BYTES_CONFIG),
                (Long) parsed.get(TopicConfig.FILE_DELETE_DELAY_MS_CONFIG),
                TimestampType.forName((String) parsed.get(TopicConfig.MESSAGE_TIMESTAMP_TYPE_CONFIG)),
                (Long) parsed.get(TopicConfig.MESSAGE_TIMESTAMP_BEFORE_MAX_MS_CONFIG),
                (Long) parsed.get(TopicConfig.MESSAGE_TIMESTAMP_AFTER_MAX_MS_CONFIG),
                policies(parsed).contains(TopicConfig.CLEANUP_POLICY_COMPACT),
                policies(parsed).contains(TopicConfig.CLEANUP_POLICY_DELETE),
                (Double) parsed.get(TopicConfig.MIN_CLEANABLE_DIRTY_RATIO_CONFIG),
                (Long) parsed.get(TopicConfig.DELETE_RETENTION_MS_CONFIG),
                (Long) parsed.get(TopicConfig.MIN_COMPACTION_LAG_MS_CONFIG),
                (Long) parsed.get(TopicConfig.MAX_COMPACTION_LAG_MS_CONFIG),
                ((String) parsed.get(TopicConfig.COMPRESSION_TYPE_CONFIG)).trim().toLowerCase(java.util.Locale.ROOT),
                (Long) parsed.get(TopicConfig.SEGMENT_JITTER_MS_CONFIG));
    }

    @SuppressWarnings("unchecked")
    private static java.util.List<String> policies(Map<String, Object> parsed) {
        return ((java.util.List<String>) parsed.get(TopicConfig.CLEANUP_POLICY_CONFIG)).stream()
                .map(p -> p.trim().toLowerCase(java.util.Locale.ROOT)).toList();
    }

    /** This config with some keys overridden (Kafka key names). */
    public LogConfig with(Map<String, ?> overrides) {
        Map<String, Object> merged = new HashMap<>(toMap());
        merged.putAll(overrides);
        return fromMap(merged);
    }

    /** This config with one key overridden. */
    public LogConfig with(String key, Object value) {
        return with(Map.of(key, value));
    }

    /** The keys this class understands. */
    public static java.util.Set<String> names() {
        return DEF.names();
    }

    /** Every setting under its Kafka key. */
    public Map<String, Object> toMap() {
        Map<String, Object> m = new HashMap<>();
        m.put(TopicConfig.SEGMENT_BYTES_CONFIG, segmentBytes);
        m.put(TopicConfig.SEGMENT_MS_CONFIG, segmentMs);
        m.put(TopicConfig.SEGMENT_INDEX_BYTES_CONFIG, segmentIndexBytes);
        m.put(TopicConfig.INDEX_INTERVAL_BYTES_CONFIG, indexIntervalBytes);
        m.put(TopicConfig.RETENTION_MS_CONFIG, retentionMs);
        m.put(TopicConfig.RETENTION_BYTES_CONFIG, retentionBytes);
        m.put(RETENTION_MESSAGES_CONFIG, retentionMessages);
        m.put(TopicConfig.FLUSH_MESSAGES_INTERVAL_CONFIG, flushMessages);
        m.put(TopicConfig.FLUSH_MS_CONFIG, flushMs);
        m.put(TopicConfig.MAX_MESSAGE_BYTES_CONFIG, maxMessageBytes);
        m.put(TopicConfig.FILE_DELETE_DELAY_MS_CONFIG, fileDeleteDelayMs);
        m.put(TopicConfig.MESSAGE_TIMESTAMP_TYPE_CONFIG, timestampType.name);
        m.put(TopicConfig.MESSAGE_TIMESTAMP_BEFORE_MAX_MS_CONFIG, timestampBeforeMaxMs);
        m.put(TopicConfig.MESSAGE_TIMESTAMP_AFTER_MAX_MS_CONFIG, timestampAfterMaxMs);
        m.put(TopicConfig.CLEANUP_POLICY_CONFIG, cleanupPolicy());
        m.put(TopicConfig.MIN_CLEANABLE_DIRTY_RATIO_CONFIG, minCleanableDirtyRatio);
        m.put(TopicConfig.DELETE_RETENTION_MS_CONFIG, deleteRetentionMs);
        m.put(TopicConfig.MIN_COMPACTION_LAG_MS_CONFIG, minCompactionLagMs);
        m.put(TopicConfig.MAX_COMPACTION_LAG_MS_CONFIG, maxCompactionLagMs);
        m.put(TopicConfig.SEGMENT_JITTER_MS_CONFIG, segmentJitterMs);
        m.put(TopicConfig.COMPRESSION_TYPE_CONFIG, compressionType);
        return m;
    }
}
