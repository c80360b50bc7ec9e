package dev.varve.broker.txn;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.coordinator.transaction.TransactionLog;
import org.apache.kafka.coordinator.transaction.TransactionMetadata;
import org.apache.kafka.coordinator.transaction.TxnTransitMetadata;
import org.apache.kafka.server.common.TransactionVersion;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code __transaction_state} records are Kafka's: Kafka's own {@code TransactionLog} reads what
 * Varve writes and writes the same bytes for the same metadata, for V1 and V2 clients; the state
 * table is Kafka's; damaged records are a clear error, never a crash or a wrong value.
 */
class TransactionRecordsTest {
    private static final long NOW = 1_700_000_000_000L;
    private static final Set<TopicPartition> PARTITIONS = Set.of(new TopicPartition("orders", 3),
            new TopicPartition("orders", 0), new TopicPartition("audit", 1));

    private static TxnMetadata ongoing(short clientVersion) {
        return new TxnMetadata("app-1", 4242, 17, -1, (short) 5, (short) -1, (short) 4, 60_000, TransactionState.ONGOING,
                PARTITIONS, NOW - 1000, NOW, clientVersion);
    }

    private static TxnTransitMetadata kafkaTransit(TxnMetadata m, TransactionVersion tv) {
        return new TxnTransitMetadata(m.producerId(), m.previousProducerId(), m.nextProducerId(), m.producerEpoch(),
                m.lastProducerEpoch(), m.timeoutMs(), org.apache.kafka.coordinator.transaction.TransactionState.fromId(m.state().id()),
                new HashSet<>(m.partitions()), m.startTimestampMs(), m.lastUpdateTimestampMs(), tv);
    }

    @Test
    void theStatesAreKafkas() {
        for (org.apache.kafka.coordinator.transaction.TransactionState k : org.apache.kafka.coordinator.transaction.TransactionState.values()) {
            TransactionState v = TransactionState.fromId(k.id());
            assertThat(v.stateName()).isEqualTo(k.stateName());
            assertThat(v.isExpirationAllowed()).as(k.stateName()).isEqualTo(k.isExpirationAllowed());
            assertThat(v.validPreviousStates().stream().map(TransactionState::stateName).collect(Collectors.toSet()))
                    .as("valid previous states of " + k.stateName())
                    .isEqualTo(k.validPreviousStates().stream().map(org.apache.kafka.coordinator.transaction.TransactionState::stateName)
                            .collect(Collectors.toSet()));
        }
        assertThat(TransactionState.values()).hasSameSizeAs(org.apache.kafka.coordinator.transaction.TransactionState.values());
        assertThatThrownBy(() -> TransactionState.fromId((byte) 8)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> ongoing((short) 2).withState(TransactionState.COMPLETE_COMMIT, NOW))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("cannot go from Ongoing to CompleteCommit");
    }

    @Test
    void kafkaReadsVarvesRecordsAndWritesTheSameBytes() {
        for (TransactionVersion tv : new TransactionVersion[] {TransactionVersion.TV_0, TransactionVersion.TV_2}) {
            TxnMetadata m = ongoing(tv.featureLevel());
            byte[] key = TransactionRecords.key(m.transactionalId());
            byte[] value = TransactionRecords.value(m);
            assertThat(key).isEqualTo(TransactionLog.keyToBytes("app-1"));
            assertThat(value).as("the value Kafka writes with %s", tv).isEqualTo(TransactionLog.valueToBytes(kafkaTransit(m, tv), tv));
            assertThat(ByteBuffer.wrap(value).getShort(0)).isEqualTo((short) (tv == TransactionVersion.TV_2 ? 1 : 0));

            TransactionLog.ReadResult read = TransactionLog.read(ByteBuffer.wrap(key), ByteBuffer.wrap(value));
            assertThat(read).isInstanceOf(TransactionLog.TxnRecord.class);
            TransactionMetadata k = ((TransactionLog.TxnRecord) read).metadata();
            assertThat(((TransactionLog.TxnRecord) read).transactionId()).isEqualTo("app-1");
            assertThat(k.producerId()).isEqualTo(4242);
            assertThat(k.producerEpoch()).isEqualTo((short) 5);
            assertThat(k.txnTimeoutMs()).isEqualTo(60_000);
            assertThat(k.state().stateName()).isEqualTo("Ongoing");
            assertThat(k.topicPartitions()).isEqualTo(PARTITIONS);
            assertThat(k.txnStartTimestamp()).isEqualTo(NOW - 1000);
            assertThat(k.txnLastUpdateTimestamp()).isEqualTo(NOW);
            if (tv == TransactionVersion.TV_2) {
                assertThat(k.prevProducerId()).isEqualTo(17);
                assertThat(k.clientTransactionVersion()).isEqualTo(TransactionVersion.TV_2);
            }

            TxnMetadata back = TransactionRecords.decodeValue("app-1", ByteBuffer.wrap(value));
            assertThat(back.partitions()).isEqualTo(PARTITIONS);
            assertThat(back.state()).isEqualTo(TransactionState.ONGOING);
            assertThat(back.producerEpoch()).isEqualTo((short) 5);
            assertThat(back.lastProducerEpoch()).as("not stored").isEqualTo((short) -1);
            assertThat(back.previousProducerId()).isEqualTo(tv == TransactionVersion.TV_2 ? 17 : -1);
            assertThat(TransactionRecords.decodeKey(ByteBuffer.wrap(key))).isEqualTo("app-1");
        }
    }

    @Test
    void anEmptyIdIsStoredWithoutPartitionsAndCannotHoldAny() {
        TxnMetadata empty = TxnMetadata.empty("app-2", 7, (short) 0, 30_000, NOW);
        byte[] value = TransactionRecords.value(empty);
        assertThat(value).isEqualTo(TransactionLog.valueToBytes(kafkaTransit(empty, TransactionVersion.TV_0), TransactionVersion.TV_0));
        assertThat(TransactionRecords.decodeValue("app-2", ByteBuffer.wrap(value))).isEqualTo(
                new TxnMetadata("app-2", 7, -1, -1, (short) 0, (short) -1, (short) -1, 30_000, TransactionState.EMPTY, Set.of(),
                        -1, NOW, (short) 0));
        TxnMetadata bad = new TxnMetadata("app-2", 7, -1, -1, (short) 0, (short) -1, (short) -1, 30_000, TransactionState.EMPTY,
                PARTITIONS, -1, NOW, (short) 0);
        assertThatThrownBy(() -> TransactionRecords.value(bad)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void everyTruncationAndAnUnknownVersionOrStateIsACorruptRecord() {
        byte[] value = TransactionRecords.value(ongoing((short) 2));
        for (int len = 0; len < value.length; len++) {
            byte[] cut = Arrays.copyOf(value, len);
            assertThatThrownBy(() -> TransactionRecords.decodeValue("app-1", ByteBuffer.wrap(cut)))
                    .as("value cut to %d of %d bytes", len, value.length)
                    .isInstanceOf(TransactionRecords.CorruptTransactionRecordException.class);
        }
        byte[] key = TransactionRecords.key("app-1");
        for (int len = 0; len < key.length; len++) {
            byte[] cut = Arrays.copyOf(key, len);
            assertThatThrownBy(() -> TransactionRecords.decodeKey(ByteBuffer.wrap(cut)))
                    .isInstanceOf(TransactionRecords.CorruptTransactionRecordException.class);
        }
        byte[] v9 = value.clone();
        v9[1] = 9;
        assertThatThrownBy(() -> TransactionRecords.decodeValue("app-1", ByteBuffer.wrap(v9)))
                .isInstanceOf(TransactionRecords.CorruptTransactionRecordException.class).hasMessageContaining("version 9");
        byte[] v0 = TransactionRecords.value(ongoing((short) 0));
        v0[2 + 8 + 2 + 4] = 12; // the status byte of a v0 value
        assertThatThrownBy(() -> TransactionRecords.decodeValue("app-1", ByteBuffer.wrap(v0)))
                .isInstanceOf(TransactionRecords.CorruptTransactionRecordException.class).hasMessageContaining("state id 12");
        // a partition count far beyond the bytes present is refused before anything is allocated
        byte[] lying = TransactionRecords.value(ongoing((short) 0));
        ByteBuffer.wrap(lying).putInt(2 + 8 + 2 + 4 + 1, Integer.MAX_VALUE);
        assertThatThrownBy(() -> TransactionRecords.decodeValue("app-1", ByteBuffer.wrap(lying)))
                .isInstanceOf(TransactionRecords.CorruptTransactionRecordException.class);
    }
}
