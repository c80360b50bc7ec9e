package dev.varve.broker.group;

import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.common.record.internal.SimpleRecord;

import java.nio.ByteBuffer;

/**
 * Kafka's layout of the KIP-848 and KIP-932 group records in {@code __consumer_offsets}, over Kafka's
 * generated message classes: a key is the record type (int16) then the key fields at version 0; a value
 * is its version (int16) then the value fields at that version; a deletion is a null value.
 */
final class CoordinatorRecordCodec {
    private CoordinatorRecordCodec() {
    }

    static SimpleRecord record(long nowMs, ApiMessage key, ApiMessage value) {
        return new SimpleRecord(nowMs, MessageUtil.toCoordinatorTypePrefixedBytes(key),
                MessageUtil.toVersionPrefixedBytes(value.highestSupportedVersion(), value));
    }

    static SimpleRecord tombstone(long nowMs, ApiMessage key) {
        return new SimpleRecord(nowMs, MessageUtil.toCoordinatorTypePrefixedBytes(key), null);
    }

    /** The value's fields, after its version. */
    static ByteBufferAccessor valueFields(ByteBuffer value) {
        ByteBuffer v = value.duplicate();
        v.getShort();
        return new ByteBufferAccessor(v);
    }

    static short valueVersion(ByteBuffer value) {
        return value.duplicate().getShort();
    }
}
