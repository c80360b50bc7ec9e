package dev.varve.broker.group;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.message.ShareGroupDescribeResponseData;
import org.apache.kafka.common.message.ShareGroupHeartbeatRequestData;
import org.apache.kafka.common.message.ShareGroupHeartbeatResponseData;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BiConsumer;

/**
 * The coordinator of KIP-932 share groups (ShareGroupHeartbeat, ShareGroupDescribe) over the same groups
 * and {@code __consumer_offsets} partitions as the other protocols. Each heartbeat runs under the
 * group's lock: {@link ShareGroupLogic} computes the next state, {@link ShareGroupRecords#changes} the
 * records; the state is installed once they are in the local log and the member is answered once they
 * are committed. Members whose session expires are removed. The share partitions learn of departed
 * members through {@link #onMemberRemoved} (their acquired records go back to the others).
 *
 * <p>A group id belongs to one protocol: a share member cannot join a consumer or classic group with
 * members (GROUP_ID_NOT_FOUND, "not a share group"), and an empty group of another type becomes a share
 * group when one joins.
 */
public final class ShareGroupCoordinator implements dev.varve.broker.share.ShareGroupMembership {
    private static final Logger LOG = LoggerFactory.getLogger(ShareGroupCoordinator.class);

    private final GroupCoordinator coordinator;
    private final ShareGroupLogic logic;
    private final GroupTopics topics;
    private final List<BiConsumer<String, String>> removedListeners = new CopyOnWriteArrayList<>();

    public ShareGroupCoordinator(GroupCoordinator coordinator, ShareGroupLogic logic, GroupTopics topics) {
        this.coordinator = coordinator;
        this.logic = logic;
        this.topics = topics;
        coordinator.setShareGroups(this);
    }

    /** Whether share groups are on: {@code share.version} 1 or more (UpdateFeatures can turn them off). */
    private volatile java.util.function.BooleanSupplier enabled = () -> true;

    public void setEnabled(java.util.function.BooleanSupplier enabled) {
        this.enabled = enabled;
    }

    public ShareGroupLogic logic() {
        return logic;
    }

    /** Per-group overrides of the session timeout and heartbeat interval; null: the broker's for every group. */
    private volatile GroupConfigs groupConfigs;

    public void setGroupConfigs(GroupConfigs groupConfigs) {
        this.groupConfigs = groupConfigs;
    }

    /** The group's {@code share.session.timeout.ms}, else the broker's {@code group.share.session.timeout.ms}. */
    int sessionTimeoutMs(String groupId) {
        GroupConfigs c = groupConfigs;
        return c == null ? logic.config().sessionTimeoutMs() : c.shareSessionTimeoutMs(groupId);
    }

    /** The group's {@code share.heartbeat.interval.ms}, else the broker's {@code group.share.heartbeat.interval.ms}. */
    int heartbeatIntervalMs(String groupId) {
        GroupConfigs c = groupConfigs;
        return c == null ? logic.config().heartbeatIntervalMs() : c.shareHeartbeatIntervalMs(groupId);
    }

    /** NONE when {@code memberId} is a current member of share group {@code groupId}; else the error to answer. */
    @Override
    public Errors checkMember(String groupId, String memberId) {
        ClassicGroup group = coordinator.groups.get(groupId);
        if (group == null) {
            return Errors.UNKNOWN_MEMBER_ID;
        }
        synchronized (group) {
            if (!group.isShareGroup()) {
                return group.hasNoMembers() ? Errors.UNKNOWN_MEMBER_ID : Errors.GROUP_ID_NOT_FOUND;
            }
            return group.share.members().containsKey(memberId) ? Errors.NONE : Errors.UNKNOWN_MEMBER_ID;
        }
    }

    private final List<java.util.function.Consumer<String>> deletedListeners = new CopyOnWriteArrayList<>();

    /** {@code listener.accept(groupId)} once a share group's deletion (DeleteGroups) is stored. */
    public void onGroupDeleted(java.util.function.Consumer<String> listener) {
        deletedListeners.add(listener);
    }

    void deleted(String groupId) {
        for (java.util.function.Consumer<String> l : deletedListeners) {
            try {
                l.accept(groupId);
            } catch (RuntimeException e) {
                LOG.warn("share group {}: a listener failed on its deletion", groupId, e);
            }
        }
    }

    /**
     * Whether a share group's offsets may be changed by an admin: NONE for an existing share group without
     * members, GROUP_ID_NOT_FOUND when there is no such share group, NON_EMPTY_GROUP while it has members.
     */
    public Errors checkIdle(String groupId) {
        ClassicGroup group = coordinator.groups.get(groupId);
        if (group == null) {
            return Errors.GROUP_ID_NOT_FOUND;
        }
        synchronized (group) {
            if (group.gone() || !group.isShareGroup()) {
                return Errors.GROUP_ID_NOT_FOUND;
            }
            return group.share.isEmpty() ? Errors.NONE : Errors.NON_EMPTY_GROUP;
        }
    }

    /** Whether {@code groupId} is a share group here. */
    public boolean exists(String groupId) {
        ClassicGroup group = coordinator.groups.get(groupId);
        if (group == null) {
            return false;
        }
        synchronized (group) {
            return !group.gone() && group.isShareGroup();
        }
    }

    /** {@code listener.accept(groupId, memberId)} when a member leaves or its session expires. */
    @Override
    public void onMemberRemoved(BiConsumer<String, String> listener) {
        removedListeners.add(listener);
    }

    public CompletableFuture<ShareGroupHeartbeatResponseData> heartbeat(ShareGroupHeartbeatRequestData req, String clientId,
                                                                       String clientHost) {
        if (!enabled.getAsBoolean()) {
            return error(Errors.UNSUPPORTED_VERSION, "Share groups are off: share.version is 0.");
        }
        try {
            ShareGroupLogic.validate(req); // before the group is looked up (or created)
        } catch (ApiException e) {
            return error(Errors.forException(e), e.getMessage());
        }
        boolean joining = req.memberEpoch() == 0;
        ClassicGroup group = joining ? coordinator.getOrCreate(req.groupId()) : coordinator.groups.get(req.groupId());
        if (group == null) {
            return error(Errors.UNKNOWN_MEMBER_ID, "Share group " + req.groupId() + " has no member " + req.memberId() + ".");
        }
        CompletableFuture<ShareGroupHeartbeatResponseData> response = new CompletableFuture<>();
        synchronized (group) {
            if (group.gone()) {
                return error(Errors.COORDINATOR_NOT_AVAILABLE, "Group " + req.groupId() + " is being deleted.");
            }
            if (!group.isShareGroup() && !group.hasNoMembers()) {
                return error(Errors.GROUP_ID_NOT_FOUND, "Group " + req.groupId() + " is not a share group.");
            }
            if (!group.isShareGroup() && group.isConsumerGroup()) {
                coordinator.write(group, ConsumerGroupRecords.deletion(group.groupId, coordinator.time.milliseconds()),
                        (e, o) -> { });
                group.consumer = null; // an empty consumer group becomes a share group
            }
            ShareGroupState before = group.isShareGroup() ? group.share : ShareGroupState.EMPTY;
            ShareGroupLogic.Step step;
            try {
                step = logic.heartbeat(before, req, clientId, clientHost, topics);
            } catch (ApiException e) {
                return error(Errors.forException(e), e.getMessage());
            }
            if (step.response().heartbeatIntervalMs() > 0) { // not a leave's answer
                step.response().setHeartbeatIntervalMs(heartbeatIntervalMs(group.groupId));
            }
            install(group, before, step.next(), () -> response.complete(step.response()),
                    error -> response.complete(errorData(error, null)));
            if (group.share == step.next()) {
                if (step.next().members().containsKey(step.memberId())) {
                    scheduleSession(group, step.memberId());
                } else {
                    cancel(group.shareSessionTimers.remove(step.memberId()));
                    removed(group.groupId, step.memberId());
                }
            }
        }
        return response;
    }

    private void install(ClassicGroup group, ShareGroupState before, ShareGroupState next, Runnable ok,
                         java.util.function.Consumer<Errors> failed) {
        List<SimpleRecord> records = ShareGroupRecords.changes(group.groupId, before, next, coordinator.time.milliseconds());
        if (records.isEmpty()) {
            if (group.share != null || !next.isEmpty()) {
                group.share = next;
            }
            ok.run();
            return;
        }
        coordinator.write(group, records, lastOffset -> group.share = next, (error, lastOffset) -> {
            if (error == Errors.NONE) {
                ok.run();
            } else {
                failed.accept(error);
            }
        });
    }

    private void scheduleSession(ClassicGroup group, String memberId) {
        cancel(group.shareSessionTimers.remove(memberId));
        Runnable[] self = new Runnable[1];
        int sessionTimeoutMs = sessionTimeoutMs(group.groupId);
        self[0] = coordinator.timer.schedule(sessionTimeoutMs, () -> {
            synchronized (group) {
                if (group.shareSessionTimers.get(memberId) != self[0] || coordinator.groups.get(group.groupId) != group
                        || group.share == null || !group.share.members().containsKey(memberId)) {
                    return;
                }
                group.shareSessionTimers.remove(memberId);
                LOG.info("share group {}: member {} missed its session timeout of {} ms", group.groupId, memberId,
                        sessionTimeoutMs);
                ShareGroupState before = group.share;
                install(group, before, logic.remove(before, memberId), () -> { },
                        error -> LOG.warn("share group {}: removing member {} was not written: {}", group.groupId, memberId, error));
                if (group.share != before) {
                    removed(group.groupId, memberId);
                }
            }
        });
        group.shareSessionTimers.put(memberId, self[0]);
    }

    private void removed(String groupId, String memberId) {
        for (BiConsumer<String, String> l : removedListeners) {
            try {
                l.accept(groupId, memberId);
            } catch (RuntimeException e) {
                LOG.warn("share group {}: a listener failed on member {} leaving", groupId, memberId, e);
            }
        }
    }

    private static void cancel(Runnable timer) {
        if (timer != null) {
            timer.run();
        }
    }

    public ShareGroupDescribeResponseData.DescribedGroup describe(String groupId) {
        ClassicGroup group = coordinator.groups.get(groupId);
        ShareGroupDescribeResponseData.DescribedGroup out = new ShareGroupDescribeResponseData.DescribedGroup().setGroupId(groupId);
        if (group == null) {
            return out.setErrorCode(Errors.GROUP_ID_NOT_FOUND.code()).setErrorMessage("Group " + groupId + " not found.");
        }
        synchronized (group) {
            if (group.gone()) {
                return out.setErrorCode(Errors.GROUP_ID_NOT_FOUND.code()).setErrorMessage("Group " + groupId + " not found.");
            }
            if (!group.isShareGroup()) {
                return out.setErrorCode(Errors.GROUP_ID_NOT_FOUND.code())
                        .setErrorMessage("Group " + groupId + " is not a share group.");
            }
            ShareGroupState s = group.share;
            out.setGroupState(s.stateName()).setGroupEpoch(s.groupEpoch()).setAssignmentEpoch(s.assignmentEpoch())
                    .setAssignorName(ShareGroupLogic.ASSIGNOR);
            for (ShareGroupState.Member m : s.members().values()) {
                out.members().add(new ShareGroupDescribeResponseData.Member().setMemberId(m.memberId()).setRackId(m.rackId())
                        .setMemberEpoch(m.memberEpoch()).setClientId(m.clientId()).setClientHost(m.clientHost())
                        .setSubscribedTopicNames(m.subscribedTopicNames()).setAssignment(describeAssignment(m.assigned())));
            }
            return out;
        }
    }

    private ShareGroupDescribeResponseData.Assignment describeAssignment(Map<Uuid, Set<Integer>> partitions) {
        List<ShareGroupDescribeResponseData.TopicPartitions> tps = new ArrayList<>();
        partitions.forEach((id, ps) -> {
            String name = topics.nameOf(id);
            if (name != null) {
                tps.add(new ShareGroupDescribeResponseData.TopicPartitions().setTopicId(id).setTopicName(name)
                        .setPartitions(ps.stream().sorted().toList()));
            }
        });
        return new ShareGroupDescribeResponseData.Assignment().setTopicPartitions(tps);
    }

    /** After replay of a partition's groups: installs their share-group states and starts their sessions. */
    void completeLoad(ShareGroupRecords.Loader loader, java.util.function.Predicate<String> which) {
        loader.states().forEach((groupId, state) -> {
            if (!which.test(groupId)) {
                return;
            }
            ClassicGroup group = coordinator.getOrCreate(groupId);
            synchronized (group) {
                group.share = state;
                state.members().keySet().forEach(m -> scheduleSession(group, m));
            }
        });
    }

    static boolean isShareGroupKey(ByteBuffer key) {
        return key.remaining() >= 2 && ShareGroupRecords.isShareGroupRecord(key.duplicate().getShort());
    }

    private static CompletableFuture<ShareGroupHeartbeatResponseData> error(Errors error, String message) {
        return CompletableFuture.completedFuture(errorData(error, message));
    }

    private static ShareGroupHeartbeatResponseData errorData(Errors error, String message) {
        return new ShareGroupHeartbeatResponseData().setErrorCode(error.code())
                .setErrorMessage(message != null ? message : error.message());
    }
}
