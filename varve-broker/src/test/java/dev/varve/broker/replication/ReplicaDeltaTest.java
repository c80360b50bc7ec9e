package dev.varve.broker.replication;

import dev.varve.metadata.MetadataImage;
import dev.varve.metadata.MetadataRecord;
import dev.varve.metadata.MetadataRecord.PartitionChange;
import dev.varve.metadata.MetadataRecord.PartitionRecord;
import dev.varve.metadata.MetadataRecord.RegisterBroker;
import dev.varve.metadata.MetadataRecord.RemoveTopic;
import dev.varve.metadata.MetadataRecord.TopicRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** The delta walk the broker's replica manager and the simulation share: what one image change means for broker 1. */
class ReplicaDeltaTest {
    private static final int LOCAL = 1;
    private static final Uuid A = new Uuid(0, 0xA);
    private static final Uuid B = new Uuid(0, 0xB);

    /** What the caller holds: partition to topic id. */
    private final Map<TopicPartition, Uuid> held = new LinkedHashMap<>();
    private final ReplicaDelta.Held view = new ReplicaDelta.Held() {
        @Override
        public Uuid topicId(TopicPartition tp) {
            return held.get(tp);
        }

        @Override
        public Collection<TopicPartition> partitions() {
            return held.keySet();
        }
    };

    private static TopicPartition tp(String topic, int partition) {
        return new TopicPartition(topic, partition);
    }

    private static PartitionRecord partition(Uuid topic, int index, List<Integer> replicas) {
        return new PartitionRecord(topic, index, replicas, replicas, List.of(), List.of(), replicas.get(0), 0, 0);
    }

    /** Brokers 1-3 and topic "a" (id A): a-0 on [1, 2], a-1 on [2, 3], a-2 on [3, 1]. */
    private static MetadataImage base() {
        List<MetadataRecord> records = new ArrayList<>();
        for (int b = 1; b <= 3; b++) {
            records.add(new RegisterBroker(b, new Uuid(1, b), b * 10L, List.of(new MetadataRecord.Endpoint("REPLICATION", "h" + b, 9092)),
                    null, false));
        }
        records.add(new TopicRecord("a", A));
        records.add(partition(A, 0, List.of(1, 2)));
        records.add(partition(A, 1, List.of(2, 3)));
        records.add(partition(A, 2, List.of(3, 1)));
        return MetadataImage.EMPTY.apply(0, records);
    }

    private ReplicaDelta walk(MetadataImage previous, MetadataImage next) {
        return ReplicaDelta.between(previous, next, LOCAL, view);
    }

    @Test
    void theFirstImageReturnsEveryPartitionAssignedHereAndChecksWhatIsHeld() {
        held.put(tp("a", 1), A); // held, but the image assigns it elsewhere
        held.put(tp("a", 0), A); // held and assigned here
        held.put(tp("old", 0), new Uuid(0, 0xD)); // a topic the image does not know
        ReplicaDelta d = walk(MetadataImage.EMPTY, base());
        assertThat(d.changes()).containsOnlyKeys(tp("a", 0), tp("a", 2));
        assertThat(d.changes().get(tp("a", 2)).topicId()).isEqualTo(A);
        assertThat(d.changes().get(tp("a", 2)).state().replicas()).containsExactly(3, 1);
        assertThat(d.gone()).containsExactly(tp("a", 1), tp("old", 0));
        assertThat(d.ineligible()).isEmpty();
    }

    @Test
    void aLaterImageChecksHeldPartitionsOnlyInChangedTopics() {
        MetadataImage previous = base();
        held.put(tp("old", 0), new Uuid(0, 0xD)); // stray, but not the first image: not looked at
        ReplicaDelta d = walk(previous, previous.apply(1, List.of(new MetadataRecord.FenceBroker(3, 30))));
        assertThat(d.changes()).isEmpty();
        assertThat(d.gone()).isEmpty();
        assertThat(d.ineligible()).containsExactly(3);
    }

    @Test
    void onlyPartitionsWhoseStateChangedAreReturned() {
        MetadataImage previous = base();
        // a-0 (here) moves its leader, a-1 (not here) shrinks; a-2 (here) is untouched
        MetadataImage next = previous.apply(1, List.of(
                new PartitionChange(A, 0, 2, null, List.of(2), null, null),
                new PartitionChange(A, 1, MetadataRecord.NO_LEADER_CHANGE, null, List.of(2), null, null)));
        ReplicaDelta d = walk(previous, next);
        assertThat(d.changes()).containsOnlyKeys(tp("a", 0));
        assertThat(d.changes().get(tp("a", 0)).state().leader()).isEqualTo(2);
        assertThat(d.changes().get(tp("a", 0)).state().leaderEpoch()).isEqualTo(1);
        assertThat(d.gone()).isEmpty();
    }

    @Test
    void severalPartitionsOfOneDeltaComeInOnePassInPartitionOrder() {
        MetadataImage previous = base();
        MetadataImage next = previous.apply(1, List.of(
                new PartitionChange(A, 2, 1, null, List.of(1), null, null),
                new PartitionChange(A, 0, 2, null, List.of(2), null, null)));
        assertThat(walk(previous, next).changes()).containsExactly(
                Map.entry(tp("a", 0), new ReplicaDelta.Change(tp("a", 0), A, next.partition(A, 0))),
                Map.entry(tp("a", 2), new ReplicaDelta.Change(tp("a", 2), A, next.partition(A, 2))));
    }

    @Test
    void aNewTopicReturnsItsPartitionsAssignedHere() {
        MetadataImage previous = base();
        MetadataImage next = previous.apply(1, List.of(new TopicRecord("b", B), partition(B, 0, List.of(2, 3)),
                partition(B, 1, List.of(1, 2, 3))));
        ReplicaDelta d = walk(previous, next);
        assertThat(d.changes()).containsOnlyKeys(tp("b", 1));
        assertThat(d.changes().get(tp("b", 1)).topicId()).isEqualTo(B);
        assertThat(d.gone()).isEmpty();
    }

    @Test
    void aDeletedTopicsHeldPartitionsAreGone() {
        MetadataImage previous = base();
        held.put(tp("a", 0), A);
        held.put(tp("a", 1), A); // held although not assigned here: not this walk's business (not assigned before)
        ReplicaDelta d = walk(previous, previous.apply(1, List.of(new RemoveTopic(A))));
        assertThat(d.changes()).isEmpty();
        assertThat(d.gone()).containsExactly(tp("a", 0)); // a-2 was assigned here but is not held
    }

    @Test
    void aReplicaMovedAwayIsGoneOnlyWhenHeld() {
        MetadataImage previous = base();
        held.put(tp("a", 0), A);
        MetadataImage next = previous.apply(1, List.of(
                new PartitionChange(A, 0, 2, List.of(2, 3), List.of(2, 3), null, null),
                new PartitionChange(A, 2, 3, List.of(3, 2), List.of(3, 2), null, null)));
        ReplicaDelta d = walk(previous, next);
        assertThat(d.changes()).isEmpty();
        assertThat(d.gone()).containsExactly(tp("a", 0));
    }

    @Test
    void aTopicRecreatedUnderTheSameNameStopsTheOldReplicaAndReturnsTheNewOne() {
        MetadataImage previous = base();
        held.put(tp("a", 0), A);
        held.put(tp("a", 2), A);
        MetadataImage next = previous.apply(1, List.of(new RemoveTopic(A), new TopicRecord("a", B),
                partition(B, 0, List.of(1, 3))));
        ReplicaDelta d = walk(previous, next);
        assertThat(d.changes()).containsOnlyKeys(tp("a", 0));
        assertThat(d.changes().get(tp("a", 0)).topicId()).isEqualTo(B);
        assertThat(d.gone()).containsExactly(tp("a", 0), tp("a", 2));
    }

    @Test
    void aHeldReplicaOfTheNewTopicIsNotGoneWhenTheOldTopicWithItsNameIsDeleted() {
        // the caller already holds a-0 of the new topic B (applied earlier); a late walk over A's removal
        // must not stop it
        MetadataImage previous = base();
        held.put(tp("a", 0), B);
        ReplicaDelta d = walk(previous, previous.apply(1, List.of(new RemoveTopic(A))));
        assertThat(d.gone()).isEmpty();
    }

    @Test
    void theIneligibleBrokersAreTheFencedAndTheShuttingDown() {
        MetadataImage next = base().apply(1, List.of(new MetadataRecord.FenceBroker(2, 20),
                new MetadataRecord.BeginControlledShutdown(3, 30)));
        assertThat(walk(base(), next).ineligible()).containsExactly(2, 3);
        assertThat(ReplicaDelta.ineligibleBrokers(next)).containsExactly(2, 3);
    }
}
