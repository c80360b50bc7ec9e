package dev.varve.storage;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Time;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A partition directory the load creates takes a short path (nothing listed, read or recovered);
 * these tests hold it to what the general path gives for the same, empty, directory.
 */
class LogLoaderTest {
    private static final TopicPartition TP = new TopicPartition("t", 0);
    private final LogConfig config = LogConfig.fromMap(Map.of());

    @TempDir
    File root;

    @Test
    void aCreatedDirectoryLoadsAsTheGeneralPathLoadsAnEmptyOne() throws IOException {
        List<LogLoader.Checkpoints> cases = List.of(
                LogLoader.Checkpoints.NEW,
                new LogLoader.Checkpoints(100, 40, 70, false),   // a crash: recovery point below the start
                new LogLoader.Checkpoints(100, 200, 150, false), // a crash: everything past the (missing) end
                new LogLoader.Checkpoints(100, 200, 150, true));
        int i = 0;
        for (LogLoader.Checkpoints c : cases) {
            File fresh = new File(root, "fresh-" + i);
            File empty = new File(root, "empty-" + i);
            i++;
            Files.createDirectory(empty.toPath()); // exists before the load: the general path
            LogLoader.Loaded a = LogLoader.load(fresh, TP, config, c, 0);
            LogLoader.Loaded b = LogLoader.load(empty, TP, config, c, 0);
            try {
                assertThat(a.created()).as("created %s", c).isTrue();
                assertThat(b.created()).as("created %s", c).isFalse();
                assertThat(a.logStartOffset()).as("log start %s", c).isEqualTo(b.logStartOffset());
                assertThat(a.logEndOffset()).as("log end %s", c).isEqualTo(b.logEndOffset());
                assertThat(a.recoveryPoint()).as("recovery point %s", c).isEqualTo(b.recoveryPoint());
                assertThat(a.highWatermark()).as("high watermark %s", c).isEqualTo(b.highWatermark());
                assertThat(a.damaged()).isEqualTo(b.damaged()).isFalse();
                assertThat(a.segments().baseOffsets()).as("segments %s", c).isEqualTo(b.segments().baseOffsets());
                assertThat(a.epochCache().latestEpoch()).isEqualTo(b.epochCache().latestEpoch()).isEmpty();
                assertThat(a.producerState().entries()).isEqualTo(b.producerState().entries()).isEmpty();
                assertThat(a.producerState().snapshotOffsets()).isEqualTo(b.producerState().snapshotOffsets()).isEmpty();
                assertThat(names(fresh)).as("files %s", c).isEqualTo(names(empty));
            } finally {
                close(a);
                close(b);
            }
        }
    }

    @Test
    void aLogOpenedInACreatedDirectoryTakesRecordsAndReopensWithThem() throws Exception {
        File dir = new File(root, "t-0");
        try (ExecutorScheduler scheduler = new ExecutorScheduler(1, "test")) {
            PartitionLog log = PartitionLog.open(dir, TP, config, Time.SYSTEM, scheduler);
            log.appendAsLeader(TestRecords.batch(1_000L, "a", "b", "c"), 5);
            log.flush();
            log.close();
            PartitionLog again = PartitionLog.open(dir, TP, config, Time.SYSTEM, scheduler);
            try {
                assertThat(again.logEndOffset()).isEqualTo(3);
                assertThat(again.epochCache().latestEpoch()).hasValue(5);
            } finally {
                again.close();
            }
        }
    }

    @Test
    void aMissingLogDirectoryIsCreatedWithThePartition() throws IOException {
        File dir = new File(root, "missing/log-dir/t-0");
        LogLoader.Loaded loaded = LogLoader.load(dir, TP, config, LogLoader.Checkpoints.NEW, 0);
        try {
            assertThat(loaded.created()).isTrue();
            assertThat(dir).isDirectory();
            assertThat(loaded.segments().baseOffsets()).containsExactly(0L);
        } finally {
            close(loaded);
        }
    }

    @Test
    void aFileWhereThePartitionDirectoryShouldBeIsRefused() throws IOException {
        File dir = new File(root, "t-0");
        Files.writeString(dir.toPath(), "not a directory");
        assertThatThrownBy(() -> LogLoader.load(dir, TP, config, LogLoader.Checkpoints.NEW, 0))
                .isInstanceOf(IOException.class).hasMessageContaining("not a directory");
        assertThat(Files.readString(dir.toPath())).isEqualTo("not a directory");
    }

    private static List<String> names(File dir) {
        String[] names = dir.list();
        Arrays.sort(names);
        return List.of(names);
    }

    private static void close(LogLoader.Loaded loaded) throws IOException {
        for (LogSegment s : loaded.segments().all()) {
            s.close();
        }
    }
}
