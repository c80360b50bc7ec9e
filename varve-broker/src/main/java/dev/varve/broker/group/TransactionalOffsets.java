package dev.varve.broker.group;

import dev.varve.broker.group.ClassicGroup.State;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.SimpleRecord;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Transactional offset commits (TxnOffsetCommit) and the end of their transactions, with Kafka's
 * semantics:
 *
 * <pre>
 *   TxnOffsetCommit --one transactional batch (producer id, epoch) in the group's partition--> pending
 *   pending --COMMIT marker--> committed, if written after the partition's committed offset
 *   pending --ABORT marker, tombstone of the partition, group deleted or unloaded--> gone
 * </pre>
 *
 * A pending offset is invisible to OffsetFetch; with {@code require_stable} its partition answers
 * UNSTABLE_OFFSET_COMMIT. Pending offsets are kept from the moment their batch is in the local log,
 * in log order like the markers that end them (a marker appended while the batch still replicates
 * still ends it), and are forgotten again if the write then fails. The client is answered once the
 * batch is committed, as for any offset commit.
 *
 * <p>Thread-safety: as {@link GroupOffsets}: a group's pending offsets are read and changed under the
 * group's monitor. The index of groups by producer is a concurrent map, changed only inside
 * {@code compute}; an entry may be stale (the group was deleted), which costs a lookup and nothing else.
 */
public final class TransactionalOffsets {
    private final GroupCoordinator coordinator;
    /** Producer id to the ids of groups that may hold its pending offsets. */
    private final ConcurrentHashMap<Long, Set<String>> groupsByProducer = new ConcurrentHashMap<>();

    TransactionalOffsets(GroupCoordinator coordinator) {
        this.coordinator = coordinator;
    }

    /**
     * Writes a producer's offsets for a group as pending until its transaction ends. Validated as
     * Kafka validates TxnOffsetCommit: a group that does not exist is created for generation -1 (a
     * producer of a group without members), else ILLEGAL_GENERATION; a member id, generation or
     * instance id, when given, must be the group's (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID,
     * ILLEGAL_GENERATION); unlike OffsetCommit a rebalance in progress does not refuse it. Metadata
     * longer than {@code offset.metadata.max.bytes} is OFFSET_METADATA_TOO_LARGE for its partition.
     * Nothing here checks the producer against its transaction (see {@link TxnOffsetCommitVerifier}).
     *
     * @param offsets the offsets; their commit timestamps are set here, to the coordinator's clock
     * @return completes, once the batch is committed or failed, with an error (NONE when written) for
     *         every partition of {@code offsets}
     */
    public CompletableFuture<Map<TopicPartition, Errors>> commitTransactional(
            String groupId, long producerId, short producerEpoch, int generationId, String memberId,
            String groupInstanceId, Map<TopicPartition, GroupRecords.OffsetValue> offsets) {
        return commitTransactional(groupId, producerId, producerEpoch, generationId, memberId, groupInstanceId, offsets,
                null);
    }

    /**
     * {@link #commitTransactional(String, long, short, int, String, String, Map)} with the guard of the
     * verification the transaction coordinator answered (KIP-890; null: none): a marker written to the
     * group's partition since then voids it, and the offsets are refused with INVALID_TXN_STATE.
     */
    public CompletableFuture<Map<TopicPartition, Errors>> commitTransactional(
            String groupId, long producerId, short producerEpoch, int generationId, String memberId,
            String groupInstanceId, Map<TopicPartition, GroupRecords.OffsetValue> offsets,
            dev.varve.storage.VerificationGuard guard) {
        if (groupId == null || groupId.isEmpty()) {
            return done(all(offsets, Errors.INVALID_GROUP_ID));
        }
        // a transactional batch needs a producer id and epoch (Kafka's transaction coordinator refuses these)
        if (producerId < 0) {
            return done(all(offsets, Errors.INVALID_PRODUCER_ID_MAPPING));
        }
        if (producerEpoch < 0) {
            return done(all(offsets, Errors.INVALID_PRODUCER_EPOCH));
        }
        Map<TopicPartition, Errors> result = new LinkedHashMap<>();
        Map<TopicPartition, GroupRecords.OffsetValue> valid = new LinkedHashMap<>();
        long now = coordinator.time.milliseconds();
        offsets.forEach((tp, v) -> {
            if (v.metadata() != null && v.metadata().length() > coordinator.config.offsetMetadataMaxBytes()) {
                result.put(tp, Errors.OFFSET_METADATA_TOO_LARGE);
            } else {
                valid.put(tp, new GroupRecords.OffsetValue(v.offset(), v.leaderEpoch(),
                        v.metadata() == null ? "" : v.metadata(), now));
            }
        });
        ClassicGroup group = coordinator.groups.get(groupId);
        if (group == null) {
            if (generationId >= 0) {
                return done(all(offsets, Errors.ILLEGAL_GENERATION));
            }
            group = coordinator.getOrCreate(groupId);
        }
        synchronized (group) {
            Errors invalid = validate(group, generationId, memberId, groupInstanceId);
            if (invalid != Errors.NONE) {
                return done(all(offsets, invalid));
            }
            if (valid.isEmpty()) {
                return done(result);
            }
            List<SimpleRecord> records = new ArrayList<>(valid.size());
            valid.forEach((tp, v) -> records.add(new SimpleRecord(now, GroupRecords.offsetCommitKey(groupId, tp),
                    GroupRecords.offsetValue(v))));
            ClassicGroup g = group;
            CompletableFuture<Map<TopicPartition, Errors>> answer = new CompletableFuture<>();
            // indexed before the append: a marker appended after it then finds this group (a stale entry is harmless)
            index(producerId, groupId);
            coordinator.writeTransactional(group, producerId, producerEpoch, records, guard, lastOffset -> {
                // one batch: its records have consecutive offsets, in the order written
                long offset = lastOffset - (records.size() - 1);
                for (Map.Entry<TopicPartition, GroupRecords.OffsetValue> e : valid.entrySet()) {
                    g.addPending(producerId, e.getKey(), e.getValue(), offset++);
                }
            }, (stored, lastOffset) -> {
                if (stored != Errors.NONE) {
                    if (lastOffset >= 0) {
                        long offset = lastOffset - (records.size() - 1);
                        for (TopicPartition tp : valid.keySet()) {
                            g.removePending(producerId, tp, offset++);
                        }
                    }
                    if (!g.pendingOffsets().containsKey(producerId)) {
                        unindex(producerId, g.groupId);
                    }
                }
                valid.keySet().forEach(tp -> result.put(tp, stored));
                answer.complete(result);
            });
            return answer;
        }
    }

    /**
     * Ends {@code producerId}'s transaction in the groups of one {@code __consumer_offsets} partition:
     * call it once that producer's COMMIT or ABORT marker is in the partition (the WriteTxnMarkers
     * path). On commit its pending offsets there become committed, each only if written after the
     * partition's committed offset; on abort they are dropped. Offsets take effect here and now, so call
     * it once the marker is committed (as plain commits are applied): a leader change before then would
     * replay the partition without the marker, pending again until the marker is written anew.
     *
     * <p>This form ends every pending offset of the producer there; one written after the marker would
     * belong to its next transaction, which {@link #completeTransaction(int, long, boolean, long)},
     * given the marker's offset, keeps pending.
     */
    public void completeTransaction(int offsetsPartition, long producerId, boolean commit) {
        completeTransaction(offsetsPartition, producerId, commit, Long.MAX_VALUE);
    }

    /**
     * As {@link #completeTransaction(int, long, boolean)}, ending only the pending offsets written
     * before {@code markerOffset}, the marker's offset in the partition.
     */
    public void completeTransaction(int offsetsPartition, long producerId, boolean commit, long markerOffset) {
        List<String> candidates = new ArrayList<>();
        groupsByProducer.computeIfPresent(producerId, (id, groups) -> {
            for (String g : groups) {
                if (coordinator.store.partitionFor(g) == offsetsPartition) {
                    candidates.add(g);
                }
            }
            return groups;
        });
        for (String groupId : candidates) {
            ClassicGroup group = coordinator.groups.get(groupId);
            if (group == null) {
                unindex(producerId, groupId); // deleted or unloaded: its pending offsets went with it
                continue;
            }
            synchronized (group) {
                group.completeTransaction(producerId, commit, markerOffset);
                if (!group.pendingOffsets().containsKey(producerId)) {
                    unindex(producerId, groupId);
                }
            }
        }
    }

    /** Replay: a record of a transactional batch at {@code offset} becomes a pending offset of its producer. */
    void replayPending(ClassicGroup group, long producerId, TopicPartition tp, GroupRecords.OffsetValue value,
                       long offset) {
        group.addPending(producerId, tp, value, offset);
        index(producerId, group.groupId);
    }

    /** Drops a group's pending offsets (it is deleted or unloaded). The caller holds its lock. */
    void forget(ClassicGroup group) {
        for (Long producerId : List.copyOf(group.pendingOffsets().keySet())) {
            unindex(producerId, group.groupId);
        }
        group.clearPending();
    }

    /** The producers with pending offsets in a group and the partitions of each (a snapshot). */
    public Map<Long, Set<TopicPartition>> pending(String groupId) {
        Map<Long, Set<TopicPartition>> out = new LinkedHashMap<>();
        ClassicGroup group = coordinator.groups.get(groupId);
        if (group == null) {
            return out;
        }
        synchronized (group) {
            group.pendingOffsets().forEach((producerId, offsets) -> out.put(producerId, Set.copyOf(offsets.keySet())));
        }
        return out;
    }

    private void index(long producerId, String groupId) {
        groupsByProducer.compute(producerId, (id, groups) -> {
            Set<String> out = groups == null ? new HashSet<>() : groups;
            out.add(groupId);
            return out;
        });
    }

    private void unindex(long producerId, String groupId) {
        groupsByProducer.computeIfPresent(producerId, (id, groups) -> {
            groups.remove(groupId);
            return groups.isEmpty() ? null : groups;
        });
    }

    /**
     * Kafka's check of a transactional commit (its ClassicGroup.validateOffsetCommit with
     * isTransactional): a member, when one is named, must be current; an anonymous commit is accepted
     * even while the group has members (older TxnOffsetCommit versions carry no member).
     */
    private static Errors validate(ClassicGroup group, int generationId, String memberId, String instanceId) {
        if (group.gone()) {
            return Errors.COORDINATOR_NOT_AVAILABLE;
        }
        boolean namesMember = generationId >= 0 || (memberId != null && !memberId.isEmpty()) || instanceId != null;
        if (group.isConsumerGroup()) {
            if (!namesMember) {
                return Errors.NONE;
            }
            Errors e = ConsumerGroupCoordinator.validateOffsets(group, memberId, generationId, -1);
            // a producer's offset commit understands ILLEGAL_GENERATION (CommitFailedException), not the epoch errors
            return e == Errors.STALE_MEMBER_EPOCH || e == Errors.FENCED_MEMBER_EPOCH ? Errors.ILLEGAL_GENERATION : e;
        }
        if (generationId < 0 && group.is(State.EMPTY)) {
            return Errors.NONE;
        }
        if (!namesMember) {
            return Errors.NONE;
        }
        Errors member = GroupCoordinator.validateMember(group, memberId, instanceId);
        if (member != Errors.NONE) {
            return member;
        }
        return generationId == group.generationId ? Errors.NONE : Errors.ILLEGAL_GENERATION;
    }

    private static Map<TopicPartition, Errors> all(Map<TopicPartition, ?> partitions, Errors error) {
        Map<TopicPartition, Errors> out = new LinkedHashMap<>();
        partitions.keySet().forEach(tp -> out.put(tp, error));
        return out;
    }

    private static <T> CompletableFuture<T> done(T value) {
        return CompletableFuture.completedFuture(value);
    }
}
