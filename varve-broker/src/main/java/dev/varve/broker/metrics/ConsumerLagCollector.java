package dev.varve.broker.metrics;

import dev.varve.broker.group.GroupOffsets;
import dev.varve.broker.group.GroupRecords;
import dev.varve.storage.PartitionLog;
import io.prometheus.metrics.model.registry.MultiCollector;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;
import org.apache.kafka.common.TopicPartition;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

/**
 * Consumer group positions and lag, named as kafka_exporter (the exporter Kafka dashboards use for lag)
 * names them: {@code kafka_consumergroup_current_offset} and {@code kafka_consumergroup_lag} (the
 * partition's high watermark minus the group's committed offset, at least 0) with labels consumergroup,
 * topic and partition. A broker reports the groups it coordinates, for the partitions whose log it
 * holds (as leader or follower); in a cluster, sum or take the maximum over the brokers.
 */
public final class ConsumerLagCollector implements MultiCollector {
    private final GroupOffsets groups;
    private final Function<TopicPartition, Optional<PartitionLog>> logs;

    public ConsumerLagCollector(GroupOffsets groups, Function<TopicPartition, Optional<PartitionLog>> logs) {
        this.groups = groups;
        this.logs = logs;
    }

    @Override
    public MetricSnapshots collect() {
        GaugeSnapshot.Builder current = GaugeSnapshot.builder().name("kafka_consumergroup_current_offset")
                .help("The committed offset of a consumer group in a partition");
        GaugeSnapshot.Builder lag = GaugeSnapshot.builder().name("kafka_consumergroup_lag")
                .help("The partition's high watermark minus the group's committed offset");
        for (org.apache.kafka.common.message.ListGroupsResponseData.ListedGroup g : groups.list(List.of(), List.of())) {
            Map<TopicPartition, GroupRecords.OffsetValue> committed = groups.fetch(g.groupId(), null);
            for (Map.Entry<TopicPartition, GroupRecords.OffsetValue> e : committed.entrySet()) {
                Optional<PartitionLog> log = logs.apply(e.getKey());
                if (log.isEmpty()) {
                    continue;
                }
                Labels labels = Labels.of("consumergroup", g.groupId(), "partition", Integer.toString(e.getKey().partition()),
                        "topic", e.getKey().topic());
                long offset = e.getValue().offset();
                current.dataPoint(GaugeSnapshot.GaugeDataPointSnapshot.builder().value(offset).labels(labels).build());
                lag.dataPoint(GaugeSnapshot.GaugeDataPointSnapshot.builder()
                        .value(Math.max(0, log.get().highWatermark() - offset)).labels(labels).build());
            }
        }
        return MetricSnapshots.of(current.build(), lag.build());
    }
}
