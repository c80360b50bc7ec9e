package dev.varve.broker.api;

import dev.varve.broker.BrokerContext;
import dev.varve.broker.ReplicaManager;
import dev.varve.broker.TopicRegistry.TopicInfo;
import dev.varve.broker.cluster.ClusterReplicaManager;
import dev.varve.metadata.BrokerRegistration;
import dev.varve.metadata.MetadataImage;
import dev.varve.metadata.PartitionState;
import dev.varve.metadata.TopicImage;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * What Metadata and DescribeTopicPartitions tell of a topic's partitions: leader, epoch, replicas,
 * ISR, eligible leader replicas, and the replicas on brokers that are fenced or gone. In a cluster from the metadata image; on
 * a single node this broker leads every partition alone.
 */
final class PartitionViews {
    private PartitionViews() {
    }

    record PartitionView(int partition, int leader, int leaderEpoch, List<Integer> replicas, List<Integer> isr,
                         List<Integer> offline, List<Integer> elr, List<Integer> lastKnownElr) {
        boolean hasLeader() {
            return leader != dev.varve.metadata.MetadataRecord.NO_LEADER;
        }
    }

    /** The topic's partition count as this broker knows it. */
    static int count(BrokerContext broker, TopicInfo t) {
        ClusterReplicaManager cluster = broker.replicaManager().cluster();
        if (cluster == null) {
            return t.partitions();
        }
        return cluster.image().topic(t.id()).map(TopicImage::partitionCount).orElse(0);
    }

    /** Partitions {@code from} (inclusive) to {@code to} (exclusive) of the topic, those that exist. */
    static List<PartitionView> partitions(BrokerContext broker, TopicInfo t, int from, int to) {
        ClusterReplicaManager cluster = broker.replicaManager().cluster();
        if (cluster == null) {
            int upper = Math.min(to, t.partitions());
            List<PartitionView> out = new ArrayList<>(Math.max(0, upper - from));
            List<Integer> self = List.of(broker.nodeId());
            for (int p = Math.max(0, from); p < upper; p++) {
                out.add(new PartitionView(p, broker.nodeId(), ReplicaManager.LEADER_EPOCH, self, self, List.of(), List.of(), List.of()));
            }
            return out;
        }
        MetadataImage image = cluster.image();
        Optional<TopicImage> topic = image.topic(t.id());
        if (topic.isEmpty()) {
            return List.of();
        }
        int upper = Math.min(to, topic.get().partitionCount());
        List<PartitionView> out = new ArrayList<>(Math.max(0, upper - from));
        for (int p = Math.max(0, from); p < upper; p++) {
            PartitionState ps = topic.get().partition(p);
            List<Integer> offline = new ArrayList<>(0);
            for (int r : ps.replicas()) {
                if (image.broker(r).map(BrokerRegistration::fenced).orElse(true)) {
                    offline.add(r);
                }
            }
            out.add(new PartitionView(ps.partition(), ps.leader(), ps.leaderEpoch(), ps.replicas(), ps.isr(), offline,
                    ps.elr(), ps.lastKnownElr()));
        }
        return out;
    }
}
