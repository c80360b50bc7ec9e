package dev.varve.broker.group;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.FencedMemberEpochException;
import org.apache.kafka.common.errors.GroupMaxSizeReachedException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.errors.UnknownMemberIdException;
import org.apache.kafka.common.message.ShareGroupHeartbeatRequestData;
import org.apache.kafka.common.message.ShareGroupHeartbeatResponseData;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * The KIP-932 share group protocol as pure functions (as {@link ConsumerGroupLogic} is for consumer
 * groups): a ShareGroupHeartbeat and the group's state in, the next state and the answer out.
 *
 * <p>Members join with epoch 0 and a subscription, leave with epoch -1, and otherwise heartbeat with
 * their epoch (FENCED_MEMBER_EPOCH when it is not theirs; UNKNOWN_MEMBER_ID when they are not members).
 * The group epoch grows when members join or leave, a subscription changes or the subscribed topics'
 * partitions change; the target assignment is then recomputed by the simple assignor, and every member
 * gets its target (and the target's epoch) at its next heartbeat: share partitions may be consumed by
 * several members at once, so nothing has to be revoked first.
 */
public final class ShareGroupLogic {
    /** Settings under Kafka's broker keys ({@code group.share.*}). */
    public record Config(int sessionTimeoutMs, int heartbeatIntervalMs, int maxSize) {
        public static Config defaults() {
            return new Config(45_000, 5_000, 200);
        }
    }

    /** The next state and the answer for the member. */
    public record Step(ShareGroupState next, ShareGroupHeartbeatResponseData response, String memberId) {
    }

    public static final String ASSIGNOR = "simple";

    private final Config config;

    public ShareGroupLogic(Config config) {
        this.config = config;
    }

    public Config config() {
        return config;
    }

    /** @throws org.apache.kafka.common.errors.ApiException the member's error (nothing changes then) */
    public Step heartbeat(ShareGroupState state, ShareGroupHeartbeatRequestData req, String clientId, String clientHost,
                          GroupTopics topics) {
        validate(req);
        String memberId = req.memberId();
        int epoch = req.memberEpoch();
        ShareGroupState.Member member = state.members().get(memberId);
        if (epoch == -1) {
            if (member == null) {
                throw new UnknownMemberIdException("Member " + memberId + " is not a member of the share group.");
            }
            return new Step(remove(state, memberId), new ShareGroupHeartbeatResponseData().setMemberId(memberId)
                    .setMemberEpoch(-1), memberId);
        }
        Map<String, ShareGroupState.Member> members = new LinkedHashMap<>(state.members());
        boolean bump = false;
        if (epoch == 0) {
            if (member == null) {
                if (members.size() >= config.maxSize()) {
                    throw new GroupMaxSizeReachedException("The share group has reached its maximum size of "
                            + config.maxSize() + " members.");
                }
                member = new ShareGroupState.Member(memberId, req.rackId(), clientId, clientHost,
                        sorted(req.subscribedTopicNames()), 0, 0, Map.of());
                bump = true;
            }
        } else {
            if (member == null) {
                throw new UnknownMemberIdException("Member " + memberId + " is not a member of the share group.");
            }
            if (epoch != member.memberEpoch() && epoch != member.previousMemberEpoch()) {
                throw new FencedMemberEpochException("The share group member has epoch " + epoch
                        + "; the group coordinator knows it at " + member.memberEpoch()
                        + ". The member must rejoin.");
            }
        }
        List<String> topicsNow = req.subscribedTopicNames() != null ? sorted(req.subscribedTopicNames())
                : member.subscribedTopicNames();
        if (!topicsNow.equals(member.subscribedTopicNames())) {
            bump = true;
        }
        ShareGroupState.Member updated = new ShareGroupState.Member(memberId,
                req.rackId() != null ? req.rackId() : member.rackId(), clientId, clientHost, topicsNow,
                member.memberEpoch(), member.previousMemberEpoch(), member.assigned());
        members.put(memberId, updated);
        int groupEpoch = state.groupEpoch();
        int assignmentEpoch = state.assignmentEpoch();
        long hash = metadataHash(members.values(), topics);
        if (bump || hash != state.metadataHash()) {
            groupEpoch++;
        }
        Map<String, Map<Uuid, Set<Integer>>> target = state.target();
        if (groupEpoch > assignmentEpoch) {
            target = assign(members, topics);
            assignmentEpoch = groupEpoch;
        }
        ShareGroupState.Member given = updated;
        if (updated.memberEpoch() != assignmentEpoch) {
            given = new ShareGroupState.Member(memberId, updated.rackId(), clientId, clientHost, topicsNow,
                    assignmentEpoch, updated.memberEpoch(), target.getOrDefault(memberId, Map.of()));
            members.put(memberId, given);
        }
        ShareGroupState next = new ShareGroupState(groupEpoch, assignmentEpoch, hash, members, target);
        ShareGroupHeartbeatResponseData response = new ShareGroupHeartbeatResponseData().setMemberId(memberId)
                .setMemberEpoch(given.memberEpoch()).setHeartbeatIntervalMs(config.heartbeatIntervalMs());
        if (epoch == 0 || !given.assigned().equals(member.assigned()) || epoch != given.memberEpoch()) {
            List<ShareGroupHeartbeatResponseData.TopicPartitions> tps = new ArrayList<>();
            given.assigned().forEach((t, ps) -> tps.add(new ShareGroupHeartbeatResponseData.TopicPartitions()
                    .setTopicId(t).setPartitions(ps.stream().sorted().toList())));
            response.setAssignment(new ShareGroupHeartbeatResponseData.Assignment().setTopicPartitions(tps));
        }
        return new Step(next, response, memberId);
    }

    /** The state without {@code memberId} (it left, or its session expired). */
    public ShareGroupState remove(ShareGroupState state, String memberId) {
        if (!state.members().containsKey(memberId)) {
            return state;
        }
        Map<String, ShareGroupState.Member> members = new LinkedHashMap<>(state.members());
        members.remove(memberId);
        Map<String, Map<Uuid, Set<Integer>>> target = new HashMap<>(state.target());
        target.remove(memberId);
        return new ShareGroupState(state.groupEpoch() + 1, state.assignmentEpoch(), state.metadataHash(), members, target);
    }

    static void validate(ShareGroupHeartbeatRequestData req) {
        if (req.groupId() == null || req.groupId().isEmpty()) {
            throw new InvalidRequestException("GroupId can't be empty.");
        }
        if (req.memberId() == null || req.memberId().isEmpty()) {
            throw new InvalidRequestException("MemberId can't be empty.");
        }
        if (req.rackId() != null && req.rackId().isEmpty()) {
            throw new InvalidRequestException("RackId can't be empty.");
        }
        if (req.memberEpoch() < -1) {
            throw new InvalidRequestException("MemberEpoch is invalid.");
        }
        if (req.memberEpoch() == 0 && (req.subscribedTopicNames() == null || req.subscribedTopicNames().isEmpty())) {
            throw new InvalidRequestException("SubscribedTopicNames must be set in first request.");
        }
    }

    private static List<String> sorted(List<String> topics) {
        return topics == null ? List.of() : topics.stream().distinct().sorted().toList();
    }

    long metadataHash(Iterable<ShareGroupState.Member> members, GroupTopics topics) {
        TreeSet<String> names = new TreeSet<>();
        members.forEach(m -> names.addAll(m.subscribedTopicNames()));
        long h = 1125899906842597L;
        for (String name : names) {
            Uuid id = topics.idOf(name);
            if (id != null) {
                h = 31 * (31 * (31 * (31 * h + name.hashCode()) + id.getMostSignificantBits()) + id.getLeastSignificantBits())
                        + topics.partitions(id);
            }
        }
        return h;
    }

    /**
     * The simple assignor: per topic, its subscribers sorted by member id share its partitions round-robin
     * (partition p to subscriber p mod n) when there are at least as many partitions as subscribers;
     * with more subscribers than partitions, subscriber i gets partition i mod p, so every subscriber gets
     * a partition and each partition is shared by n/p subscribers or one more.
     */
    static Map<String, Map<Uuid, Set<Integer>>> assign(Map<String, ShareGroupState.Member> members, GroupTopics topics) {
        Map<String, Map<Uuid, Set<Integer>>> out = new HashMap<>();
        Map<String, List<String>> subscribers = new HashMap<>();
        for (ShareGroupState.Member m : members.values()) {
            out.put(m.memberId(), new HashMap<>());
            for (String t : m.subscribedTopicNames()) {
                subscribers.computeIfAbsent(t, k -> new ArrayList<>()).add(m.memberId());
            }
        }
        subscribers.forEach((topic, ids) -> {
            Uuid id = topics.idOf(topic);
            int partitions = id == null ? 0 : topics.partitions(id);
            if (partitions == 0) {
                return;
            }
            List<String> sortedIds = ids.stream().sorted().toList();
            int n = sortedIds.size();
            if (n <= partitions) {
                for (int p = 0; p < partitions; p++) {
                    out.get(sortedIds.get(p % n)).computeIfAbsent(id, k -> new HashSet<>()).add(p);
                }
            } else {
                for (int i = 0; i < n; i++) {
                    out.get(sortedIds.get(i)).computeIfAbsent(id, k -> new HashSet<>()).add(i % partitions);
                }
            }
        });
        Map<String, Map<Uuid, Set<Integer>>> frozen = new HashMap<>();
        out.forEach((m, a) -> frozen.put(m, ConsumerGroupMember.freeze(a)));
        return frozen;
    }
}
