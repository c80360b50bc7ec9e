package dev.varve.metadata;

import dev.varve.metadata.MetadataRecord.PartitionChange;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.errors.InvalidReplicaAssignmentException;
import org.apache.kafka.common.errors.InvalidReplicationFactorException;
import org.apache.kafka.common.errors.NoReassignmentInProgressException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.requests.ApiError;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Partition reassignment (KIP-455): AlterPartitionReassignments starts or cancels reassignments,
 * ListPartitionReassignments reports the ongoing ones. Pure: decides on the image it is given.
 *
 * <p>A reassignment moves a partition to a target replica list in three steps, as Kafka does:
 * <ol>
 *   <li><b>start</b> (here): replicas become the target followed by the old replicas it drops
 *       ({@code removingReplicas}); {@code addingReplicas} are the new ones; ISR, leader and leader epoch
 *       stay. New replicas start fetching from the leader.</li>
 *   <li><b>catch up</b>: the leader adds caught-up adding replicas to the ISR with AlterPartition.</li>
 *   <li><b>complete</b>, in the same change as the AlterPartition that brings the last adding replica into
 *       the ISR (or at once, when nothing is added): see {@link PartitionUpdate}.</li>
 * </ol>
 * A new reassignment of a partition that is being reassigned replaces the ongoing one (replicas still
 * being added and kept by the new target stay "adding"). A cancel reverts to the replicas before the
 * reassignment (in their current order, so the preferred leader may differ from the original one, as in
 * Kafka).
 *
 * <p>Thread-safe (stateless apart from the {@link PartitionControl} it builds changes with).
 */
public final class ReassignmentControl {
    /** One partition of an AlterPartitionReassignments request: the target replicas, or null to cancel. */
    public record Reassignment(TopicPartition partition, List<Integer> targetReplicas) {
        public Reassignment {
            targetReplicas = targetReplicas == null ? null : List.copyOf(targetReplicas);
        }
    }

    private final PartitionControl partitions;

    public ReassignmentControl(PartitionControl partitions) {
        this.partitions = partitions;
    }

    /**
     * AlterPartitionReassignments. Each entry is decided on the image with the changes of the entries before
     * it applied; one result per entry, in order. Errors, in Kafka's order: UNKNOWN_TOPIC_OR_PARTITION;
     * for a cancel NO_REASSIGNMENT_IN_PROGRESS, or INVALID_REPLICA_ASSIGNMENT when no original replica is in
     * the ISR and {@code unclean.leader.election.enable} is off; for a target INVALID_REPLICA_ASSIGNMENT
     * (empty, a broker twice, a broker not registered: fenced brokers are accepted), then
     * INVALID_REPLICATION_FACTOR when {@code allowReplicationFactorChange} is false (KIP-860) and the target
     * size differs from the partition's current target size.
     */
    public ControllerResult<List<ApiError>> alterPartitionReassignments(MetadataImage image, List<Reassignment> reassignments,
                                                                        boolean allowReplicationFactorChange) {
        List<MetadataRecord> records = new ArrayList<>();
        List<ApiError> results = new ArrayList<>(reassignments.size());
        MetadataImage current = image;
        for (Reassignment r : reassignments) {
            try {
                PartitionChange change = decide(current, r, allowReplicationFactorChange);
                if (change != null) {
                    records.add(change);
                    current = current.apply(current.offset(), List.of(change));
                }
                results.add(ApiError.NONE);
            } catch (ApiException e) {
                results.add(ApiError.fromThrowable(e));
            }
        }
        return new ControllerResult<>(records, results);
    }

    private PartitionChange decide(MetadataImage image, Reassignment r, boolean allowReplicationFactorChange) {
        TopicPartition tp = r.partition();
        TopicImage topic = image.topic(tp.topic()).orElseThrow(() ->
                new UnknownTopicOrPartitionException("Unable to find a topic named " + tp.topic() + "."));
        PartitionState p = topic.partition(tp.partition());
        if (p == null) {
            throw new UnknownTopicOrPartitionException("Unable to find partition " + tp + ".");
        }
        PartitionUpdate update = partitions.update(image, topic, p);
        List<Integer> target = r.targetReplicas();
        if (target == null) {
            if (!p.isReassigning()) {
                throw new NoReassignmentInProgressException("No reassignment of " + tp + " is in progress.");
            }
            boolean originalInIsr = p.isr().stream().anyMatch(b -> !p.addingReplicas().contains(b));
            if (!originalInIsr && !partitions.uncleanEnabled(image, topic.name())) {
                throw new InvalidReplicaAssignmentException("Unable to revert the reassignment of " + tp
                        + " because it would require an unclean leader election.");
            }
            return update.cancelReassignment().build();
        }
        checkTarget(image, target);
        if (!allowReplicationFactorChange && target.size() != p.targetReplicas().size()) {
            throw new InvalidReplicationFactorException("The replication factor of " + tp + " would change from "
                    + p.targetReplicas().size() + " to " + target.size() + ".");
        }
        return update.startReassignment(target).build();
    }

    /** The target's replicas, checked as a manual assignment with no replication factor to match (as Kafka does). */
    private static void checkTarget(MetadataImage image, List<Integer> target) {
        ManualAssignments.checkReplicas(target, java.util.OptionalInt.empty(), ManualAssignments.Brokers.of(image));
    }

    /**
     * ListPartitionReassignments: the partitions with a reassignment in progress among {@code wanted} (null:
     * all partitions, by topic name then index), in that order. Unknown topics and partitions are skipped,
     * as Kafka does.
     */
    public Map<TopicPartition, PartitionState> listPartitionReassignments(MetadataImage image, Collection<TopicPartition> wanted) {
        Map<TopicPartition, PartitionState> out = new LinkedHashMap<>();
        if (wanted == null) {
            for (TopicImage t : new TreeMap<>(image.topicsByName()).values()) {
                for (PartitionState p : t.partitions()) {
                    if (p.isReassigning()) {
                        out.put(new TopicPartition(t.name(), p.partition()), p);
                    }
                }
            }
            return out;
        }
        for (TopicPartition tp : wanted) {
            PartitionState p = image.topic(tp.topic()).map(t -> t.partition(tp.partition())).orElse(null);
            if (p != null && p.isReassigning()) {
                out.put(tp, p);
            }
        }
        return out;
    }
}
