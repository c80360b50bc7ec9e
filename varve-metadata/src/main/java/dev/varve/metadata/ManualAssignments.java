package dev.varve.metadata;

import org.apache.kafka.common.errors.InvalidReplicaAssignmentException;
import org.apache.kafka.common.errors.InvalidRequestException;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalInt;

/**
 * Manual replica assignments (CreateTopics {@code assignments}, CreatePartitions {@code assignments},
 * AlterPartitionReassignments targets), checked as Kafka 4.4's controller checks them: the same rules,
 * in the same order, with the same error codes and messages (clients and {@code kafka-topics.sh} print
 * the message as it comes). Pure: the brokers are seen through {@link Brokers}, so the cluster's
 * controller (the metadata image) and a single node (only itself) share the rules.
 *
 * <p>The rules, in order:
 * <ol>
 *   <li>CreateTopics: {@code replicationFactor}, then {@code numPartitions}, must be -1 (INVALID_REQUEST).</li>
 *   <li>CreatePartitions: exactly one assignment per new partition (INVALID_REPLICA_ASSIGNMENT).</li>
 *   <li>Each partition, in request order: a partition index given twice; an empty replica list; then,
 *       scanning the broker ids in ascending order, a broker that is not registered or one named twice
 *       (whichever the scan meets first); then a replica count different from the previous partitions'
 *       (CreatePartitions: from the topic's); then all replicas fenced or shutting down. All
 *       INVALID_REPLICA_ASSIGNMENT. A fenced broker is a valid replica as long as one replica is active.</li>
 *   <li>CreateTopics: partition indexes 0..n-1, each once (INVALID_REPLICA_ASSIGNMENT).</li>
 * </ol>
 * A new partition's ISR is its active replicas in assignment order; the first of them leads (the first
 * replica, the preferred leader, unless it is fenced).
 */
public final class ManualAssignments {
    private ManualAssignments() {
    }

    /** What a manual assignment needs to know of the brokers. */
    public interface Brokers {
        /** Registered (fenced or not): may be named as a replica. */
        boolean isRegistered(int brokerId);

        /** Unfenced and not shutting down: may lead and be in the ISR of a new partition. */
        boolean isActive(int brokerId);

        /** The brokers of a metadata image. */
        static Brokers of(MetadataImage image) {
            return new Brokers() {
                @Override
                public boolean isRegistered(int brokerId) {
                    return image.broker(brokerId).isPresent();
                }

                @Override
                public boolean isActive(int brokerId) {
                    return image.isEligible(brokerId);
                }
            };
        }

        /** A single node: the only broker, registered and active. */
        static Brokers single(int nodeId) {
            return new Brokers() {
                @Override
                public boolean isRegistered(int brokerId) {
                    return brokerId == nodeId;
                }

                @Override
                public boolean isActive(int brokerId) {
                    return brokerId == nodeId;
                }
            };
        }
    }

    /** One entry of a CreateTopics assignment: a partition index and its replicas, the first preferred as leader. */
    public record PartitionReplicas(int partition, List<Integer> replicas) {
        public PartitionReplicas {
            replicas = List.copyOf(Objects.requireNonNull(replicas, "replicas"));
        }
    }

    /**
     * CreateTopics with an assignment.
     *
     * @param entries the request's assignments, in request order (not empty)
     * @return the replicas of partitions 0..n-1
     * @throws InvalidRequestException           when {@code numPartitions} or {@code replicationFactor} is not -1
     * @throws InvalidReplicaAssignmentException when the assignment breaks a rule above
     */
    public static List<List<Integer>> forNewTopic(int numPartitions, short replicationFactor,
                                                  List<PartitionReplicas> entries, Brokers brokers) {
        if (entries.isEmpty()) {
            throw new IllegalArgumentException("no assignment: the caller places the topic instead");
        }
        if (replicationFactor != -1) {
            throw new InvalidRequestException("A manual partition assignment was specified, but replication factor was not set to -1.");
        }
        if (numPartitions != -1) {
            throw new InvalidRequestException("A manual partition assignment was specified, but numPartitions was not set to -1.");
        }
        Map<Integer, List<Integer>> byPartition = new HashMap<>();
        OptionalInt replicationFactorSoFar = OptionalInt.empty();
        for (PartitionReplicas e : entries) {
            if (byPartition.containsKey(e.partition())) {
                throw new InvalidReplicaAssignmentException("Found multiple manual partition assignments for partition "
                        + e.partition());
            }
            checkPartition(e.partition(), e.replicas(), replicationFactorSoFar, brokers);
            replicationFactorSoFar = OptionalInt.of(e.replicas().size());
            byPartition.put(e.partition(), e.replicas());
        }
        List<List<Integer>> out = new ArrayList<>(byPartition.size());
        for (int p = 0; p < byPartition.size(); p++) {
            List<Integer> replicas = byPartition.get(p);
            if (replicas == null) {
                throw new InvalidReplicaAssignmentException("partitions should be a consecutive 0-based integer sequence");
            }
            out.add(replicas);
        }
        return out;
    }

    /**
     * CreatePartitions with an assignment for the new partitions.
     *
     * @param currentCount      the topic's partition count now; the first new partition has this index
     * @param newCount          the requested count (the caller checked that it is an increase)
     * @param replicationFactor the topic's replication factor, which every new partition must have
     * @return the replicas of partitions currentCount..newCount-1
     * @throws InvalidReplicaAssignmentException when the assignment breaks a rule above
     */
    public static List<List<Integer>> forNewPartitions(int currentCount, int newCount, int replicationFactor,
                                                       List<List<Integer>> assignments, Brokers brokers) {
        checkCount(currentCount, newCount, assignments);
        List<List<Integer>> out = new ArrayList<>(assignments.size());
        for (int i = 0; i < assignments.size(); i++) {
            List<Integer> replicas = List.copyOf(assignments.get(i));
            checkPartition(currentCount + i, replicas, OptionalInt.of(replicationFactor), brokers);
            out.add(replicas);
        }
        return out;
    }

    /**
     * CreatePartitions: exactly one assignment per new partition (Kafka checks this before anything else
     * about the assignments).
     */
    public static void checkCount(int currentCount, int newCount, List<List<Integer>> assignments) {
        long adding = (long) newCount - currentCount;
        if (assignments.size() != adding) {
            throw new InvalidReplicaAssignmentException("Attempted to add " + adding + " additional partition(s), but only "
                    + assignments.size() + " assignment(s) were specified.");
        }
    }

    /**
     * The checks of one replica list that do not depend on fencing: not empty, registered brokers, none
     * twice (scanned in ascending id order, as Kafka does, so the message names the same broker), and
     * {@code replicationFactor} replicas when present. AlterPartitionReassignments checks its targets so.
     */
    public static void checkReplicas(List<Integer> replicas, OptionalInt replicationFactor, Brokers brokers) {
        if (replicas.isEmpty()) {
            throw new InvalidReplicaAssignmentException("The manual partition assignment includes an empty replica list.");
        }
        List<Integer> sorted = new ArrayList<>(replicas);
        sorted.sort(Integer::compare);
        Integer previous = null;
        for (Integer brokerId : sorted) {
            if (!brokers.isRegistered(brokerId)) {
                throw new InvalidReplicaAssignmentException("The manual partition assignment includes broker " + brokerId
                        + ", but no such broker is registered.");
            }
            if (brokerId.equals(previous)) {
                throw new InvalidReplicaAssignmentException("The manual partition assignment includes the broker " + brokerId
                        + " more than once.");
            }
            previous = brokerId;
        }
        if (replicationFactor.isPresent() && replicas.size() != replicationFactor.getAsInt()) {
            throw new InvalidReplicaAssignmentException("The manual partition assignment includes a partition with "
                    + replicas.size() + " replica(s), but this is not consistent with previous partitions, which have "
                    + replicationFactor.getAsInt() + " replica(s).");
        }
    }

    /** The ISR of a new partition: its active replicas, in assignment order (the first leads). */
    public static List<Integer> initialIsr(List<Integer> replicas, Brokers brokers) {
        List<Integer> isr = new ArrayList<>(replicas.size());
        for (int r : replicas) {
            if (brokers.isActive(r)) {
                isr.add(r);
            }
        }
        return isr;
    }

    private static void checkPartition(int partition, List<Integer> replicas, OptionalInt replicationFactor, Brokers brokers) {
        checkReplicas(replicas, replicationFactor, brokers);
        if (initialIsr(replicas, brokers).isEmpty()) {
            throw new InvalidReplicaAssignmentException("All brokers specified in the manual partition assignment for partition "
                    + partition + " are fenced or in controlled shutdown.");
        }
    }
}
