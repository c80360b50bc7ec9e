package dev.varve.storage.index;

import dev.varve.storage.index.TransactionIndex.AbortedTxn;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.StandardOpenOption;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The aborted-transaction index: Kafka's file format (Kafka's own {@code TransactionIndex} reads what
 * Varve writes and the other way round), the search a read_committed fetch makes, truncation, a torn
 * last entry, and no file until the first abort.
 */
class TransactionIndexTest {
    @TempDir
    File dir;

    private File file() {
        return new File(dir, "00000000000000000100.txnindex");
    }

    @Test
    void noFileUntilTheFirstAbortThenKafkasFormat() throws IOException {
        TransactionIndex index = new TransactionIndex(100, file());
        assertThat(index.all()).isEmpty();
        assertThat(index.isEmpty()).isTrue();
        index.flush();
        index.truncateTo(0);
        assertThat(file()).doesNotExist();

        index.append(new AbortedTxn(7, 100, 105, 100));
        index.append(new AbortedTxn(8, 101, 110, 106));
        index.flush();
        assertThat(file()).hasSize(2L * TransactionIndex.ENTRY_SIZE);

        // Kafka 4.4's TransactionIndex reads Varve's file entry for entry
        try (org.apache.kafka.storage.internals.log.TransactionIndex kafka =
                     new org.apache.kafka.storage.internals.log.TransactionIndex(100, file())) {
            List<org.apache.kafka.common.message.AbortedTxn> read = kafka.allAbortedTxns();
            assertThat(read).hasSize(2);
            assertThat(read.get(0).producerId()).isEqualTo(7);
            assertThat(read.get(0).firstOffset()).isEqualTo(100);
            assertThat(read.get(0).lastOffset()).isEqualTo(105);
            assertThat(read.get(0).lastStableOffset()).isEqualTo(100);
            assertThat(read.get(1).producerId()).isEqualTo(8);
            assertThat(read.get(1).lastStableOffset()).isEqualTo(106);
            kafka.sanityCheck();
        }
    }

    @Test
    void readsWhatKafkaWrites() throws IOException {
        try (org.apache.kafka.storage.internals.log.TransactionIndex kafka =
                     new org.apache.kafka.storage.internals.log.TransactionIndex(100, file())) {
            kafka.append(new org.apache.kafka.common.message.AbortedTxn().setProducerId(3).setFirstOffset(120)
                    .setLastOffset(130).setLastStableOffset(125));
            kafka.flush();
        }
        assertThat(new TransactionIndex(100, file()).all()).containsExactly(new AbortedTxn(3, 120, 130, 125));
    }

    @Test
    void aFetchGetsTheAbortsThatOverlapItAndLearnsWhenNoLaterSegmentCanAddOne() throws IOException {
        TransactionIndex index = new TransactionIndex(100, file());
        AbortedTxn a = new AbortedTxn(1, 100, 120, 121);
        AbortedTxn b = new AbortedTxn(2, 130, 140, 141);
        AbortedTxn c = new AbortedTxn(3, 150, 160, 161);
        index.append(a);
        index.append(b);
        index.append(c);

        // [125, 145): b overlaps; a ended before; c's last stable offset 161 >= 145 ends the search
        TransactionIndex.Search mid = index.collect(125, 145);
        assertThat(mid.aborted()).containsExactly(b);
        assertThat(mid.complete()).isTrue();
        // [100, 200): all three, and a later segment may still hold one
        TransactionIndex.Search all = index.collect(100, 200);
        assertThat(all.aborted()).containsExactly(a, b, c);
        assertThat(all.complete()).isFalse();
        // the fetch starts at a's marker: a is still reported (the marker is in the range)
        assertThat(index.collect(120, 125).aborted()).containsExactly(a);
    }

    @Test
    void markersMustIncreaseAndAppendIfAbsentSkipsWhatIsIndexed() throws IOException {
        TransactionIndex index = new TransactionIndex(100, file());
        index.append(new AbortedTxn(1, 100, 120, 121));
        assertThatThrownBy(() -> index.append(new AbortedTxn(2, 100, 120, 121)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("must increase");
        // a reopened index learns its last marker from the file
        TransactionIndex reopened = new TransactionIndex(100, file());
        assertThat(reopened.appendIfAbsent(new AbortedTxn(1, 100, 120, 121))).isFalse();
        assertThat(reopened.appendIfAbsent(new AbortedTxn(2, 125, 130, 131))).isTrue();
        assertThat(reopened.all()).extracting(AbortedTxn::producerId).containsExactly(1L, 2L);
    }

    @Test
    void truncationDropsTheAbortsWhoseMarkerIsCutAndResetEmptiesIt() throws IOException {
        TransactionIndex index = new TransactionIndex(100, file());
        index.append(new AbortedTxn(1, 100, 120, 121));
        index.append(new AbortedTxn(2, 110, 130, 131));
        index.truncateTo(130); // the second marker is at 130: it goes
        assertThat(index.all()).extracting(AbortedTxn::producerId).containsExactly(1L);
        index.append(new AbortedTxn(3, 125, 128, 129)); // after the truncation, 128 > 120 is allowed
        assertThat(index.all()).extracting(AbortedTxn::producerId).containsExactly(1L, 3L);
        index.reset();
        assertThat(index.all()).isEmpty();
        assertThat(file()).doesNotExist();
    }

    @Test
    void aTornLastEntryIsIgnoredAndOverwrittenByTheNextAppend() throws IOException {
        TransactionIndex index = new TransactionIndex(100, file());
        index.append(new AbortedTxn(1, 100, 120, 121));
        Files.write(file().toPath(), new byte[] {0, 0, 0, 0, 0, 9, 9}, StandardOpenOption.APPEND); // a crash mid-entry
        TransactionIndex reopened = new TransactionIndex(100, file());
        assertThat(reopened.all()).containsExactly(new AbortedTxn(1, 100, 120, 121));
        reopened.append(new AbortedTxn(2, 125, 130, 131));
        assertThat(file()).hasSize(2L * TransactionIndex.ENTRY_SIZE);
        assertThat(reopened.all()).extracting(AbortedTxn::producerId).containsExactly(1L, 2L);
    }

    @Test
    void anUnknownVersionIsCorruption() throws IOException {
        TransactionIndex index = new TransactionIndex(100, file());
        index.append(new AbortedTxn(1, 100, 120, 121));
        byte[] bytes = Files.readAllBytes(file().toPath());
        bytes[1] = 5;
        Files.write(file().toPath(), bytes);
        assertThatThrownBy(() -> new TransactionIndex(100, file()).all()).isInstanceOf(CorruptIndexException.class)
                .hasMessageContaining("version 5");
    }
}
