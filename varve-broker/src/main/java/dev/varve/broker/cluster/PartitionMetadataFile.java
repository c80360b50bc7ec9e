package dev.varve.broker.cluster;

import org.apache.kafka.common.Uuid;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.Optional;

/**
 * {@code partition.metadata} in a partition directory, Kafka's format ({@code version: 0} and
 * {@code topic_id: <id>} lines): which topic a log belongs to, so that a log left behind by a deleted
 * topic is never taken for the partition of a new topic with the same name.
 */
final class PartitionMetadataFile {
    static final String NAME = "partition.metadata";

    private PartitionMetadataFile() {
    }

    /** The topic id written in {@code dir}, empty when there is no (readable) file. */
    static Optional<Uuid> read(File dir) {
        File f = new File(dir, NAME);
        if (!f.isFile()) {
            return Optional.empty();
        }
        try {
            for (String line : Files.readAllLines(f.toPath(), StandardCharsets.UTF_8)) {
                if (line.startsWith("topic_id:")) {
                    return Optional.of(Uuid.fromString(line.substring("topic_id:".length()).trim()));
                }
            }
        } catch (IOException | IllegalArgumentException e) {
            return Optional.empty();
        }
        return Optional.empty();
    }

    /**
     * Writes the file without fsync and without a temporary file: a broker taking on thousands of
     * partitions must not pay an fsync, or two extra file operations, for each (Kafka also writes this
     * file lazily). A file lost or torn by a crash reads as absent and is written again for the topic
     * the metadata then assigns; logs of deleted topics are renamed away durably when deleted, so they
     * are never mistaken for a new topic's.
     */
    static void write(File dir, Uuid topicId) throws IOException {
        Files.writeString(new File(dir, NAME).toPath(), "version: 0\ntopic_id: " + topicId + "\n", StandardCharsets.UTF_8);
    }
}
