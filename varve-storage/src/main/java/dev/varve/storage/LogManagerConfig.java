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
 */
public record LogManagerConfig(List<File> logDirs, long retentionCheckIntervalMs, long flushCheckIntervalMs,
                               long recoveryPointCheckpointIntervalMs, long logStartOffsetCheckpointIntervalMs,
                               long highWatermarkCheckpointIntervalMs) {
    public LogManagerConfig {
        if (logDirs.isEmpty()) {
            throw new IllegalArgumentException("log.dirs must name at least one directory");
        }
        logDirs = List.copyOf(logDirs);
    }

    /** Kafka's defaults, except that flush.ms is checked every second (Kafka: never, unless configured). */
    public static LogManagerConfig defaults(List<File> logDirs) {
        return new LogManagerConfig(logDirs, 300_000L, 1_000L, 60_000L, 60_000L, 5_000L);
    }
}
