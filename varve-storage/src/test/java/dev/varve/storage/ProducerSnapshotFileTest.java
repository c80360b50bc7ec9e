package dev.varve.storage;

import dev.varve.storage.ProducerStateEntry.BatchMetadata;
import dev.varve.storage.checkpoint.CorruptCheckpointException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.util.List;
import java.util.zip.CRC32C;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ProducerSnapshotFileTest {
    private static final long T0 = 1_700_000_000_000L;

    @TempDir
    File tmp;

    private static ProducerStateEntry producer(long pid, int epoch, int batches) {
        ProducerStateEntry e = ProducerStateEntry.empty(pid);
        for (int i = 0; i < batches; i++) {
            e = e.withBatch((short) epoch, new BatchMetadata(i * 3 + 2, 100L * pid + i * 10 + 2, 2, T0 + i));
        }
        return e;
    }

    @Test
    void roundTripsEveryRememberedBatch() throws IOException {
        List<ProducerStateEntry> table = List.of(producer(1, 0, 5), producer(2, 7, 1),
                ProducerStateEntry.empty(3).withEpoch((short) 4, T0 + 9));
        File f = LogFileNames.producerSnapshotFile(tmp, 42);
        ProducerSnapshotFile.write(f, table, true);
        assertThat(f.getName()).isEqualTo("00000000000000000042.snapshot");
        assertThat(f.length()).isEqualTo(10 + 7 * 46);
        assertThat(ProducerSnapshotFile.read(f)).containsExactlyInAnyOrderElementsOf(table);
        assertThat(new File(tmp, f.getName() + ".tmp")).doesNotExist();
    }

    @Test
    void usesKafkasLayout() {
        ProducerStateEntry p = ProducerStateEntry.empty(77).withBatch((short) 3, new BatchMetadata(19, 1234, 4, T0));
        ByteBuffer b = ProducerSnapshotFile.encode(List.of(p));
        assertThat(b.remaining()).isEqualTo(56);
        assertThat(b.getShort(0)).isEqualTo((short) 1);
        CRC32C crc = new CRC32C();
        crc.update(b.duplicate().position(6));
        assertThat(Integer.toUnsignedLong(b.getInt(2))).isEqualTo(crc.getValue());
        assertThat(b.getInt(6)).isEqualTo(1);
        assertThat(b.getLong(10)).isEqualTo(77);     // producerId
        assertThat(b.getShort(18)).isEqualTo((short) 3); // epoch
        assertThat(b.getInt(20)).isEqualTo(19);      // last sequence
        assertThat(b.getLong(24)).isEqualTo(1234);   // last offset
        assertThat(b.getInt(32)).isEqualTo(4);       // offset delta
        assertThat(b.getLong(36)).isEqualTo(T0);     // timestamp
        assertThat(b.getInt(44)).isEqualTo(-1);      // coordinator epoch
        assertThat(b.getLong(48)).isEqualTo(-1);     // current transaction first offset
    }

    @Test
    void olderEntriesOfAProducerNeverLookNewerThanItsLast() throws IOException {
        // Record timestamps can go backwards; a Kafka reader filtering expired entries must still
        // keep the newest batch, so no older entry may carry a later timestamp than the last one.
        ProducerStateEntry p = ProducerStateEntry.empty(5)
                .withBatch((short) 0, new BatchMetadata(0, 0, 0, T0 + 500))
                .withBatch((short) 0, new BatchMetadata(1, 1, 0, T0));
        ByteBuffer b = ProducerSnapshotFile.encode(List.of(p));
        assertThat(b.getLong(10 + 26)).isEqualTo(T0);
        assertThat(b.getLong(10 + 46 + 26)).isEqualTo(T0);
        ProducerStateEntry back = ProducerSnapshotFile.decode(b).get(0);
        assertThat(back.lastTimestamp()).isEqualTo(T0);
        assertThat(back.batches()).extracting(BatchMetadata::lastSeq).containsExactly(0, 1);
    }

    @Test
    void readsAKafkaSnapshotWithOneEntryPerProducer() throws CorruptCheckpointException {
        ByteBuffer b = ByteBuffer.allocate(10 + 46);
        b.putShort((short) 1).putInt(0).putInt(1);
        b.putLong(9).putShort((short) 2).putInt(41).putLong(500).putInt(1).putLong(T0).putInt(5).putLong(-1);
        b.flip();
        CRC32C crc = new CRC32C();
        crc.update(b.duplicate().position(6));
        b.putInt(2, (int) crc.getValue());
        ProducerStateEntry e = ProducerSnapshotFile.decode(b).get(0);
        assertThat(e.producerId()).isEqualTo(9);
        assertThat(e.producerEpoch()).isEqualTo((short) 2);
        assertThat(e.batches()).containsExactly(new BatchMetadata(41, 500, 1, T0));
        assertThat(e.batches().get(0).firstSeq()).isEqualTo(40);
        assertThat(e.batches().get(0).firstOffset()).isEqualTo(499);
    }

    @Test
    void refusesDamagedFiles() throws IOException {
        ByteBuffer good = ProducerSnapshotFile.encode(List.of(producer(1, 0, 3)));
        byte[] bytes = new byte[good.remaining()];
        good.get(bytes);

        byte[] flipped = bytes.clone();
        flipped[30] ^= 1;
        assertThatThrownBy(() -> ProducerSnapshotFile.decode(ByteBuffer.wrap(flipped)))
                .isInstanceOf(CorruptCheckpointException.class).hasMessageContaining("CRC");
        byte[] version = bytes.clone();
        version[1] = 2;
        assertThatThrownBy(() -> ProducerSnapshotFile.decode(ByteBuffer.wrap(version)))
                .isInstanceOf(CorruptCheckpointException.class).hasMessageContaining("version");
        assertThatThrownBy(() -> ProducerSnapshotFile.decode(ByteBuffer.wrap(bytes, 0, 5)))
                .isInstanceOf(CorruptCheckpointException.class);
        File f = new File(tmp, "00000000000000000007.snapshot");
        Files.write(f.toPath(), java.util.Arrays.copyOf(bytes, bytes.length - 46));
        assertThatThrownBy(() -> ProducerSnapshotFile.read(f))
                .isInstanceOf(CorruptCheckpointException.class).hasMessageContaining(f.getName());
        Files.write(f.toPath(), new byte[0]);
        assertThatThrownBy(() -> ProducerSnapshotFile.read(f)).isInstanceOf(CorruptCheckpointException.class);
    }

    @Test
    void refusesAnEntryCountThatDisagreesWithTheLength() {
        ByteBuffer b = ByteBuffer.allocate(10);
        b.putShort((short) 1).putInt(0).putInt(1_000_000);
        b.flip();
        CRC32C crc = new CRC32C();
        crc.update(b.duplicate().position(6));
        b.putInt(2, (int) crc.getValue());
        assertThatThrownBy(() -> ProducerSnapshotFile.decode(b))
                .isInstanceOf(CorruptCheckpointException.class).hasMessageContaining("1000000 entries");
    }
}
