package dev.varve.broker.txn;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.coordinator.transaction.generated.TransactionLogKey;
import org.apache.kafka.coordinator.transaction.generated.TransactionLogValue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The records of {@code __transaction_state}, in Kafka's layout: a version-prefixed
 * {@code TransactionLogKey} (version 0: the transactional id) and a version-prefixed
 * {@code TransactionLogValue}, or a null value (a tombstone: the id expired). Encoded and decoded
 * with Kafka's generated message classes, so Kafka's {@code TransactionLog} and tools read Varve's
 * records and the other way round.
 *
 * <pre>
 *   value v0 (transactions V1 clients): producerId int64, producerEpoch int16, timeoutMs int32,
 *            status int8, partitions nullable [topic string, [partition int32]], lastUpdate int64, start int64
 *   value v1 (transactions V2): the same, flexible, with tagged previousProducerId, nextProducerId,
 *            nextProducerEpoch and clientTransactionVersion
 * </pre>
 *
 * Empty ids are stored with a null partition list, as Kafka stores them. Decoding never trusts a
 * length: the generated readers check each against the bytes present, and anything that does not
 * decode is a {@link CorruptTransactionRecordException}.
 */
public final class TransactionRecords {
    static final short KEY_VERSION = 0;

    private TransactionRecords() {
    }

    /** A stored record that cannot be decoded. */
    public static final class CorruptTransactionRecordException extends RuntimeException {
        CorruptTransactionRecordException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    public static byte[] key(String transactionalId) {
        return MessageUtil.toVersionPrefixedBytes(KEY_VERSION, new TransactionLogKey().setTransactionalId(transactionalId));
    }

    /** The transactional id of a stored key. */
    public static String decodeKey(ByteBuffer key) {
        ByteBuffer b = key.duplicate();
        try {
            short version = b.getShort();
            if (version != KEY_VERSION) {
                throw new CorruptTransactionRecordException("unknown __transaction_state key version " + version, null);
            }
            return new TransactionLogKey(new ByteBufferAccessor(b), version).transactionalId();
        } catch (RuntimeException e) {
            throw corrupt("key", e);
        }
    }

    /** The value Kafka writes for {@code m}: version 1 for a transactions V2 client, else 0. */
    public static byte[] value(TxnMetadata m) {
        if (m.state() == TransactionState.EMPTY && !m.partitions().isEmpty()) {
            throw new IllegalStateException("transactional id " + m.transactionalId() + " is Empty but holds partitions "
                    + m.partitions());
        }
        short version = (short) (m.usesTransactionsV2() ? 1 : 0);
        TransactionLogValue v = new TransactionLogValue()
                .setProducerId(m.producerId())
                .setProducerEpoch(m.producerEpoch())
                .setTransactionTimeoutMs(m.timeoutMs())
                .setTransactionStatus(m.state().id())
                .setTransactionLastUpdateTimestampMs(m.lastUpdateTimestampMs())
                .setTransactionStartTimestampMs(m.startTimestampMs())
                .setTransactionPartitions(m.state() == TransactionState.EMPTY ? null : partitions(m.partitions()));
        if (version >= 1) {
            v.setPreviousProducerId(m.previousProducerId())
                    .setNextProducerId(m.nextProducerId())
                    .setNextProducerEpoch(m.nextProducerEpoch())
                    .setClientTransactionVersion(m.clientTransactionVersion());
        }
        return MessageUtil.toVersionPrefixedBytes(version, v);
    }

    private static List<TransactionLogValue.PartitionsSchema> partitions(Set<TopicPartition> partitions) {
        Map<String, List<Integer>> byTopic = new TreeMap<>();
        for (TopicPartition tp : partitions) {
            byTopic.computeIfAbsent(tp.topic(), t -> new ArrayList<>()).add(tp.partition());
        }
        List<TransactionLogValue.PartitionsSchema> out = new ArrayList<>();
        byTopic.forEach((topic, ids) -> out.add(new TransactionLogValue.PartitionsSchema().setTopic(topic).setPartitionIds(ids)));
        return out;
    }

    /** Decodes a stored value of {@code transactionalId}; the epoch before the last bump is not stored (-1). */
    public static TxnMetadata decodeValue(String transactionalId, ByteBuffer value) {
        ByteBuffer b = value.duplicate();
        try {
            short version = b.getShort();
            if (version < TransactionLogValue.LOWEST_SUPPORTED_VERSION || version > TransactionLogValue.HIGHEST_SUPPORTED_VERSION) {
                throw new CorruptTransactionRecordException("unknown __transaction_state value version " + version, null);
            }
            TransactionLogValue v = new TransactionLogValue(new ByteBufferAccessor(b), version);
            Set<TopicPartition> partitions = new HashSet<>();
            if (v.transactionPartitions() != null) {
                for (TransactionLogValue.PartitionsSchema p : v.transactionPartitions()) {
                    for (int id : p.partitionIds()) {
                        partitions.add(new TopicPartition(p.topic(), id));
                    }
                }
            }
            return new TxnMetadata(transactionalId, v.producerId(), v.previousProducerId(), v.nextProducerId(),
                    v.producerEpoch(), v.nextProducerEpoch(), RecordBatch.NO_PRODUCER_EPOCH, v.transactionTimeoutMs(),
                    TransactionState.fromId(v.transactionStatus()), partitions, v.transactionStartTimestampMs(),
                    v.transactionLastUpdateTimestampMs(), v.clientTransactionVersion());
        } catch (CorruptTransactionRecordException e) {
            throw e;
        } catch (RuntimeException e) {
            throw corrupt("value of " + transactionalId, e);
        }
    }

    private static CorruptTransactionRecordException corrupt(String what, RuntimeException e) {
        if (e instanceof CorruptTransactionRecordException c) {
            return c;
        }
        return new CorruptTransactionRecordException("cannot decode the __transaction_state " + what + ": " + e, e);
    }
}
