package dev.varve.broker.group;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.message.ConsumerGroupDescribeResponseData;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatRequestData;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatResponseData;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;

/**
 * The coordinator of KIP-848 consumer groups (ConsumerGroupHeartbeat, ConsumerGroupDescribe), over the
 * same groups, offsets and {@code __consumer_offsets} partitions as the classic protocol
 * ({@link GroupCoordinator}).
 *
 * <p>Each heartbeat runs under the group's lock: {@link ConsumerGroupLogic} computes the next state,
 * {@link ConsumerGroupRecords#changes} the records; once they are in the local log the state is
 * installed (later heartbeats see it), and the member is answered when they are committed. A write
 * refused locally changes nothing. Session and rebalance timeouts run on the {@link GroupTimer}.
 *
 * <p>Groups move between the protocols offline, as Kafka allows: the first consumer-protocol member
 * turns an empty classic group (offsets only) into a consumer group, and the first classic member turns
 * an empty consumer group back. A group with members of the other protocol refuses the newcomer.
 */
public final class ConsumerGroupCoordinator {
    private static final Logger LOG = LoggerFactory.getLogger(ConsumerGroupCoordinator.class);

    private final GroupCoordinator coordinator;
    private final ConsumerGroupLogic logic;
    private final GroupTopics topics;

    public ConsumerGroupCoordinator(GroupCoordinator coordinator, ConsumerGroupLogic logic, GroupTopics topics) {
        this.coordinator = coordinator;
        this.logic = logic;
        this.topics = topics;
        coordinator.setConsumerGroups(this);
    }

    /** Whether the protocol is on: {@code group.version} 1 or more (UpdateFeatures can turn it off). */
    private volatile java.util.function.BooleanSupplier enabled = () -> true;

    public void setEnabled(java.util.function.BooleanSupplier enabled) {
        this.enabled = enabled;
    }

    public ConsumerGroupLogic logic() {
        return logic;
    }

    /** Per-group overrides of the session timeout and heartbeat interval; null: the broker's for every group. */
    private volatile GroupConfigs groupConfigs;

    public void setGroupConfigs(GroupConfigs groupConfigs) {
        this.groupConfigs = groupConfigs;
    }

    /** The group's {@code consumer.session.timeout.ms}, else the broker's {@code group.consumer.session.timeout.ms}. */
    int sessionTimeoutMs(String groupId) {
        GroupConfigs c = groupConfigs;
        return c == null ? logic.config().sessionTimeoutMs() : c.consumerSessionTimeoutMs(groupId);
    }

    /** The group's {@code consumer.heartbeat.interval.ms}, else the broker's {@code group.consumer.heartbeat.interval.ms}. */
    int heartbeatIntervalMs(String groupId) {
        GroupConfigs c = groupConfigs;
        return c == null ? logic.config().heartbeatIntervalMs() : c.consumerHeartbeatIntervalMs(groupId);
    }

    // ---------------------------------------------------------------- ConsumerGroupHeartbeat

    public CompletableFuture<ConsumerGroupHeartbeatResponseData> heartbeat(ConsumerGroupHeartbeatRequestData req,
                                                                          short version, String clientId,
                                                                          String clientHost) {
        if (!enabled.getAsBoolean()) {
            return error(Errors.UNSUPPORTED_VERSION, "The consumer group protocol is off: group.version is 0.");
        }
        try {
            ConsumerGroupLogic.validate(req, version); // before the group is looked up (or created)
        } catch (ApiException e) {
            return error(Errors.forException(e), e.getMessage());
        }
        boolean joining = req.memberEpoch() == 0;
        ClassicGroup group = joining ? coordinator.getOrCreate(req.groupId()) : coordinator.groups.get(req.groupId());
        if (group == null) {
            return error(Errors.UNKNOWN_MEMBER_ID, "Group " + req.groupId() + " has no member " + req.memberId() + ".");
        }
        CompletableFuture<ConsumerGroupHeartbeatResponseData> response = new CompletableFuture<>();
        synchronized (group) {
            if (group.gone()) {
                return error(Errors.COORDINATOR_NOT_AVAILABLE, "Group " + req.groupId() + " is being deleted.");
            }
            if (!group.isConsumerGroup() && !group.hasNoMembers()) {
                return error(Errors.GROUP_ID_NOT_FOUND, "Group " + req.groupId() + " is not a consumer group.");
            }
            if (!group.isConsumerGroup() && group.isShareGroup()) {
                coordinator.write(group, ShareGroupRecords.deletion(group.groupId, coordinator.time.milliseconds()),
                        (e, o) -> { });
                group.share = null; // an empty share group becomes a consumer group
            }
            ConsumerGroupState before = group.isConsumerGroup() ? group.consumer : ConsumerGroupState.EMPTY;
            ConsumerGroupLogic.Step step;
            try {
                step = logic.heartbeat(before, req, version, clientId, clientHost, topics, UUID.randomUUID().toString());
            } catch (ApiException e) {
                return error(Errors.forException(e), e.getMessage());
            }
            if (step.response().heartbeatIntervalMs() > 0) { // not a leave's answer
                step.response().setHeartbeatIntervalMs(heartbeatIntervalMs(group.groupId));
            }
            install(group, before, step.next(), () -> response.complete(step.response()),
                    error -> response.complete(errorData(error, null)));
            if (group.consumer == step.next()) {
                touched(group, before, step.next(), step.memberId(), req.memberEpoch());
            }
        }
        return response;
    }

    /**
     * Writes the change from {@code before} to {@code next} and installs {@code next} once it is in
     * the local log; {@code ok} runs when it is committed, {@code failed} with the error otherwise.
     * Called under the group's lock.
     */
    private void install(ClassicGroup group, ConsumerGroupState before, ConsumerGroupState next, Runnable ok,
                         java.util.function.Consumer<Errors> failed) {
        List<SimpleRecord> records = ConsumerGroupRecords.changes(group.groupId, before, next, coordinator.time.milliseconds());
        if (records.isEmpty()) {
            if (group.consumer != null || !next.isEmpty()) {
                group.consumer = next;
            }
            ok.run();
            return;
        }
        coordinator.write(group, records, lastOffset -> group.consumer = next, (error, lastOffset) -> {
            if (error == Errors.NONE) {
                ok.run();
            } else {
                failed.accept(error);
            }
        });
    }

    /** After a heartbeat's state is installed: the member's session restarts; revocations get a deadline. */
    private void touched(ClassicGroup group, ConsumerGroupState before, ConsumerGroupState next, String memberId,
                         int requestEpoch) {
        ConsumerGroupMember member = next.members().get(memberId);
        if (member == null) { // it left
            cancel(group.consumerSessionTimers.remove(memberId));
            cancel(group.consumerRebalanceTimers.remove(memberId));
        } else {
            scheduleSession(group, memberId);
            ConsumerGroupMember was = before.members().get(memberId);
            boolean revoking = waiting(member, next);
            boolean wasRevoking = was != null && waiting(was, before) && was.memberEpoch() == member.memberEpoch();
            if (!revoking) {
                cancel(group.consumerRebalanceTimers.remove(memberId));
            } else if (!wasRevoking || !group.consumerRebalanceTimers.containsKey(memberId)) {
                scheduleRebalance(group, member);
            }
        }
        // a static member replaced under a new id: its old id's timers go
        for (String gone : before.members().keySet()) {
            if (!next.members().containsKey(gone) && !gone.equals(memberId)) {
                cancel(group.consumerSessionTimers.remove(gone));
                cancel(group.consumerRebalanceTimers.remove(gone));
            }
        }
    }

    private void scheduleSession(ClassicGroup group, String memberId) {
        cancel(group.consumerSessionTimers.remove(memberId));
        Runnable[] self = new Runnable[1];
        int sessionTimeoutMs = sessionTimeoutMs(group.groupId);
        self[0] = coordinator.timer.schedule(sessionTimeoutMs, () -> {
            synchronized (group) {
                if (group.consumerSessionTimers.get(memberId) != self[0] || coordinator.groups.get(group.groupId) != group) {
                    return;
                }
                group.consumerSessionTimers.remove(memberId);
                LOG.info("group {}: member {} missed its session timeout of {} ms", group.groupId, memberId,
                        sessionTimeoutMs);
                fence(group, memberId);
            }
        });
        group.consumerSessionTimers.put(memberId, self[0]);
    }

    /**
     * Whether a member holds its group up: it must revoke partitions (UNREVOKED_PARTITIONS), or it stays
     * behind the target's epoch because a partition it must give up was sent to it and not yet reported
     * owned ({@link ConsumerGroupMember#unacknowledged}). Either way its rebalance timeout runs, as Kafka
     * bounds a revocation, and fences it when it expires.
     */
    private static boolean waiting(ConsumerGroupMember m, ConsumerGroupState state) {
        return m.state() == ConsumerGroupMember.MemberState.UNREVOKED_PARTITIONS
                || (m.memberEpoch() >= 0 && m.memberEpoch() != state.assignmentEpoch() && !m.unacknowledged().isEmpty());
    }

    private void scheduleRebalance(ClassicGroup group, ConsumerGroupMember member) {
        cancel(group.consumerRebalanceTimers.remove(member.memberId()));
        Runnable[] self = new Runnable[1];
        int epoch = member.memberEpoch();
        self[0] = coordinator.timer.schedule(member.rebalanceTimeoutMs(), () -> {
            synchronized (group) {
                if (group.consumerRebalanceTimers.get(member.memberId()) != self[0]
                        || coordinator.groups.get(group.groupId) != group || group.consumer == null) {
                    return;
                }
                group.consumerRebalanceTimers.remove(member.memberId());
                ConsumerGroupMember now = group.consumer.members().get(member.memberId());
                if (now != null && now.memberEpoch() == epoch && waiting(now, group.consumer)) {
                    LOG.info("group {}: member {} did not revoke its partitions (or report owning those it was sent) "
                            + "within its rebalance timeout of {} ms", group.groupId, member.memberId(),
                            member.rebalanceTimeoutMs());
                    fence(group, member.memberId());
                }
            }
        });
        group.consumerRebalanceTimers.put(member.memberId(), self[0]);
    }

    /** Removes a member whose session or rebalance timeout expired (under the group's lock). */
    private void fence(ClassicGroup group, String memberId) {
        if (group.consumer == null || !group.consumer.members().containsKey(memberId)) {
            return;
        }
        cancel(group.consumerSessionTimers.remove(memberId));
        cancel(group.consumerRebalanceTimers.remove(memberId));
        ConsumerGroupState before = group.consumer;
        install(group, before, logic.remove(before, memberId), () -> { },
                error -> LOG.warn("group {}: removing member {} was not written: {}", group.groupId, memberId, error));
    }

    private static void cancel(Runnable timer) {
        if (timer != null) {
            timer.run();
        }
    }

    // ---------------------------------------------------------------- ConsumerGroupDescribe

    public ConsumerGroupDescribeResponseData.DescribedGroup describe(String groupId) {
        ClassicGroup group = coordinator.groups.get(groupId);
        ConsumerGroupDescribeResponseData.DescribedGroup out = new ConsumerGroupDescribeResponseData.DescribedGroup()
                .setGroupId(groupId);
        if (group == null) {
            return out.setErrorCode(Errors.GROUP_ID_NOT_FOUND.code()).setErrorMessage("Group " + groupId + " not found.");
        }
        synchronized (group) {
            if (group.gone()) {
                return out.setErrorCode(Errors.GROUP_ID_NOT_FOUND.code()).setErrorMessage("Group " + groupId + " not found.");
            }
            if (!group.isConsumerGroup()) {
                return out.setErrorCode(Errors.GROUP_ID_NOT_FOUND.code())
                        .setErrorMessage("Group " + groupId + " is not a consumer group.");
            }
            ConsumerGroupState s = group.consumer;
            out.setGroupState(s.stateName()).setGroupEpoch(s.groupEpoch()).setAssignmentEpoch(s.assignmentEpoch())
                    .setAssignorName(logic.preferredAssignor(s.members().values()));
            for (ConsumerGroupMember m : s.members().values()) {
                out.members().add(new ConsumerGroupDescribeResponseData.Member()
                        .setMemberId(m.memberId()).setInstanceId(m.instanceId()).setRackId(m.rackId())
                        .setMemberEpoch(m.memberEpoch()).setClientId(m.clientId()).setClientHost(m.clientHost())
                        .setSubscribedTopicNames(m.subscribedTopicNames()).setSubscribedTopicRegex(m.subscribedTopicRegex())
                        .setAssignment(describeAssignment(m.assigned()))
                        .setTargetAssignment(describeAssignment(s.targetOf(m.memberId())))
                        .setMemberType((byte) 1));
            }
            return out;
        }
    }

    private ConsumerGroupDescribeResponseData.Assignment describeAssignment(Map<Uuid, Set<Integer>> partitions) {
        List<ConsumerGroupDescribeResponseData.TopicPartitions> tps = new ArrayList<>();
        partitions.forEach((id, ps) -> {
            String name = topics.nameOf(id);
            if (name != null) {
                tps.add(new ConsumerGroupDescribeResponseData.TopicPartitions().setTopicId(id).setTopicName(name)
                        .setPartitions(ps.stream().sorted().toList()));
            }
        });
        return new ConsumerGroupDescribeResponseData.Assignment().setTopicPartitions(tps);
    }

    // ---------------------------------------------------------------- offsets, the other protocol, replay

    /**
     * The error for an offset commit or fetch by a member of a consumer group: Kafka's rules. A commit
     * without a member (an admin tool) needs an empty group; a member must exist and send its current
     * epoch (STALE_MEMBER_EPOCH when behind, FENCED_MEMBER_EPOCH when ahead).
     *
     * @param commitVersion the OffsetCommit version, or -1 for a fetch
     */
    static Errors validateOffsets(ClassicGroup group, String memberId, int memberEpoch, int commitVersion) {
        return validateOffsets(group, memberId, memberEpoch, commitVersion, null, null);
    }

    /**
     * As {@link #validateOffsets(ClassicGroup, String, int, int)} for a commit of {@code partitions}: a commit
     * that carries the member's epoch before its last bump is accepted when the member owns every one of
     * its partitions now (the commit was sent before the answer with the new epoch arrived; what it
     * commits is the member's own), as Kafka 4.4's assignment epochs allow; a partition it gave up makes
     * it STALE_MEMBER_EPOCH.
     */
    static Errors validateOffsets(ClassicGroup group, String memberId, int memberEpoch, int commitVersion,
                                  java.util.Collection<org.apache.kafka.common.TopicPartition> partitions, GroupTopics topics) {
        Errors e = validateEpoch(group, memberId, memberEpoch, commitVersion);
        if (e != Errors.STALE_MEMBER_EPOCH || partitions == null || topics == null) {
            return e;
        }
        ConsumerGroupMember member = group.consumer.members().get(memberId);
        if (memberEpoch <= 0 || memberEpoch != member.previousMemberEpoch()) {
            return e; // (at epoch 0 a member owns nothing: a commit with it is stale whatever it names)
        }
        for (org.apache.kafka.common.TopicPartition tp : partitions) {
            Uuid id = topics.idOf(tp.topic());
            boolean owned = id != null && (member.assigned().getOrDefault(id, Set.of()).contains(tp.partition())
                    || member.pendingRevocation().getOrDefault(id, Set.of()).contains(tp.partition()));
            if (!owned) {
                return e;
            }
        }
        return Errors.NONE;
    }

    GroupTopics topics() {
        return topics;
    }

    private static Errors validateEpoch(ClassicGroup group, String memberId, int memberEpoch, int commitVersion) {
        ConsumerGroupState s = group.consumer;
        boolean anonymous = memberId == null || memberId.isEmpty();
        if (commitVersion >= 0) {
            if (memberEpoch < 0 && anonymous) {
                return s.isEmpty() ? Errors.NONE : Errors.UNKNOWN_MEMBER_ID;
            }
            if (commitVersion < 9) {
                return Errors.UNSUPPORTED_VERSION; // members of consumer groups commit with version 9 or later
            }
        } else if (memberEpoch < 0 && anonymous) {
            return Errors.NONE; // a fetch outside the group
        }
        ConsumerGroupMember member = s.members().get(memberId);
        if (member == null) {
            return Errors.UNKNOWN_MEMBER_ID;
        }
        if (memberEpoch > member.memberEpoch()) {
            return Errors.FENCED_MEMBER_EPOCH;
        }
        if (memberEpoch < member.memberEpoch()) {
            return Errors.STALE_MEMBER_EPOCH;
        }
        return Errors.NONE;
    }

    /**
     * A classic member joins a consumer group: allowed when it has no members, which turns it back into
     * a classic group (its consumer-group records are deleted); refused otherwise.
     */
    Errors beforeClassicJoin(ClassicGroup group) {
        if (!group.isConsumerGroup()) {
            return Errors.NONE;
        }
        if (!group.consumer.isEmpty()) {
            return Errors.INCONSISTENT_GROUP_PROTOCOL;
        }
        coordinator.write(group, ConsumerGroupRecords.deletion(group.groupId, coordinator.time.milliseconds()),
                (error, offset) -> {
                    if (error != Errors.NONE) {
                        LOG.warn("group {}: deleting its consumer-group records failed: {}", group.groupId, error);
                    }
                });
        group.consumer = null;
        LOG.info("group {}: empty consumer group converted to a classic group", group.groupId);
        return Errors.NONE;
    }

    /** After replay of a partition's groups: installs their consumer-group states and starts their sessions. */
    void completeLoad(ConsumerGroupRecords.Loader loader, java.util.function.Predicate<String> which) {
        loader.states().forEach((groupId, state) -> {
            if (!which.test(groupId)) {
                return;
            }
            ClassicGroup group = coordinator.getOrCreate(groupId);
            synchronized (group) {
                group.consumer = state;
                for (ConsumerGroupMember m : state.members().values()) {
                    scheduleSession(group, m.memberId());
                    if (m.state() == ConsumerGroupMember.MemberState.UNREVOKED_PARTITIONS) {
                        scheduleRebalance(group, m);
                    }
                }
            }
        });
    }

    /** The topics a consumer group's members subscribe to now (by name or regular expression). */
    Set<String> subscribedTopics(ClassicGroup group) {
        Set<String> out = new java.util.HashSet<>();
        if (group.consumer != null) {
            for (ConsumerGroupMember m : group.consumer.members().values()) {
                out.addAll(logic.subscribedTopics(m, topics));
            }
        }
        return out;
    }

    static boolean isConsumerGroupKey(ByteBuffer key) {
        return key.remaining() >= 2 && ConsumerGroupRecords.isConsumerGroupRecord(key.duplicate().getShort());
    }

    private static CompletableFuture<ConsumerGroupHeartbeatResponseData> error(Errors error, String message) {
        return CompletableFuture.completedFuture(errorData(error, message));
    }

    private static ConsumerGroupHeartbeatResponseData errorData(Errors error, String message) {
        return new ConsumerGroupHeartbeatResponseData().setErrorCode(error.code())
                .setErrorMessage(message != null ? message : error.message());
    }
}
