package dev.varve.storage;

import java.io.File;
import java.util.List;

/**
 * Broker-level settings of the log manager (Kafka key names in brackets).
 *
 * @param logDirs                           directories holding partition directories [log.dirs]
 * @param retentionCheckIntervalMs          how often retention runs [log.retention.check.interval.ms]
 * @param flushCheckIntervalMs              how often logs are checked against flush.ms [log.flush.scheduler.interval.ms]
 * @param recoveryPointCheckpointIntervalMs how often recovery points are checkpointed [log.flush.offset.checkpoint.interval.ms]
 * @param logStartOffsetCheckpointIntervalMs how often log start offsets are checkpointed [log.flush.start.offset.checkpoint.interval.ms]
 * @param highWatermarkCheckpointIntervalMs how often high watermarks are checkpointed [replica.high.watermark.checkpoint.interval.ms]
 * @param producerIdExpirationMs            forget an idempotent producer this long after its last write [producer.id.expiration.ms]
 * @param producerIdExpirationCheckIntervalMs how often expired producers are forgotten [producer.id.expiration.check.interval.ms]
 * @param cleaner                           the log cleaner (compaction) settings [log.cleaner.*]
 * @param startupVerification               which segments are CRC-checked at start-up [log.startup.verify, Varve's]
 * @param recoveryThreadsPerDataDir         threads loading (and recovering) a directory's partitions at start-up
 *                                          [num.recovery.threads.per.data.dir, 2 as in Kafka 4]
 * @param replicaMoveBytesPerSecond         how fast replicas are copied between log directories, all moves
 *                                          together [replica.alter.log.dirs.io.max.bytes.per.second; Long.MAX_VALUE:
 *                                          unlimited, as Kafka's default]
 */
public record LogManagerConfig(List<File> logDirs, long retentionCheckIntervalMs, long flushCheckIntervalMs,
                               long recoveryPointCheckpointIntervalMs, long logStartOffsetCheckpointIntervalMs,
                               long highWatermarkCheckpointIntervalMs, long producerIdExpirationMs,
                               long producerIdExpirationCheckIntervalMs, CleanerConfig cleaner,
                               StartupVerification startupVerification, int recoveryThreadsPerDataDir,
                               long replicaMoveBytesPerSecond) {
    /** Kafka 4's num.recovery.threads.per.data.dir default (KIP-1030). */
    public static final int DEFAULT_RECOVERY_THREADS_PER_DATA_DIR = 2;
    /** Kafka's producer.id.expiration.ms default: one day. */
    public static final long DEFAULT_PRODUCER_ID_EXPIRATION_MS = 86_400_000L;
    /** Kafka's producer.id.expiration.check.interval.ms default: ten minutes. */
    public static final long DEFAULT_PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS = 600_000L;

    public LogManagerConfig {
        if (logDirs.isEmpty()) {
            throw new IllegalArgumentException("log.dirs must name at least one directory");
        }
        if (producerIdExpirationMs < 1 || producerIdExpirationCheckIntervalMs < 1) {
            throw new IllegalArgumentException("producer.id.expiration.ms and producer.id.expiration.check.interval.ms"
                    + " must be at least 1");
        }
        logDirs = List.copyOf(logDirs);
        java.util.Objects.requireNonNull(cleaner, "cleaner");
        java.util.Objects.requireNonNull(startupVerification, "startupVerification");
        if (recoveryThreadsPerDataDir < 1) {
            throw new IllegalArgumentException("num.recovery.threads.per.data.dir must be at least 1");
        }
        if (replicaMoveBytesPerSecond < 1) {
            throw new IllegalArgumentException("replica.alter.log.dirs.io.max.bytes.per.second must be at least 1");
        }
    }

    /** The settings with Kafka's default number of recovery threads. */
    public LogManagerConfig(List<File> logDirs, long retentionCheckIntervalMs, long flushCheckIntervalMs,
                            long recoveryPointCheckpointIntervalMs, long logStartOffsetCheckpointIntervalMs,
                            long highWatermarkCheckpointIntervalMs, long producerIdExpirationMs,
                            long producerIdExpirationCheckIntervalMs, CleanerConfig cleaner,
                            StartupVerification startupVerification) {
        this(logDirs, retentionCheckIntervalMs, flushCheckIntervalMs, recoveryPointCheckpointIntervalMs,
                logStartOffsetCheckpointIntervalMs, highWatermarkCheckpointIntervalMs, producerIdExpirationMs,
                producerIdExpirationCheckIntervalMs, cleaner, startupVerification, DEFAULT_RECOVERY_THREADS_PER_DATA_DIR,
                Long.MAX_VALUE);
    }

    /** The settings without the producer-id ones, which take Kafka's defaults. */
    public LogManagerConfig(List<File> logDirs, long retentionCheckIntervalMs, long flushCheckIntervalMs,
                            long recoveryPointCheckpointIntervalMs, long logStartOffsetCheckpointIntervalMs,
                            long highWatermarkCheckpointIntervalMs) {
        this(logDirs, retentionCheckIntervalMs, flushCheckIntervalMs, recoveryPointCheckpointIntervalMs,
                logStartOffsetCheckpointIntervalMs, highWatermarkCheckpointIntervalMs,
                DEFAULT_PRODUCER_ID_EXPIRATION_MS, DEFAULT_PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS, CleanerConfig.DEFAULT,
                StartupVerification.ALL);
    }

    /** Kafka's defaults, except that flush.ms is checked every second (Kafka: never, unless configured). */
    public static LogManagerConfig defaults(List<File> logDirs) {
        return new LogManagerConfig(logDirs, 300_000L, 1_000L, 60_000L, 60_000L, 5_000L);
    }

    /** This config with other producer-id expiration settings. */
    public LogManagerConfig withProducerIdExpiration(long expirationMs, long checkIntervalMs) {
        return new LogManagerConfig(logDirs, retentionCheckIntervalMs, flushCheckIntervalMs,
                recoveryPointCheckpointIntervalMs, logStartOffsetCheckpointIntervalMs,
                highWatermarkCheckpointIntervalMs, expirationMs, checkIntervalMs, cleaner, startupVerification,
                recoveryThreadsPerDataDir, replicaMoveBytesPerSecond);
    }

    /** This config with other log cleaner settings ({@link CleanerConfig#fromMap} parses Kafka's keys). */
    public LogManagerConfig withCleaner(CleanerConfig cleanerConfig) {
        return new LogManagerConfig(logDirs, retentionCheckIntervalMs, flushCheckIntervalMs,
                recoveryPointCheckpointIntervalMs, logStartOffsetCheckpointIntervalMs,
                highWatermarkCheckpointIntervalMs, producerIdExpirationMs, producerIdExpirationCheckIntervalMs, cleanerConfig,
                startupVerification, recoveryThreadsPerDataDir, replicaMoveBytesPerSecond);
    }

    /** This config with another start-up verification. */
    public LogManagerConfig withStartupVerification(StartupVerification verification) {
        return new LogManagerConfig(logDirs, retentionCheckIntervalMs, flushCheckIntervalMs,
                recoveryPointCheckpointIntervalMs, logStartOffsetCheckpointIntervalMs,
                highWatermarkCheckpointIntervalMs, producerIdExpirationMs, producerIdExpirationCheckIntervalMs, cleaner,
                verification, recoveryThreadsPerDataDir, replicaMoveBytesPerSecond);
    }

    /** This config with another number of start-up recovery threads per directory. */
    public LogManagerConfig withRecoveryThreadsPerDataDir(int threads) {
        return new LogManagerConfig(logDirs, retentionCheckIntervalMs, flushCheckIntervalMs,
                recoveryPointCheckpointIntervalMs, logStartOffsetCheckpointIntervalMs,
                highWatermarkCheckpointIntervalMs, producerIdExpirationMs, producerIdExpirationCheckIntervalMs, cleaner,
                startupVerification, threads, replicaMoveBytesPerSecond);
    }

    /** This config with another limit on how fast replicas are copied between log directories. */
    public LogManagerConfig withReplicaMoveBytesPerSecond(long bytesPerSecond) {
        return new LogManagerConfig(logDirs, retentionCheckIntervalMs, flushCheckIntervalMs,
                recoveryPointCheckpointIntervalMs, logStartOffsetCheckpointIntervalMs,
                highWatermarkCheckpointIntervalMs, producerIdExpirationMs, producerIdExpirationCheckIntervalMs, cleaner,
                startupVerification, recoveryThreadsPerDataDir, bytesPerSecond);
    }
}
