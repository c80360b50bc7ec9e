package dev.varve.broker.group;

import dev.varve.broker.group.ClassicGroup.State;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.message.DescribeGroupsResponseData;
import org.apache.kafka.common.message.ListGroupsResponseData;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.requests.DescribeGroupsResponse;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * Committed offsets and the group admin operations (describe, list, delete, offset delete,
 * retention, replay at start-up) over the groups of a {@link GroupCoordinator}.
 *
 * <p>Thread-safety: as the coordinator's: every group is read and changed under its monitor; a
 * change is stored, and committed, before memory reflects it and its client is answered, so what a
 * client was told is what a restart replays. Nothing waits for the write: the answer completes later.
 */
public final class GroupOffsets {
    private static final Logger LOG = LoggerFactory.getLogger(GroupOffsets.class);
    /** The only group type this coordinator runs (ListGroups v5 types filter). */
    public static final String CLASSIC = "classic";
    /** The group type (and protocol type) of KIP-848 consumer groups. */
    public static final String CONSUMER = "consumer";
    /** The group type (and protocol type) of KIP-932 share groups. */
    public static final String SHARE = "share";

    private final GroupCoordinator coordinator;
    private final TransactionalOffsets transactional;

    /** KIP-848 group records replayed but not yet installed (a partition's load in progress). */
    private final ConsumerGroupRecords.Loader consumerLoader = new ConsumerGroupRecords.Loader();
    /** KIP-932 group records replayed but not yet installed. */
    private final ShareGroupRecords.Loader shareLoader = new ShareGroupRecords.Loader();

    public GroupOffsets(GroupCoordinator coordinator) {
        this.coordinator = coordinator;
        this.transactional = new TransactionalOffsets(coordinator);
    }

    /** The transactional offset commits over the same groups. */
    public TransactionalOffsets transactional() {
        return transactional;
    }

    // ---------------------------------------------------------------- OffsetCommit

    /**
     * Commits offsets for a group: by a member of the current generation, or (generation -1, no
     * member id) by a simple consumer or an admin while the group has no members. A group that does
     * not exist is created for a simple commit.
     *
     * @param offsets the offsets; their commit timestamps are set here, to the coordinator's clock
     * @return completes, once the commit is stored and visible, with NONE, or with the error for every
     *         partition of the request
     */
    public CompletableFuture<Errors> commit(String groupId, int generationId, String memberId, String groupInstanceId,
                                            Map<TopicPartition, GroupRecords.OffsetValue> offsets) {
        return commit(groupId, generationId, memberId, groupInstanceId, offsets, Short.MAX_VALUE);
    }

    /**
     * As {@link #commit(String, int, String, String, Map)}, by an OffsetCommit of {@code version}: a member of
     * a KIP-848 consumer group commits with version 9 or later, its member epoch as the generation.
     */
    public CompletableFuture<Errors> commit(String groupId, int generationId, String memberId, String groupInstanceId,
                                            Map<TopicPartition, GroupRecords.OffsetValue> offsets, short version) {
        if (groupId == null || groupId.isEmpty()) {
            return done(Errors.INVALID_GROUP_ID);
        }
        ClassicGroup group = coordinator.groups.get(groupId);
        if (group == null) {
            if (generationId >= 0) {
                // a member of a group that no longer exists (the handler answers ILLEGAL_GENERATION before v9)
                return done(Errors.GROUP_ID_NOT_FOUND);
            }
            group = coordinator.getOrCreate(groupId);
        }
        CompletableFuture<Errors> result = new CompletableFuture<>();
        synchronized (group) {
            if (group.isShareGroup() && !group.gone()) {
                return done(Errors.GROUP_ID_NOT_FOUND); // a share group keeps no committed offsets
            }
            Errors invalid = group.isConsumerGroup() && !group.gone()
                    ? ConsumerGroupCoordinator.validateOffsets(group, memberId, generationId, version, offsets.keySet(),
                            coordinator.consumerGroups() == null ? null : coordinator.consumerGroups().topics())
                    : validateCommit(group, generationId, memberId, groupInstanceId);
            if (invalid != Errors.NONE) {
                return done(invalid);
            }
            if (offsets.isEmpty()) {
                return done(Errors.NONE);
            }
            List<SimpleRecord> records = new ArrayList<>(offsets.size());
            long now = coordinator.time.milliseconds();
            Map<TopicPartition, GroupRecords.OffsetValue> stamped = new LinkedHashMap<>();
            offsets.forEach((tp, v) -> {
                GroupRecords.OffsetValue value = new GroupRecords.OffsetValue(v.offset(), v.leaderEpoch(), v.metadata(), now);
                stamped.put(tp, value);
                records.add(new SimpleRecord(now, GroupRecords.offsetCommitKey(groupId, tp), GroupRecords.offsetValue(value)));
            });
            if (generationId >= 0 && !group.isConsumerGroup() && group.has(memberId)) {
                coordinator.scheduleHeartbeatExpiry(group, group.get(memberId)); // a commit is a sign of life
            }
            ClassicGroup g = group;
            coordinator.write(group, records, (stored, writtenAt) -> {
                if (stored == Errors.NONE) {
                    stamped.forEach((tp, v) -> g.applyCommit(tp, v, writtenAt));
                }
                result.complete(stored);
            });
        }
        return result;
    }

    private static <T> CompletableFuture<T> done(T value) {
        return CompletableFuture.completedFuture(value);
    }

    private static Errors validateCommit(ClassicGroup group, int generationId, String memberId, String instanceId) {
        if (group.gone()) {
            return Errors.COORDINATOR_NOT_AVAILABLE;
        }
        boolean anonymous = generationId < 0 && (memberId == null || memberId.isEmpty()) && instanceId == null;
        if (generationId < 0 && group.is(State.EMPTY)) {
            return Errors.NONE; // simple consumer or admin tool
        }
        if (anonymous) {
            return Errors.UNKNOWN_MEMBER_ID; // the group has members: only they may commit
        }
        Errors member = GroupCoordinator.validateMember(group, memberId, instanceId);
        if (member != Errors.NONE) {
            return member;
        }
        if (generationId != group.generationId) {
            return Errors.ILLEGAL_GENERATION;
        }
        if (group.is(State.COMPLETING_REBALANCE)) {
            // the member has its new generation but not yet its assignment: it commits again after sync
            return Errors.REBALANCE_IN_PROGRESS;
        }
        return Errors.NONE;
    }

    // ---------------------------------------------------------------- OffsetFetch

    /**
     * The committed offsets of a group: of {@code partitions}, or all when null. Partitions without a
     * committed offset are absent. An unknown group has none.
     */
    public Map<TopicPartition, GroupRecords.OffsetValue> fetch(String groupId, Collection<TopicPartition> partitions) {
        return fetch(groupId, partitions, false).committed();
    }

    /**
     * Committed offsets, and the partitions among them (or among those asked for) whose offset is not
     * stable: a transaction has a pending offset for them (OffsetFetch answers UNSTABLE_OFFSET_COMMIT).
     */
    public record Fetched(Map<TopicPartition, GroupRecords.OffsetValue> committed, Set<TopicPartition> unstable) {
    }

    /**
     * As {@link #fetch(String, Collection)}; with {@code requireStable}, also the partitions with a
     * pending transactional offset: of {@code partitions}, or of the committed ones when null (as Kafka
     * lists only committed partitions when all are asked for).
     */
    public Fetched fetch(String groupId, Collection<TopicPartition> partitions, boolean requireStable) {
        ClassicGroup group = coordinator.groups.get(groupId);
        Map<TopicPartition, GroupRecords.OffsetValue> out = new LinkedHashMap<>();
        Set<TopicPartition> unstable = new java.util.HashSet<>();
        if (group == null) {
            return new Fetched(out, unstable);
        }
        synchronized (group) {
            if (partitions == null) {
                out.putAll(group.offsets);
            } else {
                for (TopicPartition tp : partitions) {
                    GroupRecords.OffsetValue v = group.offsets.get(tp);
                    if (v != null) {
                        out.put(tp, v);
                    }
                }
            }
            if (requireStable && group.hasPendingOffsets()) {
                for (TopicPartition tp : partitions == null ? out.keySet() : partitions) {
                    if (group.hasPendingOffset(tp)) {
                        unstable.add(tp);
                    }
                }
            }
        }
        return new Fetched(out, unstable);
    }

    /**
     * The error for an OffsetFetch (version 9+) naming a member of a KIP-848 consumer group: the member
     * must exist and send its current epoch. NONE for classic groups and for fetches that name no member.
     */
    public Errors validateFetch(String groupId, String memberId, int memberEpoch) {
        ClassicGroup group = coordinator.groups.get(groupId);
        if (group == null) {
            return memberId == null || memberId.isEmpty() ? Errors.NONE : Errors.UNKNOWN_MEMBER_ID;
        }
        synchronized (group) {
            if (!group.isConsumerGroup()) {
                return Errors.NONE;
            }
            return ConsumerGroupCoordinator.validateOffsets(group, memberId, memberEpoch, -1);
        }
    }

    // ---------------------------------------------------------------- OffsetDelete

    /** The result of an offset deletion: a group-level error, else one per partition. */
    public record DeleteOffsetsResult(Errors groupError, Map<TopicPartition, Errors> partitions) {
    }

    /**
     * Deletes committed offsets of partitions the group is not consuming: refused per partition
     * (GROUP_SUBSCRIBED_TO_TOPIC) for topics an active consumer group subscribes to, and for the whole
     * group (NON_EMPTY_GROUP) when it has members of another protocol type.
     */
    public CompletableFuture<DeleteOffsetsResult> deleteOffsets(String groupId, Collection<TopicPartition> partitions) {
        ClassicGroup group = coordinator.groups.get(groupId);
        if (group == null) {
            return done(new DeleteOffsetsResult(Errors.GROUP_ID_NOT_FOUND, Map.of()));
        }
        synchronized (group) {
            if (group.gone()) {
                return done(new DeleteOffsetsResult(Errors.GROUP_ID_NOT_FOUND, Map.of()));
            }
            if (group.size() > 0 && !org.apache.kafka.clients.consumer.internals.ConsumerProtocol.PROTOCOL_TYPE
                    .equals(group.protocolType)) {
                return done(new DeleteOffsetsResult(Errors.NON_EMPTY_GROUP, Map.of())); // e.g. a Connect group
            }
            // topics it cannot tell (no generation yet, an unreadable subscription) count as not subscribed
            Set<String> subscribed = group.isConsumerGroup() ? coordinator.consumerGroups().subscribedTopics(group)
                    : group.subscribedTopics().orElse(Set.of());
            Map<TopicPartition, Errors> result = new LinkedHashMap<>();
            List<TopicPartition> deleted = new ArrayList<>();
            for (TopicPartition tp : partitions) {
                if (subscribed.contains(tp.topic())) {
                    result.put(tp, Errors.GROUP_SUBSCRIBED_TO_TOPIC);
                } else {
                    result.put(tp, Errors.NONE);
                    if (group.offsets.containsKey(tp) || group.hasPendingOffset(tp)) {
                        deleted.add(tp); // its tombstone also ends pending transactional offsets, as in Kafka
                    }
                }
            }
            return removeOffsets(group, deleted, false).thenApply(stored -> stored != Errors.NONE
                    ? new DeleteOffsetsResult(stored, Map.of()) : new DeleteOffsetsResult(Errors.NONE, result));
        }
    }

    /**
     * Writes tombstones for the offsets (and the group, when asked: it takes no changes meanwhile and
     * is dead once they are committed), and forgets the offsets once they are committed. Holds the lock.
     *
     * @return completes with NONE or the error to answer with, once that is decided
     */
    private CompletableFuture<Errors> removeOffsets(ClassicGroup group, Collection<TopicPartition> partitions,
                                                    boolean andGroup) {
        List<SimpleRecord> tombstones = new ArrayList<>();
        long now = coordinator.time.milliseconds();
        for (TopicPartition tp : partitions) {
            tombstones.add(new SimpleRecord(now, GroupRecords.offsetCommitKey(group.groupId, tp), null));
        }
        if (andGroup) {
            if (group.isConsumerGroup()) {
                tombstones.addAll(ConsumerGroupRecords.deletion(group.groupId, now));
            }
            if (group.isShareGroup()) {
                tombstones.addAll(ShareGroupRecords.deletion(group.groupId, now));
            }
            tombstones.add(new SimpleRecord(now, GroupRecords.groupMetadataKey(group.groupId), null));
        }
        if (tombstones.isEmpty()) {
            return done(Errors.NONE);
        }
        if (andGroup) {
            group.deleting = true;
        }
        List<TopicPartition> removed = List.copyOf(partitions);
        CompletableFuture<Errors> result = new CompletableFuture<>();
        coordinator.write(group, tombstones, (stored, writtenAt) -> {
            if (stored == Errors.NONE) {
                removed.forEach(tp -> group.applyDelete(tp, writtenAt));
                if (andGroup) {
                    markDead(group);
                }
            } else if (andGroup) {
                group.deleting = false;
            }
            result.complete(stored);
        });
        return result;
    }

    // ---------------------------------------------------------------- DeleteGroups

    /**
     * Deletes empty groups with their offsets: GROUP_ID_NOT_FOUND, NON_EMPTY_GROUP or NONE per group,
     * each once its deletion is committed.
     */
    public CompletableFuture<Map<String, Errors>> deleteGroups(Collection<String> groupIds) {
        Map<String, CompletableFuture<Errors>> pending = new LinkedHashMap<>();
        for (String groupId : groupIds) {
            ClassicGroup group = coordinator.groups.get(groupId);
            if (group == null) {
                pending.put(groupId, done(Errors.GROUP_ID_NOT_FOUND));
                continue;
            }
            synchronized (group) {
                if (group.gone()) {
                    pending.put(groupId, done(Errors.GROUP_ID_NOT_FOUND));
                } else if (!group.is(State.EMPTY) || !group.hasNoMembers()) {
                    pending.put(groupId, done(Errors.NON_EMPTY_GROUP));
                } else {
                    Set<TopicPartition> all = new java.util.LinkedHashSet<>(group.offsets.keySet());
                    all.addAll(group.pendingPartitions()); // pending transactional offsets go too, as in Kafka
                    pending.put(groupId, removeOffsets(group, all, true));
                }
            }
        }
        return CompletableFuture.allOf(pending.values().toArray(new CompletableFuture<?>[0])).thenApply(v -> {
            Map<String, Errors> out = new LinkedHashMap<>();
            pending.forEach((id, f) -> out.put(id, f.join()));
            return out;
        });
    }

    private void markDead(ClassicGroup group) {
        ShareGroupCoordinator shareGroups = coordinator.shareGroups();
        if (group.isShareGroup() && shareGroups != null) {
            shareGroups.deleted(group.groupId); // its share partitions' state goes with it
        }
        transactional.forget(group);
        group.transitionTo(State.DEAD, coordinator.time.milliseconds());
        coordinator.groups.remove(group.groupId, group);
        LOG.info("group {} deleted", group.groupId);
    }

    // ---------------------------------------------------------------- DescribeGroups, ListGroups

    public DescribeGroupsResponseData.DescribedGroup describe(String groupId) {
        ClassicGroup group = coordinator.groups.get(groupId);
        if (group == null) {
            return DescribeGroupsResponse.groupMetadata(groupId, Errors.NONE, State.DEAD.kafkaName, "", "",
                    List.of(), DescribeGroupsResponse.AUTHORIZED_OPERATIONS_OMITTED);
        }
        synchronized (group) {
            if (group.isConsumerGroup() || group.isShareGroup()) {
                // Kafka 4: DescribeGroups describes classic groups only (the handler answers Dead before v6)
                return DescribeGroupsResponse.groupError(groupId, Errors.GROUP_ID_NOT_FOUND,
                        "Group " + groupId + " is not a classic group.");
            }
            boolean stable = group.is(State.STABLE);
            List<DescribeGroupsResponseData.DescribedGroupMember> members = new ArrayList<>();
            for (GroupMember m : group.members()) {
                byte[] meta = stable ? m.metadata(group.protocolName) : null;
                members.add(new DescribeGroupsResponseData.DescribedGroupMember()
                        .setMemberId(m.memberId())
                        .setGroupInstanceId(m.groupInstanceId)
                        .setClientId(m.clientId)
                        .setClientHost(m.clientHost)
                        .setMemberMetadata(meta == null ? new byte[0] : meta)
                        .setMemberAssignment(stable ? m.assignment : new byte[0]));
            }
            return DescribeGroupsResponse.groupMetadata(groupId, Errors.NONE, group.state().kafkaName,
                    group.protocolType == null ? "" : group.protocolType,
                    stable && group.protocolName != null ? group.protocolName : "", members,
                    DescribeGroupsResponse.AUTHORIZED_OPERATIONS_OMITTED);
        }
    }

    /** Groups in one of {@code states} (all when empty), of one of {@code types} (all when empty). */
    public List<ListGroupsResponseData.ListedGroup> list(Collection<String> states, Collection<String> types) {
        boolean classic = types.isEmpty() || types.stream().anyMatch(CLASSIC::equalsIgnoreCase);
        boolean consumer = types.isEmpty() || types.stream().anyMatch(CONSUMER::equalsIgnoreCase);
        boolean share = types.isEmpty() || types.stream().anyMatch(SHARE::equalsIgnoreCase);
        List<ListGroupsResponseData.ListedGroup> out = new ArrayList<>();
        for (ClassicGroup group : coordinator.groups.values()) {
            synchronized (group) {
                boolean isConsumer = group.isConsumerGroup();
                boolean isShare = group.isShareGroup();
                String state = isConsumer ? group.consumer.stateName() : isShare ? group.share.stateName()
                        : group.state().kafkaName;
                if (group.gone() || !(isConsumer ? consumer : isShare ? share : classic)
                        || (!states.isEmpty() && states.stream().noneMatch(s -> s.equalsIgnoreCase(state)))) {
                    continue;
                }
                String type = isConsumer ? CONSUMER : isShare ? SHARE : CLASSIC;
                out.add(new ListGroupsResponseData.ListedGroup().setGroupId(group.groupId)
                        .setProtocolType(isConsumer || isShare ? type : group.protocolType == null ? "" : group.protocolType)
                        .setGroupState(state).setGroupType(type));
            }
        }
        out.sort(java.util.Comparator.comparing(ListGroupsResponseData.ListedGroup::groupId));
        return out;
    }

    // ---------------------------------------------------------------- retention

    /**
     * Expires offsets past {@code offsets.retention.minutes}: all offsets of an empty group, counted
     * from when it became empty (or from the commit, for a group that never had members), and offsets
     * of topics a consumer group no longer subscribes to. An empty group left with no offsets is
     * deleted.
     *
     * @return the number of offsets expired
     */
    public int expireOffsets() {
        long now = coordinator.time.milliseconds();
        long retention = coordinator.config.offsetsRetentionMs();
        int expired = 0;
        for (ClassicGroup group : coordinator.groups.values()) {
            synchronized (group) {
                if (group.gone()) {
                    continue;
                }
                List<TopicPartition> due = new ArrayList<>();
                if (group.isConsumerGroup()) {
                    // Kafka: a consumer group's offsets expire from their commit, when the group is empty or
                    // no longer subscribes to their topic
                    Set<String> subscribed = coordinator.consumerGroups().subscribedTopics(group);
                    group.offsets.forEach((tp, v) -> {
                        if (!subscribed.contains(tp.topic()) && now - v.commitTimestampMs() >= retention
                                && !group.hasPendingOffset(tp)) {
                            due.add(tp);
                        }
                    });
                } else if (group.is(State.EMPTY)) {
                    boolean neverHadMembers = group.protocolType == null;
                    for (Map.Entry<TopicPartition, GroupRecords.OffsetValue> e : group.offsets.entrySet()) {
                        long base = neverHadMembers ? e.getValue().commitTimestampMs()
                                : Math.max(group.stateTimestampMs, 0);
                        // an offset a transaction is about to replace stays until the transaction ends (Kafka)
                        if (now - base >= retention && !group.hasPendingOffset(e.getKey())) {
                            due.add(e.getKey());
                        }
                    }
                } else {
                    Optional<Set<String>> subscribed = group.subscribedTopics();
                    if (subscribed.isPresent() && group.is(State.STABLE)) {
                        group.offsets.forEach((tp, v) -> {
                            if (!subscribed.get().contains(tp.topic()) && now - v.commitTimestampMs() >= retention
                                    && !group.hasPendingOffset(tp)) {
                                due.add(tp);
                            }
                        });
                    }
                }
                // an empty group whose offsets are all gone is deleted (as Kafka does, also one that never had
                // any), unless a transaction is open in it
                // (a share group stays until DeleteGroups: its share partitions' state outlives its members)
                boolean removeGroup = group.is(State.EMPTY) && group.hasNoMembers() && !group.isShareGroup()
                        && due.size() == group.offsets.size()
                        && !group.hasPendingOffsets();
                if (due.isEmpty() && !removeGroup) {
                    continue;
                }
                CompletableFuture<Errors> removal = removeOffsets(group, due, removeGroup);
                if (!removal.isDone() || removal.join() == Errors.NONE) {
                    expired += due.size(); // written; forgotten once committed
                }
            }
        }
        if (expired > 0) {
            LOG.info("expired {} committed offset(s)", expired);
        }
        return expired;
    }

    /** Forgets (with tombstones) every group's offsets of a deleted topic, as Kafka does. */
    public void removeOffsetsOfTopic(String topic) {
        for (ClassicGroup group : coordinator.groups.values()) {
            synchronized (group) {
                if (group.gone()) {
                    continue;
                }
                Set<TopicPartition> candidates = new java.util.LinkedHashSet<>(group.offsets.keySet());
                candidates.addAll(group.pendingPartitions());
                List<TopicPartition> gone = candidates.stream().filter(tp -> tp.topic().equals(topic)).toList();
                if (!gone.isEmpty()) {
                    removeOffsets(group, gone, false).thenAccept(stored -> {
                        if (stored == Errors.NONE) {
                            LOG.info("group {}: dropped {} offset(s) of deleted topic {}", group.groupId, gone.size(), topic);
                        }
                    });
                }
            }
        }
    }

    // ---------------------------------------------------------------- replay

    /**
     * Forgets the groups {@code which} accepts (this broker no longer coordinates them: their offsets
     * partition moved to another leader). Their state stays in the offsets topic for the next coordinator.
     *
     * @return how many groups were dropped
     */
    public int unload(java.util.function.Predicate<String> which) {
        consumerLoader.clear(which);
        shareLoader.clear(which);
        int n = 0;
        for (ClassicGroup group : List.copyOf(coordinator.groups.values())) {
            if (which.test(group.groupId) && coordinator.groups.remove(group.groupId, group)) {
                synchronized (group) {
                    transactional.forget(group);
                }
                n++;
            }
        }
        return n;
    }

    /**
     * Applies one stored record at start-up, in log order: {@code offset} is its offset in the
     * partition, {@code producerId} the producer of its transactional batch (an offset commit there is
     * pending until {@link #replayEndTransaction}), else {@code RecordBatch.NO_PRODUCER_ID}. A record
     * that does not decode is skipped with a warning: a damaged offsets topic must not keep the broker down.
     */
    public void replay(long offset, long producerId, ByteBuffer key, ByteBuffer value) {
        if (key == null) {
            return;
        }
        try {
            if (ShareGroupCoordinator.isShareGroupKey(key)) {
                String groupId = shareLoader.replay(key, value);
                if (groupId != null) {
                    coordinator.getOrCreate(groupId);
                }
                return;
            }
            if (ConsumerGroupCoordinator.isConsumerGroupKey(key)) {
                String groupId = consumerLoader.replay(key, value);
                if (groupId != null) {
                    coordinator.getOrCreate(groupId); // its offsets and its consumer state share one group
                }
                return;
            }
            GroupRecords.Key k = GroupRecords.readKey(key);
            if (k.isOffsetCommit()) {
                if (value == null) {
                    ClassicGroup group = coordinator.groups.get(k.groupId());
                    if (group != null) {
                        group.applyDelete(k.partition(), offset);
                    }
                } else if (producerId >= 0) {
                    transactional.replayPending(coordinator.getOrCreate(k.groupId()), producerId, k.partition(),
                            GroupRecords.readOffsetValue(value), offset);
                } else {
                    coordinator.getOrCreate(k.groupId()).applyCommit(k.partition(), GroupRecords.readOffsetValue(value),
                            offset);
                }
            } else if (value == null) {
                ClassicGroup removed = coordinator.groups.remove(k.groupId());
                if (removed != null) {
                    transactional.forget(removed);
                }
            } else {
                coordinator.getOrCreate(k.groupId()).loadFrom(GroupRecords.readGroupValue(value),
                        coordinator.time.milliseconds());
            }
        } catch (GroupRecords.CorruptGroupRecordException e) {
            LOG.warn("skipping an offsets-topic record that does not decode: {}", e.getMessage());
        }
    }

    /**
     * Applies a replayed COMMIT or ABORT marker of {@code producerId} at {@code markerOffset} in
     * {@code __consumer_offsets} partition {@code partition} (see {@link TransactionalOffsets#completeTransaction}).
     */
    public void replayEndTransaction(int partition, long producerId, boolean commit, long markerOffset) {
        transactional.completeTransaction(partition, producerId, commit, markerOffset);
    }

    /** After replay: loaded members get a session timeout, as if they had just heartbeated. */
    public void completeLoad() {
        completeLoad(groupId -> true);
    }

    /** As {@link #completeLoad()}, for the groups {@code which} accepts (one offsets partition's). */
    public void completeLoad(java.util.function.Predicate<String> which) {
        ConsumerGroupCoordinator consumerGroups = coordinator.consumerGroups();
        if (consumerGroups != null) {
            consumerGroups.completeLoad(consumerLoader, which);
        }
        consumerLoader.clear(which);
        ShareGroupCoordinator shareGroups = coordinator.shareGroups();
        if (shareGroups != null) {
            shareGroups.completeLoad(shareLoader, which);
        }
        shareLoader.clear(which);
        for (ClassicGroup group : coordinator.groups.values()) {
            if (!which.test(group.groupId)) {
                continue;
            }
            synchronized (group) {
                for (GroupMember m : group.members()) {
                    coordinator.scheduleHeartbeatExpiry(group, m);
                }
            }
        }
        LOG.info("loaded {} group(s) from the offsets topic", coordinator.groups.size());
    }
}
