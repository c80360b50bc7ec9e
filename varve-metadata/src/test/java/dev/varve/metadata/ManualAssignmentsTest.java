package dev.varve.metadata;

import dev.varve.metadata.ManualAssignments.Brokers;
import dev.varve.metadata.ManualAssignments.PartitionReplicas;
import org.apache.kafka.common.errors.InvalidReplicaAssignmentException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The rules of manual assignments. Every expected message is the one Apache Kafka 4.4 answered to the same
 * request on a 3-broker KRaft cluster (brokers 1, 2, 3; broker 3 killed and fenced for the fencing cases).
 */
class ManualAssignmentsTest {
    /** Brokers 1, 2, 3 registered; 3 fenced. */
    private static final Brokers BROKERS = new Brokers() {
        @Override
        public boolean isRegistered(int brokerId) {
            return Set.of(1, 2, 3).contains(brokerId);
        }

        @Override
        public boolean isActive(int brokerId) {
            return brokerId == 1 || brokerId == 2;
        }
    };

    /** CreateTopics with assignments for partitions 0, 1, 2... in that order. */
    private static List<List<Integer>> topic(List<?>... replicas) {
        List<PartitionReplicas> entries = new ArrayList<>();
        for (int p = 0; p < replicas.length; p++) {
            entries.add(entry(p, replicas[p]));
        }
        return ManualAssignments.forNewTopic(-1, (short) -1, entries, BROKERS);
    }

    @SuppressWarnings("unchecked")
    private static PartitionReplicas entry(int partition, List<?> replicas) {
        return new PartitionReplicas(partition, (List<Integer>) replicas);
    }

    private static String refusal(Runnable r) {
        try {
            r.run();
        } catch (InvalidReplicaAssignmentException e) {
            return e.getMessage();
        }
        throw new AssertionError("accepted");
    }

    @Test
    void numPartitionsAndReplicationFactorMustBeMinusOneReplicationFactorNamedFirst() {
        List<PartitionReplicas> one = List.of(entry(0, List.of(1, 2)));
        assertThatThrownBy(() -> ManualAssignments.forNewTopic(2, (short) 2, one, BROKERS))
                .isInstanceOf(InvalidRequestException.class)
                .hasMessage("A manual partition assignment was specified, but replication factor was not set to -1.");
        assertThatThrownBy(() -> ManualAssignments.forNewTopic(-1, (short) 2, one, BROKERS))
                .isInstanceOf(InvalidRequestException.class)
                .hasMessage("A manual partition assignment was specified, but replication factor was not set to -1.");
        assertThatThrownBy(() -> ManualAssignments.forNewTopic(2, (short) -1, one, BROKERS))
                .isInstanceOf(InvalidRequestException.class)
                .hasMessage("A manual partition assignment was specified, but numPartitions was not set to -1.");
    }

    @Test
    void partitionsAreNumberedFromZeroWithoutGapsOrRepeats() {
        String gap = "partitions should be a consecutive 0-based integer sequence";
        assertThat(refusal(() -> ManualAssignments.forNewTopic(-1, (short) -1,
                List.of(entry(0, List.of(1, 2)), entry(2, List.of(2, 1))), BROKERS))).isEqualTo(gap);
        assertThat(refusal(() -> ManualAssignments.forNewTopic(-1, (short) -1,
                List.of(entry(1, List.of(1, 2)), entry(2, List.of(2, 1))), BROKERS))).isEqualTo(gap);
        assertThat(refusal(() -> ManualAssignments.forNewTopic(-1, (short) -1, List.of(entry(-1, List.of(1))), BROKERS)))
                .isEqualTo(gap);
        assertThat(refusal(() -> ManualAssignments.forNewTopic(-1, (short) -1,
                List.of(entry(0, List.of(1, 2)), entry(0, List.of(2, 1))), BROKERS)))
                .isEqualTo("Found multiple manual partition assignments for partition 0");
        // the partitions' own checks come before the numbering check
        assertThat(refusal(() -> ManualAssignments.forNewTopic(-1, (short) -1,
                List.of(entry(0, List.of(1)), entry(5, List.of(7))), BROKERS)))
                .isEqualTo("The manual partition assignment includes broker 7, but no such broker is registered.");
    }

    @Test
    void theRequestOrderMayDifferFromThePartitionOrder() {
        assertThat(ManualAssignments.forNewTopic(-1, (short) -1,
                List.of(entry(2, List.of(3, 1)), entry(1, List.of(2, 3)), entry(0, List.of(1, 2))), BROKERS))
                .containsExactly(List.of(1, 2), List.of(2, 3), List.of(3, 1));
    }

    @Test
    void eachPartitionHasRegisteredDistinctReplicasAndTheSameCount() {
        assertThat(refusal(() -> topic(List.of()))).isEqualTo("The manual partition assignment includes an empty replica list.");
        assertThat(refusal(() -> topic(List.of(1), List.of()))).isEqualTo("The manual partition assignment includes an empty replica list.");
        assertThat(refusal(() -> topic(List.of(1, 1)))).isEqualTo("The manual partition assignment includes the broker 1 more than once.");
        assertThat(refusal(() -> topic(List.of(1, 7))))
                .isEqualTo("The manual partition assignment includes broker 7, but no such broker is registered.");
        assertThat(refusal(() -> topic(List.of(-1))))
                .isEqualTo("The manual partition assignment includes broker -1, but no such broker is registered.");
        // ids are scanned in ascending order: whichever problem comes first there is named
        assertThat(refusal(() -> topic(List.of(9, 2, 2)))).isEqualTo("The manual partition assignment includes the broker 2 more than once.");
        assertThat(refusal(() -> topic(List.of(2, 2, 9)))).isEqualTo("The manual partition assignment includes the broker 2 more than once.");
        assertThat(refusal(() -> topic(List.of(0, 2, 2))))
                .isEqualTo("The manual partition assignment includes broker 0, but no such broker is registered.");
        assertThat(refusal(() -> topic(List.of(1, 2), List.of(2)))).isEqualTo("The manual partition assignment includes a partition "
                + "with 1 replica(s), but this is not consistent with previous partitions, which have 2 replica(s).");
        assertThat(refusal(() -> topic(List.of(1), List.of(2, 3)))).isEqualTo("The manual partition assignment includes a partition "
                + "with 2 replica(s), but this is not consistent with previous partitions, which have 1 replica(s).");
    }

    @Test
    void aFencedBrokerIsAReplicaButNotTheOnlyOne() {
        assertThat(topic(List.of(3, 1), List.of(2, 3))).containsExactly(List.of(3, 1), List.of(2, 3));
        assertThat(ManualAssignments.initialIsr(List.of(3, 1), BROKERS)).containsExactly(1);
        assertThat(ManualAssignments.initialIsr(List.of(2, 3, 1), BROKERS)).containsExactly(2, 1);
        assertThat(refusal(() -> topic(List.of(1), List.of(3))))
                .isEqualTo("All brokers specified in the manual partition assignment for partition 1 are fenced or in controlled shutdown.");
        // the replica count is checked before fencing
        assertThat(refusal(() -> topic(List.of(1, 2), List.of(3)))).startsWith("The manual partition assignment includes a partition with 1");
    }

    @Test
    void createPartitionsNeedsOneAssignmentPerNewPartitionWithTheTopicsReplicationFactor() {
        assertThat(refusal(() -> ManualAssignments.forNewPartitions(2, 4, 2, List.of(List.of(1, 2)), BROKERS)))
                .isEqualTo("Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.");
        assertThat(refusal(() -> ManualAssignments.forNewPartitions(2, 3, 2, List.of(), BROKERS)))
                .isEqualTo("Attempted to add 1 additional partition(s), but only 0 assignment(s) were specified.");
        assertThat(refusal(() -> ManualAssignments.forNewPartitions(2, 3, 2, List.of(List.of(1)), BROKERS)))
                .isEqualTo("The manual partition assignment includes a partition with 1 replica(s), but this is not consistent "
                        + "with previous partitions, which have 2 replica(s).");
        assertThat(refusal(() -> ManualAssignments.forNewPartitions(2, 3, 2, List.of(List.of(1, 1)), BROKERS)))
                .isEqualTo("The manual partition assignment includes the broker 1 more than once.");
        assertThat(refusal(() -> ManualAssignments.forNewPartitions(2, 3, 2, List.of(List.of(7, 1)), BROKERS)))
                .isEqualTo("The manual partition assignment includes broker 7, but no such broker is registered.");
        assertThat(refusal(() -> ManualAssignments.forNewPartitions(2, 3, 2, List.of(List.of()), BROKERS)))
                .isEqualTo("The manual partition assignment includes an empty replica list.");
        assertThat(refusal(() -> ManualAssignments.forNewPartitions(1, 3, 1, List.of(List.of(1), List.of(3)), BROKERS)))
                .isEqualTo("All brokers specified in the manual partition assignment for partition 2 are fenced or in controlled shutdown.");
        assertThat(ManualAssignments.forNewPartitions(2, 4, 2, List.of(List.of(3, 1), List.of(1, 3)), BROKERS))
                .containsExactly(List.of(3, 1), List.of(1, 3));
    }

    @Test
    void aSingleNodeIsTheOnlyBroker() {
        Brokers single = Brokers.single(1);
        assertThat(ManualAssignments.forNewTopic(-1, (short) -1, List.of(entry(0, List.of(1)), entry(1, List.of(1))), single))
                .containsExactly(List.of(1), List.of(1));
        assertThatThrownBy(() -> ManualAssignments.forNewTopic(-1, (short) -1, List.of(entry(0, List.of(2))), single))
                .hasMessage("The manual partition assignment includes broker 2, but no such broker is registered.");
        assertThatThrownBy(() -> ManualAssignments.checkReplicas(List.of(1, 2), OptionalInt.empty(), single))
                .hasMessage("The manual partition assignment includes broker 2, but no such broker is registered.");
    }
}
