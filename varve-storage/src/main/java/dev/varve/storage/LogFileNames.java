package dev.varve.storage;

import org.apache.kafka.common.TopicPartition;

import java.io.File;
import java.util.OptionalLong;

/** File and directory names, as Kafka spells them, so Kafka's tools recognise Varve's files. */
public final class LogFileNames {
    public static final String LOG_SUFFIX = ".log";
    public static final String INDEX_SUFFIX = ".index";
    public static final String TIME_INDEX_SUFFIX = ".timeindex";
    public static final String TXN_INDEX_SUFFIX = ".txnindex";
    /** Producer state snapshot, named by the log end offset it was taken at. */
    public static final String SNAPSHOT_SUFFIX = ".snapshot";
    /** Appended to a segment's files when it is scheduled for deletion. */
    public static final String DELETED_SUFFIX = ".deleted";
    /** Appended to a segment's files while the cleaner writes its compacted replacement. */
    public static final String CLEANED_SUFFIX = ".cleaned";
    /**
     * Appended to a compacted segment's files once it is complete and about to replace the segments it
     * covers; a start-up finds one only after a crash mid-swap and completes the swap.
     */
    public static final String SWAP_SUFFIX = ".swap";
    /** Per log directory: the first offset each compacted partition has not cleaned yet. */
    public static final String CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint";
    /** Appended to a partition directory name (after a unique id) when the partition is deleted. */
    public static final String DELETE_DIR_SUFFIX = "-delete";
    /**
     * Appended to a partition directory name (after a unique id) while the replica is copied into this
     * log directory from another one (AlterReplicaLogDirs): {@code orders-0.<id>-future}, as in Kafka.
     */
    public static final String FUTURE_DIR_SUFFIX = "-future";
    /**
     * In a partition directory that has just replaced the replica's directory in another log directory
     * (a committed move): present from before the commit until the old directory is gone. A start-up
     * that finds the partition in two log directories keeps the one holding this file.
     */
    public static final String MOVE_COMMITTED_MARKER = ".varve-move-committed";
    /** The broker's topic-id file in a partition directory (Kafka's name); a moved replica takes it along. */
    public static final String PARTITION_METADATA = "partition.metadata";
    public static final String LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint";
    public static final String RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint";
    public static final String LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint";
    public static final String HIGH_WATERMARK_CHECKPOINT = "replication-offset-checkpoint";
    public static final String CLEAN_SHUTDOWN_MARKER = ".kafka_cleanshutdown";

    private LogFileNames() {
    }

    /** The 20-digit zero-padded form of an offset, as in {@code 00000000000000000042.log}. */
    public static String filenamePrefix(long offset) {
        if (offset < 0) {
            return String.format("%020d", offset);
        }
        String digits = Long.toString(offset);
        return "00000000000000000000".substring(digits.length()) + digits;
    }

    public static File logFile(File dir, long baseOffset) {
        return new File(dir, filenamePrefix(baseOffset) + LOG_SUFFIX);
    }

    public static File offsetIndexFile(File dir, long baseOffset) {
        return new File(dir, filenamePrefix(baseOffset) + INDEX_SUFFIX);
    }

    public static File timeIndexFile(File dir, long baseOffset) {
        return new File(dir, filenamePrefix(baseOffset) + TIME_INDEX_SUFFIX);
    }

    public static File txnIndexFile(File dir, long baseOffset) {
        return new File(dir, filenamePrefix(baseOffset) + TXN_INDEX_SUFFIX);
    }

    public static File producerSnapshotFile(File dir, long offset) {
        return new File(dir, filenamePrefix(offset) + SNAPSHOT_SUFFIX);
    }

    /** The base offset named by a segment file, or empty when the name is not one of ours. */
    public static OptionalLong baseOffsetOf(String fileName, String suffix) {
        if (!fileName.endsWith(suffix)) {
            return OptionalLong.empty();
        }
        String prefix = fileName.substring(0, fileName.length() - suffix.length());
        if (prefix.length() != 20 || !prefix.chars().allMatch(Character::isDigit)) {
            return OptionalLong.empty();
        }
        try {
            return OptionalLong.of(Long.parseLong(prefix));
        } catch (NumberFormatException e) {
            return OptionalLong.empty();
        }
    }

    public static String dirName(TopicPartition tp) {
        return tp.topic() + "-" + tp.partition();
    }

    /** {@code <topic>-<partition>.<id>-delete}: a directory renamed away for deletion. */
    public static String deleteDirName(TopicPartition tp) {
        return dirName(tp) + "." + uniqueId() + DELETE_DIR_SUFFIX;
    }

    /** {@code <topic>-<partition>.<id>-future}: a replica being copied in from another log directory. */
    public static String futureDirName(TopicPartition tp) {
        return dirName(tp) + "." + uniqueId() + FUTURE_DIR_SUFFIX;
    }

    private static String uniqueId() {
        return java.util.UUID.randomUUID().toString().replace("-", "");
    }

    /** The partition of a future directory ({@code <topic>-<partition>.<id>-future}), or null. */
    public static TopicPartition parseFutureDirName(String name) {
        if (!name.endsWith(FUTURE_DIR_SUFFIX)) {
            return null;
        }
        int dot = name.lastIndexOf('.');
        return dot <= 0 ? null : parseDirName(name.substring(0, dot));
    }

    /**
     * The partition a live partition directory holds ({@code <topic>-<partition>}), or null when the
     * name is not one (deleted, temporary or foreign directories).
     */
    public static TopicPartition parseDirName(String name) {
        int dash = name.lastIndexOf('-');
        if (dash <= 0 || dash == name.length() - 1 || name.endsWith(DELETE_DIR_SUFFIX) || name.endsWith(FUTURE_DIR_SUFFIX)) {
            return null;
        }
        String partition = name.substring(dash + 1);
        if (!partition.chars().allMatch(Character::isDigit) || partition.length() > 9) {
            return null;
        }
        return new TopicPartition(name.substring(0, dash), Integer.parseInt(partition));
    }
}
