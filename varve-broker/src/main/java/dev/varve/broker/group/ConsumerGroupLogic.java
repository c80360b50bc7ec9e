package dev.varve.broker.group;

import dev.varve.broker.group.assignor.AssignmentSpec;
import dev.varve.broker.group.assignor.MemberSpec;
import dev.varve.broker.group.assignor.ServerAssignor;
import dev.varve.broker.group.assignor.TopicSpec;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.errors.FencedInstanceIdException;
import org.apache.kafka.common.errors.FencedMemberEpochException;
import org.apache.kafka.common.errors.GroupMaxSizeReachedException;
import org.apache.kafka.common.errors.InvalidRegularExpression;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.errors.UnknownMemberIdException;
import org.apache.kafka.common.errors.UnreleasedInstanceIdException;
import org.apache.kafka.common.errors.UnsupportedAssignorException;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatRequestData;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatResponseData;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * The KIP-848 consumer group protocol as pure functions: a heartbeat (or a timer) and the group's
 * state in, the next state and the answer out. No clock, no I/O, no locks: the coordinator
 * ({@link ConsumerGroupCoordinator}) holds the group's lock, writes the records and runs the timers.
 *
 * <p>A heartbeat updates the member (join, subscription, rack, assignor), bumps the group epoch when
 * the members, their subscriptions or the subscribed topics changed, computes a new target assignment
 * with the server-side assignor when the target is behind the group epoch, and moves the member one
 * step towards its target ({@link ConsumerGroupMember#reconcile}).
 */
public final class ConsumerGroupLogic {
    /** The settings the protocol needs, under Kafka's broker keys ({@code group.consumer.*}). */
    public record Config(int sessionTimeoutMs, int heartbeatIntervalMs, int maxSize, List<String> assignors) {
        public Config {
            assignors = List.copyOf(assignors);
            if (assignors.isEmpty()) {
                throw new IllegalArgumentException("group.consumer.assignors must name at least one assignor");
            }
            assignors.forEach(ServerAssignor::byName); // refuses an unknown one
        }

        public static Config defaults() {
            return new Config(45_000, 5_000, Integer.MAX_VALUE, List.of("uniform", "range"));
        }
    }

    /** The outcome of a heartbeat: the group's next state and the answer for the member. */
    public record Step(ConsumerGroupState next, ConsumerGroupHeartbeatResponseData response, String memberId) {
    }

    private final Config config;
    /** Regular expression to the topics it matched, per topics version: a memo, safe to share. */
    private final Map<String, Resolved> regexCache = new ConcurrentHashMap<>();

    private record Resolved(long version, Set<String> topics) {
    }

    public ConsumerGroupLogic(Config config) {
        this.config = config;
    }

    public Config config() {
        return config;
    }

    /**
     * Applies a ConsumerGroupHeartbeat.
     *
     * @param newMemberId the id to give a member that joins without one (version 0 only)
     * @throws ApiException with the error the member gets (nothing changes then)
     */
    public Step heartbeat(ConsumerGroupState state, ConsumerGroupHeartbeatRequestData req, short version,
                          String clientId, String clientHost, GroupTopics topics, String newMemberId) {
        int epoch = req.memberEpoch();
        String memberId = req.memberId();
        validate(req, version);
        if (epoch == 0 && memberId.isEmpty()) {
            memberId = newMemberId; // version 0: the coordinator names the member
        }
        if (epoch == ConsumerGroupMember.LEAVE || epoch == ConsumerGroupMember.LEAVE_STATIC) {
            return leave(state, memberId, req.instanceId(), epoch);
        }
        Map<String, ConsumerGroupMember> members = new LinkedHashMap<>(state.members());
        Map<String, Map<Uuid, Set<Integer>>> target = new HashMap<>(state.target());
        ConsumerGroupMember member = members.get(memberId);
        boolean bump = false;
        if (epoch == 0) {
            if (member == null) {
                ConsumerGroupMember away = state.staticMember(req.instanceId());
                if (away != null) {
                    if (away.memberEpoch() != ConsumerGroupMember.LEAVE_STATIC) {
                        throw new UnreleasedInstanceIdException("Static member " + away.memberId() + " with instance id "
                                + req.instanceId() + " is still in the group; it must leave first.");
                    }
                    // the static member is back under a new id: it takes over its old place and assignment
                    members.remove(away.memberId());
                    Map<Uuid, Set<Integer>> itsTarget = target.remove(away.memberId());
                    if (itsTarget != null) {
                        target.put(memberId, itsTarget);
                    }
                    // back at the epoch it left with (kept as the previous epoch when it left): its assignment,
                    // which it owns no more, comes back to it in full; nobody else moves
                    member = away.withMemberId(memberId, clientId, clientHost).withEpoch(away.previousMemberEpoch());
                } else {
                    if (members.size() >= config.maxSize()) {
                        throw new GroupMaxSizeReachedException("The consumer group has reached its maximum size of "
                                + config.maxSize() + " members.");
                    }
                    member = ConsumerGroupMember.joining(memberId, req.instanceId(), req.rackId(), clientId, clientHost,
                            req.subscribedTopicNames(), emptyToNull(req.subscribedTopicRegex()), req.serverAssignor(),
                            req.rebalanceTimeoutMs());
                    bump = true;
                }
            }
        } else {
            if (member == null) {
                throw new UnknownMemberIdException("Member " + memberId + " is not a member of the group.");
            }
            checkEpoch(member, epoch, req.topicPartitions());
            if (req.instanceId() != null && !req.instanceId().equals(member.instanceId())) {
                throw new FencedInstanceIdException("Member " + memberId + " has instance id " + member.instanceId()
                        + ", not " + req.instanceId() + ".");
            }
        }
        ConsumerGroupMember before = member;
        Map<Uuid, Set<Integer>> owned = owned(req.topicPartitions());
        ConsumerGroupMember updated = member.acknowledging(owned, epoch == 0).withMetadata(
                req.rackId() != null ? req.rackId() : member.rackId(), clientId, clientHost,
                req.subscribedTopicNames() != null ? ConsumerGroupMember.sortedDistinct(req.subscribedTopicNames())
                        : member.subscribedTopicNames(),
                req.subscribedTopicRegex() != null ? emptyToNull(req.subscribedTopicRegex()) : member.subscribedTopicRegex(),
                req.serverAssignor() != null ? req.serverAssignor() : member.serverAssignor(),
                req.rebalanceTimeoutMs() != -1 ? req.rebalanceTimeoutMs() : member.rebalanceTimeoutMs());
        if (!updated.sameSubscription(member)) {
            bump = true;
        }
        members.put(memberId, updated);
        int groupEpoch = state.groupEpoch();
        int assignmentEpoch = state.assignmentEpoch();
        long hash = metadataHash(members.values(), topics);
        if (bump || hash != state.metadataHash()) {
            groupEpoch++;
        }
        if (groupEpoch > assignmentEpoch) {
            target = assign(members, target, topics);
            assignmentEpoch = groupEpoch;
        }
        ConsumerGroupState interim = state.with(groupEpoch, assignmentEpoch, hash, members, target);
        ConsumerGroupMember reconciled = updated.reconcile(assignmentEpoch, interim.targetOf(memberId),
                owned, interim.ownedByOtherThan(memberId), t -> topics.nameOf(t) != null);
        if (epoch == 0) {
            reconciled = reconciled.sentInFull(); // the answer carries the whole assignment to a member that has nothing
        }
        members.put(memberId, reconciled);
        ConsumerGroupState next = reconciled == updated ? interim
                : state.with(groupEpoch, assignmentEpoch, hash, members, target);

        ConsumerGroupHeartbeatResponseData response = new ConsumerGroupHeartbeatResponseData()
                .setMemberId(memberId).setMemberEpoch(reconciled.memberEpoch())
                .setHeartbeatIntervalMs(config.heartbeatIntervalMs());
        boolean fullRequest = req.rebalanceTimeoutMs() != -1
                && (req.subscribedTopicNames() != null || req.subscribedTopicRegex() != null)
                && req.topicPartitions() != null;
        if (epoch == 0 || fullRequest || !reconciled.assigned().equals(before.assigned())) {
            response.setAssignment(assignment(reconciled.assigned()));
        }
        return new Step(next, response, memberId);
    }

    /** The state without {@code memberId} (it left, or its session or rebalance timeout expired). */
    public ConsumerGroupState remove(ConsumerGroupState state, String memberId) {
        if (!state.members().containsKey(memberId)) {
            return state;
        }
        Map<String, ConsumerGroupMember> members = new LinkedHashMap<>(state.members());
        members.remove(memberId);
        Map<String, Map<Uuid, Set<Integer>>> target = new HashMap<>(state.target());
        target.remove(memberId);
        return state.with(state.groupEpoch() + 1, state.assignmentEpoch(), state.metadataHash(), members, target);
    }

    private Step leave(ConsumerGroupState state, String memberId, String instanceId, int epoch) {
        ConsumerGroupMember member = state.members().get(memberId);
        if (member == null && instanceId != null) {
            member = state.staticMember(instanceId);
        }
        if (member == null) {
            throw new UnknownMemberIdException("Member " + memberId + " is not a member of the group.");
        }
        if (instanceId != null && !instanceId.equals(member.instanceId())) {
            throw new FencedInstanceIdException("Member " + member.memberId() + " has instance id " + member.instanceId()
                    + ", not " + instanceId + ".");
        }
        ConsumerGroupState next;
        if (epoch == ConsumerGroupMember.LEAVE_STATIC) {
            // away for a while: the assignment waits for it (no rebalance) until its session expires
            Map<String, ConsumerGroupMember> members = new LinkedHashMap<>(state.members());
            members.put(member.memberId(), member.withEpoch(ConsumerGroupMember.LEAVE_STATIC));
            next = state.with(state.groupEpoch(), state.assignmentEpoch(), state.metadataHash(), members, state.target());
        } else {
            next = remove(state, member.memberId());
        }
        return new Step(next, new ConsumerGroupHeartbeatResponseData().setMemberId(member.memberId()).setMemberEpoch(epoch),
                member.memberId());
    }

    static void validate(ConsumerGroupHeartbeatRequestData req, short version) {
        if (req.groupId() == null || req.groupId().isEmpty()) {
            throw new InvalidRequestException("GroupId can't be empty.");
        }
        if (req.rackId() != null && req.rackId().isEmpty()) {
            throw new InvalidRequestException("RackId can't be empty.");
        }
        if (req.instanceId() != null && req.instanceId().isEmpty()) {
            throw new InvalidRequestException("InstanceId can't be empty.");
        }
        int epoch = req.memberEpoch();
        if (epoch < ConsumerGroupMember.LEAVE_STATIC) {
            throw new InvalidRequestException("MemberEpoch is invalid.");
        }
        if ((req.memberId() == null || req.memberId().isEmpty()) && (epoch != 0 || version >= 1)) {
            throw new InvalidRequestException("MemberId can't be empty.");
        }
        if (epoch == 0) {
            if (req.rebalanceTimeoutMs() == -1) {
                throw new InvalidRequestException("RebalanceTimeoutMs must be provided in first request.");
            }
            if (req.topicPartitions() == null || !req.topicPartitions().isEmpty()) {
                throw new InvalidRequestException("TopicPartitions must be empty when (re-)joining.");
            }
            if (req.subscribedTopicNames() == null && req.subscribedTopicRegex() == null) {
                throw new InvalidRequestException("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.");
            }
        }
        if (epoch == ConsumerGroupMember.LEAVE_STATIC && req.instanceId() == null) {
            throw new InvalidRequestException("InstanceId can't be null when leaving as a static member.");
        }
        if (req.subscribedTopicRegex() != null && !req.subscribedTopicRegex().isEmpty()) {
            try {
                Pattern.compile(req.subscribedTopicRegex());
            } catch (PatternSyntaxException e) {
                throw new InvalidRegularExpression("SubscribedTopicRegex `" + req.subscribedTopicRegex()
                        + "` is not a valid regular expression: " + e.getDescription() + ".");
            }
        }
        if (req.serverAssignor() != null) {
            try {
                ServerAssignor.byName(req.serverAssignor());
            } catch (IllegalArgumentException e) {
                throw new UnsupportedAssignorException("ServerAssignor " + req.serverAssignor() + " is not supported.");
            }
        }
    }

    /**
     * Kafka's rule: a member ahead of the group is fenced; one behind is fenced unless it sent the
     * epoch before its last bump with partitions it still has (the answer with the bump was lost).
     */
    private static void checkEpoch(ConsumerGroupMember member, int received,
                                   List<ConsumerGroupHeartbeatRequestData.TopicPartitions> owned) {
        if (received > member.memberEpoch()) {
            throw new FencedMemberEpochException("The consumer group member has a greater member epoch (" + received
                    + ") than the one known by the group coordinator (" + member.memberEpoch()
                    + "). The member must abandon all its partitions and rejoin.");
        }
        if (received < member.memberEpoch()) {
            Map<Uuid, Set<Integer>> ownedMap = owned(owned);
            if (received != member.previousMemberEpoch() || ownedMap == null
                    || !ConsumerGroupMember.containsAll(member.assigned(), ownedMap)) {
                throw new FencedMemberEpochException("The consumer group member has a smaller member epoch (" + received
                        + ") than the one known by the group coordinator (" + member.memberEpoch()
                        + "). The member must abandon all its partitions and rejoin.");
            }
        }
    }

    /** The topics a member subscribes to: its names and what its regular expression matches now. */
    Set<String> subscribedTopics(ConsumerGroupMember m, GroupTopics topics) {
        if (m.subscribedTopicRegex() == null) {
            return new HashSet<>(m.subscribedTopicNames());
        }
        Set<String> out = new HashSet<>(m.subscribedTopicNames());
        out.addAll(resolve(m.subscribedTopicRegex(), topics));
        return out;
    }

    private Set<String> resolve(String regex, GroupTopics topics) {
        long version = topics.version();
        Resolved r = regexCache.get(regex);
        if (r == null || r.version() != version) {
            Pattern p = Pattern.compile(regex);
            Set<String> matched = new HashSet<>();
            for (String name : topics.names()) {
                if (!name.startsWith("__") && p.matcher(name).matches()) { // internal topics never match, as in Kafka
                    matched.add(name);
                }
            }
            r = new Resolved(version, Set.copyOf(matched));
            regexCache.put(regex, r);
        }
        return r.topics();
    }

    /** A hash of the subscribed topics that exist: their names, ids and partition counts. */
    long metadataHash(Iterable<ConsumerGroupMember> members, GroupTopics topics) {
        TreeSet<String> names = new TreeSet<>();
        for (ConsumerGroupMember m : members) {
            names.addAll(subscribedTopics(m, topics)); // a static member away included: its assignment waits for it
        }
        long h = 1125899906842597L;
        for (String name : names) {
            Uuid id = topics.idOf(name);
            if (id == null) {
                continue;
            }
            h = 31 * h + name.hashCode();
            h = 31 * h + id.getMostSignificantBits();
            h = 31 * h + id.getLeastSignificantBits();
            h = 31 * h + topics.partitions(id);
        }
        return h;
    }

    /** The new target assignment of every member, by the assignor the members prefer. */
    private Map<String, Map<Uuid, Set<Integer>>> assign(Map<String, ConsumerGroupMember> members,
                                                         Map<String, Map<Uuid, Set<Integer>>> current,
                                                         GroupTopics topics) {
        Map<Uuid, TopicSpec> topicSpecs = new HashMap<>();
        List<MemberSpec> specs = new ArrayList<>(members.size());
        for (ConsumerGroupMember m : members.values()) {
            Set<Uuid> ids = new HashSet<>();
            for (String name : subscribedTopics(m, topics)) {
                Uuid id = topics.idOf(name);
                if (id != null) {
                    ids.add(id);
                    topicSpecs.computeIfAbsent(id, k -> new TopicSpec(id, name, topics.partitions(id)));
                }
            }
            specs.add(new MemberSpec(m.memberId(), m.instanceId(), m.rackId(), ids,
                    current.getOrDefault(m.memberId(), Map.of())));
        }
        Map<String, Map<Uuid, Set<Integer>>> result = ServerAssignor.byName(preferredAssignor(members.values()))
                .assign(new AssignmentSpec(specs, topicSpecs));
        Map<String, Map<Uuid, Set<Integer>>> frozen = new HashMap<>();
        for (String memberId : members.keySet()) {
            frozen.put(memberId, ConsumerGroupMember.freeze(result.getOrDefault(memberId, Map.of())));
        }
        return frozen;
    }

    /** The assignor most members ask for (ties: the first configured), else the first configured. */
    String preferredAssignor(Iterable<ConsumerGroupMember> members) {
        Map<String, Integer> votes = new HashMap<>();
        for (ConsumerGroupMember m : members) {
            if (m.serverAssignor() != null) {
                votes.merge(m.serverAssignor(), 1, Integer::sum);
            }
        }
        String best = config.assignors().get(0);
        int bestVotes = 0;
        for (String name : config.assignors()) {
            int v = votes.getOrDefault(name, 0);
            if (v > bestVotes) {
                best = name;
                bestVotes = v;
            }
        }
        for (Map.Entry<String, Integer> e : votes.entrySet()) { // asked for, valid, but not in the configured list
            if (e.getValue() > bestVotes) {
                best = e.getKey();
                bestVotes = e.getValue();
            }
        }
        return best;
    }

    static Map<Uuid, Set<Integer>> owned(List<ConsumerGroupHeartbeatRequestData.TopicPartitions> owned) {
        if (owned == null) {
            return null;
        }
        Map<Uuid, Set<Integer>> out = new HashMap<>();
        for (ConsumerGroupHeartbeatRequestData.TopicPartitions tp : owned) {
            out.computeIfAbsent(tp.topicId(), k -> new HashSet<>()).addAll(tp.partitions());
        }
        return out;
    }

    static ConsumerGroupHeartbeatResponseData.Assignment assignment(Map<Uuid, Set<Integer>> assigned) {
        List<ConsumerGroupHeartbeatResponseData.TopicPartitions> tps = new ArrayList<>();
        assigned.forEach((t, ps) -> tps.add(new ConsumerGroupHeartbeatResponseData.TopicPartitions()
                .setTopicId(t).setPartitions(ps.stream().sorted().toList())));
        return new ConsumerGroupHeartbeatResponseData.Assignment().setTopicPartitions(tps);
    }

    private static String emptyToNull(String s) {
        return s == null || s.isEmpty() ? null : s;
    }
}
