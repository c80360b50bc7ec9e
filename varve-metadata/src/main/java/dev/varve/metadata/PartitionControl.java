package dev.varve.metadata;

import dev.varve.metadata.MetadataRecord.PartitionChange;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.ApiError;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;

/**
 * Partition leadership and ISR decisions: what happens to partitions when brokers leave or return,
 * AlterPartition from leaders, and leader elections on request. Pure: every method takes the image it
 * decides on and returns records; nothing is kept between calls.
 *
 * <p>Scans are over all partitions of the image (O(partitions) per broker event), which is cheap next
 * to a Raft commit for clusters of tens of thousands of partitions.
 *
 * <p>Thread-safe (stateless apart from its immutable config).
 */
public final class PartitionControl {
    /** AlterPartition from a partition leader: the ISR it wants, based on the state it last saw. */
    public record AlterPartitionRequest(int brokerId, long brokerEpoch, Uuid topicId, int partition, int leaderEpoch,
                                        int partitionEpoch, List<Integer> newIsr) {
        public AlterPartitionRequest {
            newIsr = List.copyOf(newIsr);
        }
    }

    /**
     * The answer: on success, the partition's state after the change (or unchanged when nothing changed).
     * NEW_LEADER_ELECTED comes with records and the state after them: the change completed a reassignment
     * that moved leadership off the sender, which must learn the new leader from the metadata (Kafka's rule).
     */
    public record AlterPartitionReply(Errors error, PartitionState state) {
    }

    private final ControllerConfig config;

    public PartitionControl(ControllerConfig config) {
        this.config = config;
    }

    /** The topic's effective {@code min.insync.replicas}: topic override, cluster default, controller default. */
    public int minIsr(MetadataImage image, String topic) {
        String v = image.effectiveTopicConfig(topic, TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG);
        if (v != null) {
            try {
                return Math.max(1, Integer.parseInt(v.trim()));
            } catch (NumberFormatException e) {
                // validated when set; fall through to the default
            }
        }
        return config.defaultMinInsyncReplicas();
    }

    /** The topic's effective {@code unclean.leader.election.enable}. */
    public boolean uncleanEnabled(MetadataImage image, String topic) {
        String v = image.effectiveTopicConfig(topic, TopicConfig.UNCLEAN_LEADER_ELECTION_ENABLE_CONFIG);
        return v == null ? config.defaultUncleanLeaderElectionEnable() : Boolean.parseBoolean(v.trim());
    }

    PartitionUpdate update(MetadataImage image, TopicImage topic, PartitionState p) {
        return new PartitionUpdate(topic.id(), p, image::isEligible, uncleanEnabled(image, topic.name()), minIsr(image, topic.name()));
    }

    /**
     * Brokers that are no longer eligible in {@code projected} (fenced, shutting down, or re-registered)
     * leave the ISRs they are in (never emptying one) and their leaderships move to another candidate
     * ({@link LeaderElection}). Brokers in {@code uncleanRestart} instead leave ISRs and ELRs entirely
     * (the last-replica-standing guard).
     */
    public List<MetadataRecord> brokersLeft(MetadataImage projected, Set<Integer> gone, Set<Integer> uncleanRestart) {
        List<MetadataRecord> out = new ArrayList<>();
        for (TopicImage t : projected.topicsById().values()) {
            for (PartitionState p : t.partitions()) {
                if (!touches(p, gone) && !touches(p, uncleanRestart)) {
                    continue;
                }
                PartitionUpdate u = update(projected, t, p);
                for (int b : uncleanRestart) {
                    u.uncleanRestart(b);
                }
                for (int b : gone) {
                    u.removeFromIsr(b);
                }
                addIfChanged(out, u.electLeader().build());
            }
        }
        return out;
    }

    /** Elects leaders for leaderless partitions of the topics matching {@code topics} that now have a candidate. */
    public List<MetadataRecord> electLeaderless(MetadataImage projected, Predicate<TopicImage> topics) {
        List<MetadataRecord> out = new ArrayList<>();
        for (TopicImage t : projected.topicsById().values()) {
            if (!topics.test(t)) {
                continue;
            }
            for (PartitionState p : t.partitions()) {
                if (!p.hasLeader()) {
                    addIfChanged(out, update(projected, t, p).electLeader().build());
                }
            }
        }
        return out;
    }

    /** How many partitions {@code brokerId} leads in {@code image}. */
    public static int leadershipCount(MetadataImage image, int brokerId) {
        int n = 0;
        for (TopicImage t : image.topicsById().values()) {
            for (PartitionState p : t.partitions()) {
                if (p.leader() == brokerId) {
                    n++;
                }
            }
        }
        return n;
    }

    /**
     * AlterPartition: a leader asks for a new ISR. Checked in Kafka's order: broker epoch
     * (STALE_BROKER_EPOCH), topic and partition (UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION), sender
     * is the leader (NOT_LEADER_OR_FOLLOWER), leader epoch (FENCED_LEADER_EPOCH), partition epoch
     * (INVALID_UPDATE_VERSION), shape of the ISR (INVALID_REQUEST: non-empty subset of the replicas,
     * containing the leader, no duplicates), and every member added must be an eligible broker
     * (INELIGIBLE_REPLICA). On success the partition epoch is bumped; the reply carries the new state.
     * Adding replicas of a reassignment join the ISR like any replica; the change that brings the last of
     * them in completes the reassignment ({@link PartitionUpdate}), possibly with NEW_LEADER_ELECTED.
     */
    public ControllerResult<AlterPartitionReply> alterPartition(MetadataImage image, AlterPartitionRequest req) {
        BrokerRegistration sender = image.broker(req.brokerId()).orElse(null);
        if (sender == null || sender.brokerEpoch() != req.brokerEpoch()) {
            return fail(Errors.STALE_BROKER_EPOCH);
        }
        TopicImage topic = image.topic(req.topicId()).orElse(null);
        if (topic == null) {
            return fail(Errors.UNKNOWN_TOPIC_ID);
        }
        PartitionState p = topic.partition(req.partition());
        if (p == null) {
            return fail(Errors.UNKNOWN_TOPIC_OR_PARTITION);
        }
        if (p.leader() != req.brokerId()) {
            return req.leaderEpoch() < p.leaderEpoch() ? fail(Errors.FENCED_LEADER_EPOCH) : fail(Errors.NOT_LEADER_OR_FOLLOWER);
        }
        if (req.leaderEpoch() != p.leaderEpoch()) {
            return fail(Errors.FENCED_LEADER_EPOCH);
        }
        if (req.partitionEpoch() != p.partitionEpoch()) {
            return fail(Errors.INVALID_UPDATE_VERSION);
        }
        List<Integer> newIsr = req.newIsr();
        if (newIsr.isEmpty() || !newIsr.contains(p.leader()) || new HashSet<>(newIsr).size() != newIsr.size()
                || !p.replicas().containsAll(newIsr)) {
            return fail(Errors.INVALID_REQUEST);
        }
        for (int r : newIsr) {
            if (!p.isr().contains(r) && !image.isEligible(r)) {
                return fail(Errors.INELIGIBLE_REPLICA);
            }
        }
        PartitionChange change = update(image, topic, p).setIsr(newIsr).build();
        if (change == null) {
            return ControllerResult.of(new AlterPartitionReply(Errors.NONE, p));
        }
        PartitionState after = p.apply(change);
        Errors error = after.leader() == req.brokerId() ? Errors.NONE : Errors.NEW_LEADER_ELECTED;
        return new ControllerResult<>(List.of(change), new AlterPartitionReply(error, after));
    }

    /**
     * ElectLeaders. PREFERRED moves leadership to the first replica when it is an eligible ISR member
     * (ELECTION_NOT_NEEDED when it already leads, PREFERRED_LEADER_NOT_AVAILABLE otherwise). UNCLEAN
     * elects a leader for a leaderless partition as if {@code unclean.leader.election.enable} were on
     * (ELECTION_NOT_NEEDED when it has a leader, ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica is eligible).
     *
     * @param partitions the partitions, or null for every partition; with null only the partitions
     *                   actually elected are reported
     */
    public ControllerResult<Map<TopicPartition, ApiError>> electLeaders(MetadataImage image, ElectionType type,
                                                                         Collection<TopicPartition> partitions) {
        List<MetadataRecord> records = new ArrayList<>();
        Map<TopicPartition, ApiError> results = new LinkedHashMap<>();
        if (partitions == null) {
            for (TopicImage t : image.topicsById().values()) {
                for (PartitionState p : t.partitions()) {
                    ApiError e = electOne(image, type, t, p, records);
                    if (e.isSuccess()) {
                        results.put(new TopicPartition(t.name(), p.partition()), e);
                    }
                }
            }
        } else {
            for (TopicPartition tp : partitions) {
                TopicImage t = image.topic(tp.topic()).orElse(null);
                PartitionState p = t == null ? null : t.partition(tp.partition());
                if (p == null) {
                    results.put(tp, new ApiError(Errors.UNKNOWN_TOPIC_OR_PARTITION, null));
                } else if (!results.containsKey(tp)) {
                    results.put(tp, electOne(image, type, t, p, records));
                }
            }
        }
        return new ControllerResult<>(records, results);
    }

    private ApiError electOne(MetadataImage image, ElectionType type, TopicImage t, PartitionState p, List<MetadataRecord> out) {
        if (type == ElectionType.PREFERRED) {
            int preferred = p.preferredLeader();
            if (p.leader() == preferred) {
                return new ApiError(Errors.ELECTION_NOT_NEEDED, null);
            }
            if (!p.isr().contains(preferred) || !image.isEligible(preferred)) {
                return new ApiError(Errors.PREFERRED_LEADER_NOT_AVAILABLE,
                        "preferred replica " + preferred + " is not an eligible member of the ISR " + p.isr());
            }
            out.add(update(image, t, p).electPreferred().build());
            return ApiError.NONE;
        }
        if (p.hasLeader() && image.isEligible(p.leader())) {
            return new ApiError(Errors.ELECTION_NOT_NEEDED, null);
        }
        PartitionUpdate u = new PartitionUpdate(t.id(), p, image::isEligible, true, minIsr(image, t.name())).electLeader();
        if (u.leader() == MetadataRecord.NO_LEADER) {
            return new ApiError(Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE, "no replica of " + t.name() + "-" + p.partition() + " is eligible");
        }
        addIfChanged(out, u.build());
        return ApiError.NONE;
    }

    private static boolean touches(PartitionState p, Set<Integer> brokers) {
        if (brokers.isEmpty()) {
            return false;
        }
        if (brokers.contains(p.leader())) {
            return true;
        }
        for (int b : brokers) {
            if (p.isr().contains(b) || p.elr().contains(b)) {
                return true;
            }
        }
        return false;
    }

    private static void addIfChanged(List<MetadataRecord> out, PartitionChange change) {
        if (change != null) {
            out.add(change);
        }
    }

    private static ControllerResult<AlterPartitionReply> fail(Errors error) {
        return ControllerResult.of(new AlterPartitionReply(error, null));
    }
}
