package dev.varve.broker.group;

import org.apache.kafka.common.record.internal.SimpleRecord;

import java.util.List;

/**
 * Where the coordinator writes its records: the {@code __consumer_offsets} partition of a group.
 * An append returns once the records are stored (committed); it throws a Kafka exception when they
 * are not, and then nothing of the call is visible.
 */
public interface GroupStore {
    void append(String groupId, List<SimpleRecord> records);
}
