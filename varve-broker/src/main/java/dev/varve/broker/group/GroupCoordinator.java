package dev.varve.broker.group;

import dev.varve.broker.group.ClassicGroup.State;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.message.JoinGroupRequestData;
import org.apache.kafka.common.message.JoinGroupResponseData;
import org.apache.kafka.common.message.LeaveGroupRequestData;
import org.apache.kafka.common.message.LeaveGroupResponseData;
import org.apache.kafka.common.message.SyncGroupRequestData;
import org.apache.kafka.common.message.SyncGroupResponseData;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.requests.JoinGroupRequest;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;

/**
 * The group coordinator of the classic consumer-group protocol: membership (JoinGroup, SyncGroup,
 * Heartbeat, LeaveGroup) and its rebalance state machine, with generations, the two-step join
 * (MEMBER_ID_REQUIRED), session and rebalance timeouts, static membership and the initial rebalance
 * delay. Offsets and the group admin APIs are in {@link GroupOffsets}, over the same groups.
 *
 * <p>Thread-safety: the map of groups is concurrent; each group's state is changed only while
 * holding that group's monitor, by request threads and by timer tasks alike. A group that became
 * {@link State#DEAD} has been removed from the map; a caller that finds one retries the lookup.
 * Records are written to the {@link GroupStore} under the group's lock, so the stored order is the
 * order of changes; no thread waits for a write to replicate: a change takes effect, and its client
 * is answered, when the write is committed ({@link #write}).
 */
public final class GroupCoordinator {
    private static final Logger LOG = LoggerFactory.getLogger(GroupCoordinator.class);

    final GroupConfig config;
    final Time time;
    final GroupTimer timer;
    final GroupStore store;
    /** Where a write's outcome is applied when it arrives later (see {@link #write}). */
    private final Executor callbacks;
    final ConcurrentHashMap<String, ClassicGroup> groups = new ConcurrentHashMap<>();
    /** The KIP-848 side over the same groups, when the broker offers it ({@code group.coordinator.rebalance.protocols}). */
    private volatile ConsumerGroupCoordinator consumerGroups;

    /**
     * @param callbacks runs the outcome of writes that complete later: one thread in production (the
     *                  work is short and never blocks); tests may run it directly
     */
    public GroupCoordinator(GroupConfig config, Time time, GroupTimer timer, GroupStore store, Executor callbacks) {
        this.config = config;
        this.time = time;
        this.timer = timer;
        this.store = store;
        this.callbacks = callbacks;
    }

    /** The KIP-932 side over the same groups, when the broker offers it. */
    private volatile ShareGroupCoordinator shareGroups;

    void setShareGroups(ShareGroupCoordinator shareGroups) {
        this.shareGroups = shareGroups;
    }

    ShareGroupCoordinator shareGroups() {
        return shareGroups;
    }

    void setConsumerGroups(ConsumerGroupCoordinator consumerGroups) {
        this.consumerGroups = consumerGroups;
    }

    ConsumerGroupCoordinator consumerGroups() {
        return consumerGroups;
    }

    // ---------------------------------------------------------------- JoinGroup

    public CompletableFuture<JoinGroupResponseData> joinGroup(JoinGroupRequestData req, short version, String clientId,
                                                              String clientHost) {
        CompletableFuture<JoinGroupResponseData> response = new CompletableFuture<>();
        String memberId = req.memberId();
        String instanceId = req.groupInstanceId();
        if (req.groupId() == null || req.groupId().isEmpty()) {
            return joinError(memberId, Errors.INVALID_GROUP_ID);
        }
        if (instanceId != null) {
            try {
                JoinGroupRequest.validateGroupInstanceId(instanceId);
            } catch (InvalidConfigurationException e) {
                return joinError(memberId, Errors.INVALID_GROUP_ID);
            }
        }
        if (req.sessionTimeoutMs() < config.minSessionTimeoutMs() || req.sessionTimeoutMs() > config.maxSessionTimeoutMs()) {
            return joinError(memberId, Errors.INVALID_SESSION_TIMEOUT);
        }
        int rebalanceTimeoutMs = req.rebalanceTimeoutMs() < 0 ? req.sessionTimeoutMs() : req.rebalanceTimeoutMs();
        List<GroupMember.Protocol> protocols = new ArrayList<>();
        req.protocols().forEach(p -> protocols.add(new GroupMember.Protocol(p.name(), p.metadata())));
        boolean unknownMember = memberId == null || memberId.isEmpty();
        ClassicGroup group = unknownMember ? getOrCreate(req.groupId()) : groups.get(req.groupId());
        if (group == null) {
            return joinError(memberId, Errors.UNKNOWN_MEMBER_ID);
        }
        synchronized (group) {
            if (group.gone()) {
                // deleted in between: the client retries and finds (or creates) the new group
                return joinError(memberId, Errors.COORDINATOR_NOT_AVAILABLE);
            }
            if (group.isShareGroup()) {
                if (!group.share.isEmpty()) {
                    return joinError(memberId, Errors.INCONSISTENT_GROUP_PROTOCOL);
                }
                write(group, ShareGroupRecords.deletion(group.groupId, time.milliseconds()), (e, o) -> { });
                group.share = null; // an empty share group becomes a classic one
            }
            if (group.isConsumerGroup()) {
                Errors refused = consumerGroups.beforeClassicJoin(group);
                if (refused != Errors.NONE) {
                    return joinError(memberId, refused);
                }
            }
            if (unknownMember && group.size() >= config.maxSize() && group.staticMemberId(instanceId) == null) {
                return joinError(memberId, Errors.GROUP_MAX_SIZE_REACHED);
            }
            if (!group.supports(req.protocolType(), protocols)) {
                return joinError(memberId, Errors.INCONSISTENT_GROUP_PROTOCOL);
            }
            if (unknownMember) {
                joinUnknownMember(group, req, version, clientId, clientHost, rebalanceTimeoutMs, protocols, response);
            } else {
                joinKnownMember(group, req, clientId, clientHost, rebalanceTimeoutMs, protocols, response);
            }
        }
        return response;
    }

    private void joinUnknownMember(ClassicGroup group, JoinGroupRequestData req, short version, String clientId,
                                   String clientHost, int rebalanceTimeoutMs, List<GroupMember.Protocol> protocols,
                                   CompletableFuture<JoinGroupResponseData> response) {
        String instanceId = req.groupInstanceId();
        String newMemberId = (instanceId != null ? instanceId : clientId) + "-" + UUID.randomUUID();
        if (instanceId != null) {
            String existing = group.staticMemberId(instanceId);
            if (existing != null) {
                rejoinStaticMember(group, req, version, existing, newMemberId, rebalanceTimeoutMs, protocols, response);
                return;
            }
        } else if (JoinGroupRequest.requiresKnownMemberId(version)) {
            // Two-step join: the member learns its id first, so a retried request cannot add a second member.
            String pending = newMemberId;
            group.pendingMembers.put(pending, timer.schedule(req.sessionTimeoutMs(), () -> expirePending(group, pending)));
            response.complete(new JoinGroupResponseData().setErrorCode(Errors.MEMBER_ID_REQUIRED.code())
                    .setMemberId(pending).setGenerationId(-1).setProtocolName("").setLeader(""));
            return;
        }
        GroupMember member = new GroupMember(newMemberId, instanceId, clientId, clientHost, rebalanceTimeoutMs,
                req.sessionTimeoutMs(), req.protocolType(), protocols);
        addMemberAndRebalance(group, member, response);
    }

    private void joinKnownMember(ClassicGroup group, JoinGroupRequestData req, String clientId, String clientHost,
                                 int rebalanceTimeoutMs,
                                 List<GroupMember.Protocol> protocols, CompletableFuture<JoinGroupResponseData> response) {
        String memberId = req.memberId();
        Runnable pending = group.pendingMembers.remove(memberId);
        if (pending != null) {
            pending.run();
            GroupMember member = new GroupMember(memberId, req.groupInstanceId(), clientId, clientHost, rebalanceTimeoutMs,
                    req.sessionTimeoutMs(), req.protocolType(), protocols);
            addMemberAndRebalance(group, member, response);
            return;
        }
        Errors fenced = validateMember(group, memberId, req.groupInstanceId());
        if (fenced != Errors.NONE) {
            response.complete(joinErrorData(memberId, fenced));
            return;
        }
        GroupMember member = group.get(memberId);
        switch (group.state()) {
            case PREPARING_REBALANCE -> updateMemberAndRebalance(group, member, rebalanceTimeoutMs, req.sessionTimeoutMs(),
                    protocols, response);
            case COMPLETING_REBALANCE -> {
                if (member.sameProtocols(protocols)) {
                    // the join response was lost: send it again (the leader needs the members again)
                    response.complete(joinResponse(group, member, group.isLeader(memberId)));
                } else {
                    updateMemberAndRebalance(group, member, rebalanceTimeoutMs, req.sessionTimeoutMs(), protocols, response);
                }
            }
            case STABLE -> {
                if (group.isLeader(memberId) || !member.sameProtocols(protocols)) {
                    // the leader rejoins to trigger a rebalance (e.g. its subscription's metadata changed)
                    updateMemberAndRebalance(group, member, rebalanceTimeoutMs, req.sessionTimeoutMs(), protocols, response);
                } else {
                    response.complete(joinResponse(group, member, false));
                }
            }
            default -> response.complete(joinErrorData(memberId, Errors.UNKNOWN_MEMBER_ID));
        }
    }

    /**
     * A static member that lost its member id (e.g. restarted) takes over its old membership. In a
     * Stable group that costs no rebalance unless its new protocols change the protocol the group
     * would select (Kafka compares protocol names, not metadata: a restarted consumer's metadata
     * always differs in its owned partitions and generation). The leader too keeps the generation, as
     * in Kafka: from JoinGroup v9 it is answered as the leader, with the members and
     * {@code skipAssignment} (KIP-814); below v9, where the answer cannot say "skip", it is answered as
     * a follower: the response names the leader as it was before the rejoin (its own old id when it
     * was the leader), so it sends an empty SyncGroup and gets its stored assignment back. Older
     * clients (librdkafka speaks JoinGroup v5) would otherwise make every restart of the leader a
     * rebalance of the whole group.
     */
    private void rejoinStaticMember(ClassicGroup group, JoinGroupRequestData req, short version, String oldMemberId,
                                    String newMemberId, int rebalanceTimeoutMs, List<GroupMember.Protocol> protocols,
                                    CompletableFuture<JoinGroupResponseData> response) {
        GroupMember member = group.get(oldMemberId);
        if (member.awaitingJoin != null) {
            member.awaitingJoin.complete(joinErrorData(oldMemberId, Errors.FENCED_INSTANCE_ID));
            member.awaitingJoin = null;
        }
        if (member.awaitingSync != null) {
            member.awaitingSync.complete(syncError(Errors.FENCED_INSTANCE_ID));
            member.awaitingSync = null;
        }
        List<GroupMember.Protocol> oldProtocols = member.protocols;
        int oldRebalanceTimeoutMs = member.rebalanceTimeoutMs;
        int oldSessionTimeoutMs = member.sessionTimeoutMs;
        String leaderBefore = group.leaderId;
        group.replaceStaticMember(req.groupInstanceId(), oldMemberId, newMemberId);
        member.protocols = List.copyOf(protocols);
        member.rebalanceTimeoutMs = rebalanceTimeoutMs;
        member.sessionTimeoutMs = req.sessionTimeoutMs();
        boolean leader = group.isLeader(newMemberId);
        boolean sameSelection = group.protocolName != null && group.protocolName.equals(group.selectProtocol());
        if (group.is(State.STABLE) && sameSelection) {
            // The stored group must name the new member id, or a restart would restore an id nobody holds;
            // the member answers once that is committed (the old id is fenced from now on, as in Kafka).
            int generation = group.generationId;
            scheduleHeartbeatExpiry(group, member);
            persistGroup(group, (stored, offset) -> {
                if (stored != Errors.NONE) {
                    if (newMemberId.equals(group.staticMemberId(req.groupInstanceId())) && group.generationId == generation) {
                        group.replaceStaticMember(req.groupInstanceId(), newMemberId, oldMemberId);
                        member.protocols = oldProtocols;
                        member.rebalanceTimeoutMs = oldRebalanceTimeoutMs;
                        member.sessionTimeoutMs = oldSessionTimeoutMs;
                    }
                    response.complete(joinErrorData(req.memberId(), stored));
                    return;
                }
                LOG.info("group {}: static member {} rejoined as {} without a rebalance", group.groupId,
                        req.groupInstanceId(), newMemberId);
                JoinGroupResponseData data;
                if (JoinGroupRequest.supportsSkippingAssignment(version)) {
                    data = joinResponse(group, member, leader).setSkipAssignment(leader);
                } else {
                    data = joinResponse(group, member, false).setLeader(leaderBefore);
                }
                response.complete(data);
            });
        } else {
            updateMemberAndRebalance(group, member, rebalanceTimeoutMs, req.sessionTimeoutMs(), protocols, response);
        }
    }

    private void addMemberAndRebalance(ClassicGroup group, GroupMember member,
                                       CompletableFuture<JoinGroupResponseData> response) {
        member.awaitingJoin = response;
        group.add(member);
        if (group.is(State.PREPARING_REBALANCE) && group.generationId == 0) {
            group.newMemberAdded = true;
        }
        scheduleHeartbeatExpiry(group, member);
        maybePrepareRebalance(group, "member " + member.memberId() + " joined");
        tryCompleteJoin(group);
    }

    private void updateMemberAndRebalance(ClassicGroup group, GroupMember member, int rebalanceTimeoutMs,
                                          int sessionTimeoutMs, List<GroupMember.Protocol> protocols,
                                          CompletableFuture<JoinGroupResponseData> response) {
        if (member.awaitingJoin != null && member.awaitingJoin != response) {
            member.awaitingJoin.complete(joinErrorData(member.memberId(), Errors.UNKNOWN_MEMBER_ID));
        }
        member.protocols = List.copyOf(protocols);
        member.rebalanceTimeoutMs = rebalanceTimeoutMs;
        member.sessionTimeoutMs = sessionTimeoutMs;
        member.awaitingJoin = response;
        maybePrepareRebalance(group, "member " + member.memberId() + " rejoined");
        tryCompleteJoin(group);
    }

    // ---------------------------------------------------------------- rebalance

    void maybePrepareRebalance(ClassicGroup group, String reason) {
        if (group.is(State.STABLE) || group.is(State.COMPLETING_REBALANCE) || group.is(State.EMPTY)) {
            prepareRebalance(group, reason);
        }
    }

    private void prepareRebalance(ClassicGroup group, String reason) {
        if (group.is(State.COMPLETING_REBALANCE)) {
            for (GroupMember m : group.members()) {
                if (m.awaitingSync != null) {
                    m.awaitingSync.complete(syncError(Errors.REBALANCE_IN_PROGRESS));
                    m.awaitingSync = null;
                }
            }
        }
        cancelPendingSync(group);
        group.pendingSync.clear();
        boolean initial = group.is(State.EMPTY) && config.initialRebalanceDelayMs() > 0;
        group.transitionTo(State.PREPARING_REBALANCE, time.milliseconds());
        LOG.info("group {} preparing to rebalance (generation {}): {}", group.groupId, group.generationId, reason);
        if (initial) {
            group.newMemberAdded = false;
            long delay = Math.min(config.initialRebalanceDelayMs(), Math.max(group.maxRebalanceTimeoutMs(), 0));
            scheduleJoinCompletion(group, delay, Math.max(group.maxRebalanceTimeoutMs() - delay, 0), true);
        } else {
            scheduleJoinCompletion(group, group.maxRebalanceTimeoutMs(), 0, false);
            tryCompleteJoin(group); // e.g. the last member left: nobody to wait for
        }
    }

    /**
     * Completes the join phase after {@code delayMs} at the latest. An initial (delayed) rebalance
     * waits the whole delay, and waits again while new members keep arriving, within the remaining
     * rebalance timeout; an ordinary one completes as soon as every member has rejoined.
     */
    private void scheduleJoinCompletion(ClassicGroup group, long delayMs, long remainingMs, boolean initial) {
        cancelJoinTimer(group);
        long token = ++group.joinTimerToken;
        group.joinTimer = timer.schedule(delayMs, () -> {
            synchronized (group) {
                if (group.joinTimerToken != token || !group.is(State.PREPARING_REBALANCE)) {
                    return;
                }
                group.joinTimer = null;
                if (initial && group.newMemberAdded && remainingMs > 0) {
                    group.newMemberAdded = false;
                    long next = Math.min(config.initialRebalanceDelayMs(), remainingMs);
                    scheduleJoinCompletion(group, next, remainingMs - next, true);
                } else {
                    completeJoin(group);
                }
            }
        });
        group.initialDelay = initial;
    }

    private void cancelJoinTimer(ClassicGroup group) {
        if (group.joinTimer != null) {
            group.joinTimer.run();
            group.joinTimer = null;
        }
        group.joinTimerToken++;
    }

    /** Completes the join phase now if every member has rejoined (not during an initial delay). */
    void tryCompleteJoin(ClassicGroup group) {
        if (!group.is(State.PREPARING_REBALANCE)) {
            return;
        }
        if (group.initialDelay) {
            return; // the initial delay waits for more members even when all present have joined
        }
        if (group.allMembersJoined()) {
            cancelJoinTimer(group);
            completeJoin(group);
        }
    }

    private void completeJoin(ClassicGroup group) {
        group.initialDelay = false;
        // Dynamic members that did not rejoin in time leave the group; static members keep their
        // place (KIP-345): they come back under their instance id without another rebalance.
        for (GroupMember m : List.copyOf(group.members())) {
            if (!m.isAwaitingJoin() && !m.isStatic()) {
                LOG.info("group {}: member {} did not rejoin in time and is removed", group.groupId, m.memberId());
                cancelHeartbeat(m);
                group.remove(m.memberId());
            }
        }
        if (group.size() > 0 && (group.leaderId == null || !group.get(group.leaderId).isAwaitingJoin())) {
            // the leader must be a member that rejoined: it runs the assignment
            String rejoined = group.members().stream().filter(GroupMember::isAwaitingJoin)
                    .map(GroupMember::memberId).findFirst().orElse(null);
            if (rejoined == null) {
                // only absent static members: wait another rebalance timeout (their sessions may expire)
                LOG.info("group {}: no member rejoined; waiting another {} ms", group.groupId, group.maxRebalanceTimeoutMs());
                scheduleJoinCompletion(group, group.maxRebalanceTimeoutMs(), 0, false);
                return;
            }
            group.leaderId = rejoined;
        }
        group.initNextGeneration(time.milliseconds());
        if (group.is(State.EMPTY)) {
            LOG.info("group {} is empty at generation {}", group.groupId, group.generationId);
            persistGroup(group, (stored, offset) -> {
                if (stored != Errors.NONE) {
                    LOG.warn("group {}: storing the empty generation failed: {}", group.groupId, stored);
                }
            });
            return;
        }
        LOG.info("group {} starts generation {} with {} member(s), protocol {}", group.groupId, group.generationId,
                group.size(), group.protocolName);
        for (GroupMember m : group.members()) {
            CompletableFuture<JoinGroupResponseData> f = m.awaitingJoin;
            if (f == null) {
                continue; // an absent static member: it learns the generation when it returns
            }
            m.awaitingJoin = null;
            scheduleHeartbeatExpiry(group, m);
            f.complete(joinResponse(group, m, group.isLeader(m.memberId())));
        }
        schedulePendingSync(group);
    }

    /**
     * Members of a new generation must send SyncGroup within the rebalance timeout; those that do not
     * (a leader whose assignor hangs while its heartbeats go on, an absent static member) are removed
     * and the group rebalances, as Kafka does since 3.2, instead of waiting forever.
     */
    private void schedulePendingSync(ClassicGroup group) {
        cancelPendingSync(group);
        group.pendingSync.clear();
        group.members().forEach(m -> group.pendingSync.add(m.memberId()));
        int generation = group.generationId;
        group.pendingSyncTimer = timer.schedule(group.maxRebalanceTimeoutMs(), () -> {
            synchronized (group) {
                if (group.generationId != generation || group.pendingSync.isEmpty()
                        || !(group.is(State.COMPLETING_REBALANCE) || group.is(State.STABLE))) {
                    return;
                }
                group.pendingSyncTimer = null;
                for (String memberId : List.copyOf(group.pendingSync)) {
                    GroupMember m = group.get(memberId);
                    if (m != null) {
                        LOG.info("group {}: member {} sent no SyncGroup within the rebalance timeout and is removed",
                                group.groupId, memberId);
                        removeMemberAndUpdateGroup(group, m);
                    }
                }
                group.pendingSync.clear();
            }
        });
    }

    private static void cancelPendingSync(ClassicGroup group) {
        if (group.pendingSyncTimer != null) {
            group.pendingSyncTimer.run();
            group.pendingSyncTimer = null;
        }
    }

    private JoinGroupResponseData joinResponse(ClassicGroup group, GroupMember member, boolean withMembers) {
        JoinGroupResponseData data = new JoinGroupResponseData()
                .setErrorCode(Errors.NONE.code())
                .setGenerationId(group.generationId)
                .setProtocolType(group.protocolType)
                .setProtocolName(group.protocolName)
                .setLeader(group.leaderId)
                .setMemberId(member.memberId());
        if (withMembers) {
            for (GroupMember m : group.members()) {
                data.members().add(new JoinGroupResponseData.JoinGroupResponseMember()
                        .setMemberId(m.memberId())
                        .setGroupInstanceId(m.groupInstanceId)
                        .setMetadata(m.metadata(group.protocolName)));
            }
        }
        return data;
    }

    // ---------------------------------------------------------------- SyncGroup

    public CompletableFuture<SyncGroupResponseData> syncGroup(SyncGroupRequestData req) {
        ClassicGroup group = groups.get(req.groupId());
        if (group == null) {
            return CompletableFuture.completedFuture(syncError(Errors.UNKNOWN_MEMBER_ID));
        }
        CompletableFuture<SyncGroupResponseData> response = new CompletableFuture<>();
        synchronized (group) {
            if (group.gone()) {
                return CompletableFuture.completedFuture(syncError(Errors.COORDINATOR_NOT_AVAILABLE));
            }
            Errors invalid = validateMember(group, req.memberId(), req.groupInstanceId());
            if (invalid == Errors.NONE && req.generationId() != group.generationId) {
                invalid = Errors.ILLEGAL_GENERATION;
            }
            if (invalid == Errors.NONE && ((req.protocolType() != null && !req.protocolType().equals(group.protocolType))
                    || (req.protocolName() != null && !req.protocolName().equals(group.protocolName)))) {
                invalid = Errors.INCONSISTENT_GROUP_PROTOCOL;
            }
            if (invalid != Errors.NONE) {
                return CompletableFuture.completedFuture(syncError(invalid));
            }
            GroupMember member = group.get(req.memberId());
            if (!group.is(State.PREPARING_REBALANCE)) {
                group.pendingSync.remove(member.memberId());
            }
            switch (group.state()) {
                case PREPARING_REBALANCE -> response.complete(syncError(Errors.REBALANCE_IN_PROGRESS));
                case STABLE -> {
                    scheduleHeartbeatExpiry(group, member);
                    response.complete(syncResponse(group, member));
                }
                case COMPLETING_REBALANCE -> {
                    member.awaitingSync = response;
                    scheduleHeartbeatExpiry(group, member);
                    if (group.isLeader(member.memberId())) {
                        completeSync(group, req);
                    }
                }
                default -> response.complete(syncError(Errors.UNKNOWN_MEMBER_ID));
            }
        }
        return response;
    }

    /** The leader's assignment ends the rebalance: stored first, then handed to every member. */
    private void completeSync(ClassicGroup group, SyncGroupRequestData req) {
        Map<String, byte[]> assignments = new HashMap<>();
        for (SyncGroupRequestData.SyncGroupRequestAssignment a : req.assignments()) {
            assignments.put(a.memberId(), a.assignment());
        }
        Map<GroupMember, byte[]> previous = new HashMap<>();
        for (GroupMember m : group.members()) {
            previous.put(m, m.assignment);
            m.assignment = assignments.getOrDefault(m.memberId(), new byte[0]);
        }
        // The group stays CompletingRebalance until the assignment is committed: members syncing
        // meanwhile wait with the others; a rebalance that starts meanwhile answers them itself.
        int generation = group.generationId;
        persistGroup(group, (stored, offset) -> {
            if (!group.is(State.COMPLETING_REBALANCE) || group.generationId != generation) {
                return; // superseded: a new rebalance began while the write was in flight
            }
            if (stored != Errors.NONE) {
                previous.forEach((m, a) -> m.assignment = a);
                for (GroupMember m : group.members()) {
                    if (m.awaitingSync != null) {
                        m.awaitingSync.complete(syncError(stored));
                        m.awaitingSync = null;
                    }
                }
                prepareRebalance(group, "storing the assignment failed: " + stored);
                return;
            }
            group.transitionTo(State.STABLE, time.milliseconds());
            LOG.info("group {} is stable at generation {}", group.groupId, group.generationId);
            for (GroupMember m : group.members()) {
                if (m.awaitingSync != null) {
                    m.awaitingSync.complete(syncResponse(group, m));
                    m.awaitingSync = null;
                }
            }
        });
    }

    private static SyncGroupResponseData syncResponse(ClassicGroup group, GroupMember member) {
        return new SyncGroupResponseData().setErrorCode(Errors.NONE.code())
                .setProtocolType(group.protocolType).setProtocolName(group.protocolName)
                .setAssignment(member.assignment);
    }

    private static SyncGroupResponseData syncError(Errors error) {
        return new SyncGroupResponseData().setErrorCode(error.code()).setAssignment(new byte[0]);
    }

    // ---------------------------------------------------------------- Heartbeat

    public Errors heartbeat(String groupId, String memberId, String groupInstanceId, int generationId) {
        ClassicGroup group = groups.get(groupId);
        if (group == null) {
            return Errors.UNKNOWN_MEMBER_ID;
        }
        synchronized (group) {
            if (group.gone()) {
                return Errors.COORDINATOR_NOT_AVAILABLE;
            }
            Errors invalid = validateMember(group, memberId, groupInstanceId);
            if (invalid != Errors.NONE) {
                return invalid;
            }
            if (generationId != group.generationId) {
                return Errors.ILLEGAL_GENERATION;
            }
            GroupMember member = group.get(memberId);
            switch (group.state()) {
                case EMPTY:
                    return Errors.UNKNOWN_MEMBER_ID;
                case PREPARING_REBALANCE:
                    scheduleHeartbeatExpiry(group, member);
                    return Errors.REBALANCE_IN_PROGRESS;
                default:
                    scheduleHeartbeatExpiry(group, member);
                    return Errors.NONE;
            }
        }
    }

    // ---------------------------------------------------------------- LeaveGroup

    /** One member leaving; the response carries a per-member result (v3+ batches several). */
    public List<LeaveGroupResponseData.MemberResponse> leaveGroup(String groupId,
                                                                  List<LeaveGroupRequestData.MemberIdentity> leaving) {
        List<LeaveGroupResponseData.MemberResponse> out = new ArrayList<>();
        ClassicGroup group = groups.get(groupId);
        if (group == null) {
            leaving.forEach(m -> out.add(memberResponse(m, Errors.UNKNOWN_MEMBER_ID)));
            return out;
        }
        synchronized (group) {
            for (LeaveGroupRequestData.MemberIdentity m : leaving) {
                out.add(memberResponse(m, leave(group, m)));
            }
        }
        return out;
    }

    private Errors leave(ClassicGroup group, LeaveGroupRequestData.MemberIdentity identity) {
        if (group.gone()) {
            return Errors.COORDINATOR_NOT_AVAILABLE;
        }
        String memberId = identity.memberId();
        String instanceId = identity.groupInstanceId();
        if (instanceId != null) {
            String current = group.staticMemberId(instanceId);
            if (current == null) {
                return Errors.UNKNOWN_MEMBER_ID;
            }
            if (memberId != null && !memberId.isEmpty() && !memberId.equals(current)) {
                return Errors.FENCED_INSTANCE_ID;
            }
            memberId = current;
        }
        Runnable pending = group.pendingMembers.remove(memberId);
        if (pending != null) {
            pending.run();
            tryCompleteJoin(group);
            return Errors.NONE;
        }
        GroupMember member = group.get(memberId);
        if (member == null) {
            return Errors.UNKNOWN_MEMBER_ID;
        }
        LOG.info("group {}: member {} leaves{}", group.groupId, memberId,
                identity.reason() == null ? "" : " (" + identity.reason() + ")");
        removeMemberAndUpdateGroup(group, member);
        return Errors.NONE;
    }

    private static LeaveGroupResponseData.MemberResponse memberResponse(LeaveGroupRequestData.MemberIdentity m, Errors e) {
        return new LeaveGroupResponseData.MemberResponse().setMemberId(m.memberId())
                .setGroupInstanceId(m.groupInstanceId()).setErrorCode(e.code());
    }

    private void removeMemberAndUpdateGroup(ClassicGroup group, GroupMember member) {
        cancelHeartbeat(member);
        if (member.awaitingJoin != null) {
            member.awaitingJoin.complete(joinErrorData(member.memberId(), Errors.UNKNOWN_MEMBER_ID));
            member.awaitingJoin = null;
        }
        if (member.awaitingSync != null) {
            member.awaitingSync.complete(syncError(Errors.UNKNOWN_MEMBER_ID));
            member.awaitingSync = null;
        }
        group.remove(member.memberId());
        switch (group.state()) {
            case STABLE, COMPLETING_REBALANCE -> maybePrepareRebalance(group, "member " + member.memberId() + " left");
            case PREPARING_REBALANCE -> tryCompleteJoin(group);
            default -> { }
        }
    }

    // ---------------------------------------------------------------- timers

    void scheduleHeartbeatExpiry(ClassicGroup group, GroupMember member) {
        cancelHeartbeat(member);
        long epoch = ++member.heartbeatEpoch;
        member.heartbeatTimer = timer.schedule(member.sessionTimeoutMs, () -> {
            synchronized (group) {
                if (member.heartbeatEpoch != epoch || group.get(member.memberId()) != member) {
                    return;
                }
                if (member.isAwaitingJoin() || member.isAwaitingSync()) {
                    scheduleHeartbeatExpiry(group, member); // a waiting request keeps its member alive
                    return;
                }
                LOG.info("group {}: member {} missed its session timeout of {} ms", group.groupId, member.memberId(),
                        member.sessionTimeoutMs);
                removeMemberAndUpdateGroup(group, member);
            }
        });
    }

    private static void cancelHeartbeat(GroupMember member) {
        member.heartbeatEpoch++;
        if (member.heartbeatTimer != null) {
            member.heartbeatTimer.run();
            member.heartbeatTimer = null;
        }
    }

    private void expirePending(ClassicGroup group, String memberId) {
        synchronized (group) {
            if (group.pendingMembers.remove(memberId) != null) {
                tryCompleteJoin(group);
            }
        }
    }

    // ---------------------------------------------------------------- shared

    ClassicGroup getOrCreate(String groupId) {
        return groups.computeIfAbsent(groupId, id -> new ClassicGroup(id, time.milliseconds()));
    }

    /** The member exists and, for a static member, holds its instance id now. */
    static Errors validateMember(ClassicGroup group, String memberId, String groupInstanceId) {
        if (groupInstanceId != null) {
            String current = group.staticMemberId(groupInstanceId);
            if (current == null) {
                return Errors.UNKNOWN_MEMBER_ID;
            }
            if (!current.equals(memberId)) {
                return Errors.FENCED_INSTANCE_ID;
            }
        }
        return group.has(memberId) ? Errors.NONE : Errors.UNKNOWN_MEMBER_ID;
    }

    /** Writes the group's membership record; {@code done} gets NONE or the error to answer with. */
    void persistGroup(ClassicGroup group, WriteDone done) {
        write(group, List.of(new SimpleRecord(time.milliseconds(),
                GroupRecords.groupMetadataKey(group.groupId), GroupRecords.groupValue(group.toValue()))), done);
    }

    /** The outcome of a write: NONE or the error a group client understands, and its last offset (-1 if none). */
    @FunctionalInterface
    interface WriteDone {
        void accept(Errors error, long lastOffset);
    }

    /**
     * Writes records for a group (the caller holds its lock) and hands the outcome to {@code done},
     * under the group's lock: at once when it is known already (a single node), else on the callback
     * executor once the write is committed or failed. Never on the thread that completed the write:
     * that thread may hold another group's lock (its own append advanced the high watermark), and two
     * groups waiting for each other's lock would stop both.
     */
    void write(ClassicGroup group, List<SimpleRecord> records, WriteDone done) {
        write(group, () -> store.append(group.groupId, records), lastOffset -> { }, done);
    }

    /** As {@link #write}; {@code appended} runs at once, under the lock, once the records are in the local log. */
    void write(ClassicGroup group, List<SimpleRecord> records, java.util.function.LongConsumer appended, WriteDone done) {
        write(group, () -> store.append(group.groupId, records), appended, done);
    }

    /**
     * As {@link #write}, as one transactional batch of the producer; {@code appended} runs at once,
     * under the lock, with the batch's last offset once it is in the local log (before it is committed).
     */
    void writeTransactional(ClassicGroup group, long producerId, short producerEpoch, List<SimpleRecord> records,
                            dev.varve.storage.VerificationGuard guard, java.util.function.LongConsumer appended,
                            WriteDone done) {
        write(group, () -> guard == null ? store.appendTransactional(group.groupId, producerId, producerEpoch, records)
                : store.appendTransactional(group.groupId, producerId, producerEpoch, records, guard), appended, done);
    }

    private void write(ClassicGroup group, java.util.function.Supplier<GroupStore.Write> append,
                       java.util.function.LongConsumer appended, WriteDone done) {
        GroupStore.Write w;
        try {
            w = append.get();
        } catch (RuntimeException e) {
            done.accept(storeError(group.groupId, e), -1);
            return;
        }
        appended.accept(w.lastOffset());
        CompletableFuture<Void> committed = w.committed();
        if (committed.isDone()) {
            done.accept(outcome(group.groupId, committed), w.lastOffset());
            return;
        }
        committed.whenComplete((v, e) -> {
            try {
                callbacks.execute(() -> {
                    synchronized (group) {
                        done.accept(outcome(group.groupId, committed), w.lastOffset());
                    }
                });
            } catch (java.util.concurrent.RejectedExecutionException shutdown) {
                LOG.debug("group {}: write outcome dropped at shutdown", group.groupId);
            }
        });
    }

    private static Errors outcome(String groupId, CompletableFuture<Void> committed) {
        try {
            committed.join();
            return Errors.NONE;
        } catch (java.util.concurrent.CompletionException | java.util.concurrent.CancellationException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            return storeError(groupId, cause instanceof RuntimeException r ? r : new RuntimeException(cause));
        }
    }

    /** Kafka's mapping of a failed write to the offsets topic onto what a group client understands. */
    static Errors storeError(String groupId, RuntimeException e) {
        Errors error = Errors.forException(e);
        LOG.warn("writing to the offsets topic for group {} failed: {}", groupId, error, e);
        return switch (error) {
            case UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND, REQUEST_TIMED_OUT,
                    KAFKA_STORAGE_ERROR -> Errors.COORDINATOR_NOT_AVAILABLE;
            case NOT_LEADER_OR_FOLLOWER -> Errors.NOT_COORDINATOR;
            case MESSAGE_TOO_LARGE, RECORD_LIST_TOO_LARGE, INVALID_FETCH_SIZE -> Errors.INVALID_COMMIT_OFFSET_SIZE;
            // a transactional write of a fenced producer: the producer's own error, as Kafka answers it
            case INVALID_PRODUCER_EPOCH, PRODUCER_FENCED, INVALID_TXN_STATE, INVALID_PRODUCER_ID_MAPPING -> error;
            default -> Errors.UNKNOWN_SERVER_ERROR;
        };
    }

    private static CompletableFuture<JoinGroupResponseData> joinError(String memberId, Errors error) {
        return CompletableFuture.completedFuture(joinErrorData(memberId, error));
    }

    private static JoinGroupResponseData joinErrorData(String memberId, Errors error) {
        return new JoinGroupResponseData().setErrorCode(error.code()).setGenerationId(-1)
                .setMemberId(memberId == null ? "" : memberId).setProtocolName("").setLeader("");
    }
}
