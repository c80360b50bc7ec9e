package dev.varve.storage.checkpoint;

import org.apache.kafka.common.TopicPartition;

import java.io.File;
import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One offset per partition of a log directory ({@code topic partition offset} lines), used for
 * recovery points, log start offsets and high watermarks, as Kafka does.
 */
public final class OffsetCheckpointFile {
    private record Entry(TopicPartition tp, long offset) {
    }

    private static final CheckpointFile.Formatter<Entry> FORMAT = new CheckpointFile.Formatter<>() {
        @Override
        public String toLine(Entry e) {
            return e.tp.topic() + " " + e.tp.partition() + " " + e.offset;
        }

        @Override
        public Entry fromLine(String line) {
            String[] parts = line.split(" ");
            if (parts.length != 3) {
                throw new IllegalArgumentException(line);
            }
            int partition = Integer.parseInt(parts[1]);
            long offset = Long.parseLong(parts[2]);
            if (partition < 0 || offset < 0) {
                throw new IllegalArgumentException(line);
            }
            return new Entry(new TopicPartition(parts[0], partition), offset);
        }
    };

    private final CheckpointFile<Entry> file;

    public OffsetCheckpointFile(File file) {
        this.file = new CheckpointFile<>(file, FORMAT);
    }

    public void write(Map<TopicPartition, Long> offsets) throws IOException {
        file.write(offsets.entrySet().stream().map(e -> new Entry(e.getKey(), e.getValue())).toList());
    }

    public Map<TopicPartition, Long> read() throws IOException {
        Map<TopicPartition, Long> result = new LinkedHashMap<>();
        for (Entry e : file.read()) {
            result.put(e.tp, e.offset);
        }
        return result;
    }

    public File file() {
        return file.file();
    }
}
