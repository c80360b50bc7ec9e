package dev.varve.broker.replication;

import dev.varve.metadata.BrokerRegistration;
import dev.varve.metadata.MetadataImage;
import dev.varve.metadata.PartitionState;
import dev.varve.metadata.TopicImage;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * One metadata delta (the change from one image to the next, which may span many log entries) as it
 * concerns the replicas of one broker: the partitions assigned here whose state changed, the held
 * partitions no longer assigned here, and the brokers that may not join an ISR. The broker's replica
 * manager ({@code ClusterReplicaManager.onImage}) and the replication simulation both walk a delta with
 * it, so the simulation applies an image the way the broker does: every changed partition in one pass.
 *
 * <p>Cost: only topics whose {@link TopicImage} changed are looked at (the image shares unchanged ones,
 * so the check is an identity comparison), and in them only partitions whose {@link PartitionState}
 * object changed. A delta that moves one leadership of a 10,000-partition topic walks that topic's
 * partition list once and returns one change; a delta that touches no topic walks nothing.
 *
 * <p>With no previous image ({@code previous.offset() < 0}, the first image a broker applies) every
 * held partition is also checked against {@code next}: a replica held from before (e.g. opened at start)
 * that the metadata no longer assigns here is gone.
 *
 * <p>Pure and immutable: nothing here touches a log or a fetcher; the caller acts on the answer.
 */
public final class ReplicaDelta {
    /** One partition assigned here whose state changed in the delta. */
    public record Change(TopicPartition tp, Uuid topicId, PartitionState state) {
    }

    /** The partitions the caller holds now, as the delta walk asks about them. */
    public interface Held {
        /** The topic id of the replica of {@code tp} held here, or null when none is held. */
        Uuid topicId(TopicPartition tp);

        /** Every partition held here (asked only for the first image). */
        Collection<TopicPartition> partitions();
    }

    private final Map<TopicPartition, Change> changes;
    private final List<TopicPartition> gone;
    private final Set<Integer> ineligible;

    private ReplicaDelta(Map<TopicPartition, Change> changes, List<TopicPartition> gone, Set<Integer> ineligible) {
        this.changes = Collections.unmodifiableMap(changes);
        this.gone = Collections.unmodifiableList(gone);
        this.ineligible = Collections.unmodifiableSet(ineligible);
    }

    /**
     * Walks the delta from {@code previous} to {@code next} for broker {@code localId}.
     *
     * @param held the partitions held here before the delta is applied
     */
    public static ReplicaDelta between(MetadataImage previous, MetadataImage next, int localId, Held held) {
        Map<TopicPartition, Change> changes = new LinkedHashMap<>();
        List<TopicPartition> gone = new ArrayList<>();
        for (TopicImage after : next.topicsById().values()) {
            TopicImage before = previous.topicsById().get(after.id());
            if (before != after) {
                walkTopic(before, after, localId, held, changes, gone);
            }
        }
        for (TopicImage before : previous.topicsById().values()) {
            if (!next.topicsById().containsKey(before.id())) {
                walkTopic(before, null, localId, held, changes, gone);
            }
        }
        if (previous.offset() < 0) {
            for (TopicPartition tp : held.partitions()) {
                TopicImage t = next.topicsById().get(held.topicId(tp));
                PartitionState state = t == null ? null : t.partition(tp.partition());
                if (state == null || !state.replicas().contains(localId)) {
                    gone.add(tp);
                }
            }
        }
        return new ReplicaDelta(changes, gone, ineligibleBrokers(next));
    }

    /**
     * One topic of the walk; {@code before} or {@code after} is null when the topic is new or deleted.
     * Assigned here now: a change. Assigned here before but not now, and held for this very topic (a
     * re-created topic of the same name holds another id): gone.
     */
    private static void walkTopic(TopicImage before, TopicImage after, int localId, Held held, Map<TopicPartition, Change> changes,
                                  List<TopicPartition> gone) {
        TopicImage named = after != null ? after : before;
        int count = Math.max(before == null ? 0 : before.partitionCount(), after == null ? 0 : after.partitionCount());
        for (int i = 0; i < count; i++) {
            PartitionState was = before == null ? null : before.partition(i);
            PartitionState now = after == null ? null : after.partition(i);
            if (now == was) {
                continue;
            }
            TopicPartition tp = new TopicPartition(named.name(), i);
            if (now != null && now.replicas().contains(localId)) {
                changes.put(tp, new Change(tp, after.id(), now));
            } else if (was != null && was.replicas().contains(localId) && before.id().equals(held.topicId(tp))) {
                gone.add(tp);
            }
        }
    }

    /** The brokers of {@code image} that may not join an ISR (fenced or shutting down), in id order. */
    public static Set<Integer> ineligibleBrokers(MetadataImage image) {
        Set<Integer> ineligible = new TreeSet<>();
        for (BrokerRegistration b : image.brokers().values()) {
            if (!b.isEligible()) {
                ineligible.add(b.id());
            }
        }
        return ineligible;
    }

    /** Partitions assigned here whose state changed, in walk order (topic by topic, partition by partition). */
    public Map<TopicPartition, Change> changes() {
        return changes;
    }

    /** Held partitions no longer assigned here (topic deleted, replica moved away, topic re-created): stop them first. */
    public List<TopicPartition> gone() {
        return gone;
    }

    /** The brokers of the next image that may not join an ISR. */
    public Set<Integer> ineligible() {
        return ineligible;
    }

    @Override
    public String toString() {
        return "ReplicaDelta(" + changes.size() + " changed, " + gone.size() + " gone, ineligible " + ineligible + ")";
    }
}
