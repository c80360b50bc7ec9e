package dev.varve.broker.cluster;

import org.apache.kafka.common.Uuid;

import java.io.File;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
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

    /** Writes the file atomically and durably. */
    static void write(File dir, Uuid topicId) throws IOException {
        File tmp = new File(dir, NAME + ".tmp");
        Files.writeString(tmp.toPath(), "version: 0\ntopic_id: " + topicId + "\n", StandardCharsets.UTF_8);
        try (FileChannel ch = FileChannel.open(tmp.toPath(), StandardOpenOption.WRITE)) {
            ch.force(true);
        }
        Files.move(tmp.toPath(), new File(dir, NAME).toPath(), StandardCopyOption.ATOMIC_MOVE);
    }
}
