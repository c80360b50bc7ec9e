package dev.varve.broker.api;

import dev.varve.broker.BrokerContext;
import dev.varve.broker.TopicRegistry;
import dev.varve.broker.group.ShareGroupCoordinator;
import dev.varve.broker.share.SharePartitionKey;
import dev.varve.broker.share.ShareStates;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.AlterShareGroupOffsetsRequestData;
import org.apache.kafka.common.message.AlterShareGroupOffsetsResponseData;
import org.apache.kafka.common.message.DeleteShareGroupOffsetsRequestData;
import org.apache.kafka.common.message.DeleteShareGroupOffsetsResponseData;
import org.apache.kafka.common.message.DescribeShareGroupOffsetsRequestData;
import org.apache.kafka.common.message.DescribeShareGroupOffsetsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.AlterShareGroupOffsetsRequest;
import org.apache.kafka.common.requests.AlterShareGroupOffsetsResponse;
import org.apache.kafka.common.requests.DeleteShareGroupOffsetsRequest;
import org.apache.kafka.common.requests.DeleteShareGroupOffsetsResponse;
import org.apache.kafka.common.requests.DescribeShareGroupOffsetsRequest;
import org.apache.kafka.common.requests.DescribeShareGroupOffsetsResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;

/**
 * The share-group offset admin APIs behind {@code kafka-share-groups.sh}: DescribeShareGroupOffsets
 * (each partition's start offset and lag: the records from it to the high watermark not yet finished),
 * AlterShareGroupOffsets and DeleteShareGroupOffsets (only while the group has no members:
 * NON_EMPTY_GROUP otherwise, GROUP_ID_NOT_FOUND for a group that is not a share group here).
 */
public final class ShareGroupOffsetsHandlers {
    private ShareGroupOffsetsHandlers() {
    }

    public static ApiHandler describe(BrokerContext broker, ShareGroupCoordinator groups, ShareStates states) {
        return new AllVersionsHandler(ApiKeys.DESCRIBE_SHARE_GROUP_OFFSETS) {
            @Override
            public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
                DescribeShareGroupOffsetsRequestData req = ((DescribeShareGroupOffsetsRequest) request).data();
                DescribeShareGroupOffsetsResponseData out = new DescribeShareGroupOffsetsResponseData();
                for (DescribeShareGroupOffsetsRequestData.DescribeShareGroupOffsetsRequestGroup g : req.groups()) {
                    DescribeShareGroupOffsetsResponseData.DescribeShareGroupOffsetsResponseGroup rg =
                            new DescribeShareGroupOffsetsResponseData.DescribeShareGroupOffsetsResponseGroup().setGroupId(g.groupId());
                    out.groups().add(rg);
                    if (!groups.exists(g.groupId())) {
                        rg.setErrorCode(Errors.GROUP_ID_NOT_FOUND.code()).setErrorMessage("Group " + g.groupId()
                                + " is not a share group.");
                        continue;
                    }
                    Map<SharePartitionKey, Long> starts = states.startOffsets(g.groupId());
                    Map<String, List<Integer>> wanted = new TreeMap<>();
                    if (g.topics() == null) {
                        starts.keySet().forEach(k -> broker.topics().get(k.topicId()).ifPresent(t ->
                                wanted.computeIfAbsent(t.name(), n -> new ArrayList<>()).add(k.partition())));
                    } else {
                        g.topics().forEach(t -> wanted.put(t.topicName(), new ArrayList<>(t.partitions())));
                    }
                    wanted.forEach((name, partitions) -> {
                        Optional<TopicRegistry.TopicInfo> info = broker.topics().get(name);
                        DescribeShareGroupOffsetsResponseData.DescribeShareGroupOffsetsResponseTopic rt =
                                new DescribeShareGroupOffsetsResponseData.DescribeShareGroupOffsetsResponseTopic()
                                        .setTopicName(name).setTopicId(info.map(TopicRegistry.TopicInfo::id).orElse(Uuid.ZERO_UUID));
                        rg.topics().add(rt);
                        for (int p : partitions.stream().sorted().toList()) {
                            var rp = new DescribeShareGroupOffsetsResponseData.DescribeShareGroupOffsetsResponsePartition()
                                    .setPartitionIndex(p).setLeaderEpoch(-1);
                            rt.partitions().add(rp);
                            if (info.isEmpty() || p < 0 || p >= info.get().partitions()) {
                                rp.setErrorCode(Errors.UNKNOWN_TOPIC_OR_PARTITION.code()).setStartOffset(-1);
                                continue;
                            }
                            Long start = starts.get(new SharePartitionKey(g.groupId(), info.get().id(), p));
                            rp.setStartOffset(start == null ? -1 : start);
                            if (start != null) {
                                var log = broker.replicaManager().log(new TopicPartition(name, p));
                                if (log != null) {
                                    rp.setLag(Math.max(0, log.highWatermark() - start));
                                }
                            }
                        }
                    });
                }
                return CompletableFuture.completedFuture(new DescribeShareGroupOffsetsResponse(out));
            }
        };
    }

    public static ApiHandler alter(BrokerContext broker, ShareGroupCoordinator groups, ShareStates states) {
        return new AllVersionsHandler(ApiKeys.ALTER_SHARE_GROUP_OFFSETS) {
            @Override
            public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
                AlterShareGroupOffsetsRequestData req = ((AlterShareGroupOffsetsRequest) request).data();
                AlterShareGroupOffsetsResponseData out = new AlterShareGroupOffsetsResponseData();
                Errors idle = groups.checkIdle(req.groupId());
                if (idle != Errors.NONE) {
                    return CompletableFuture.completedFuture(new AlterShareGroupOffsetsResponse(out
                            .setErrorCode(idle.code()).setErrorMessage(idleMessage(req.groupId(), idle))));
                }
                for (var t : req.topics()) {
                    Optional<TopicRegistry.TopicInfo> info = broker.topics().get(t.topicName());
                    var rt = new AlterShareGroupOffsetsResponseData.AlterShareGroupOffsetsResponseTopic()
                            .setTopicName(t.topicName()).setTopicId(info.map(TopicRegistry.TopicInfo::id).orElse(Uuid.ZERO_UUID));
                    out.responses().add(rt);
                    for (var p : t.partitions()) {
                        var rp = new AlterShareGroupOffsetsResponseData.AlterShareGroupOffsetsResponsePartition()
                                .setPartitionIndex(p.partitionIndex());
                        rt.partitions().add(rp);
                        Errors e;
                        if (info.isEmpty() || p.partitionIndex() < 0 || p.partitionIndex() >= info.get().partitions()) {
                            e = Errors.UNKNOWN_TOPIC_OR_PARTITION;
                        } else if (p.startOffset() < -1) {
                            e = Errors.INVALID_REQUEST;
                        } else {
                            e = states.alterStartOffset(req.groupId(), info.get().id(), p.partitionIndex(), p.startOffset());
                        }
                        rp.setErrorCode(e.code()).setErrorMessage(e == Errors.NONE ? null : e.message());
                    }
                }
                return CompletableFuture.completedFuture(new AlterShareGroupOffsetsResponse(out));
            }
        };
    }

    public static ApiHandler delete(BrokerContext broker, ShareGroupCoordinator groups, ShareStates states) {
        return new AllVersionsHandler(ApiKeys.DELETE_SHARE_GROUP_OFFSETS) {
            @Override
            public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
                DeleteShareGroupOffsetsRequestData req = ((DeleteShareGroupOffsetsRequest) request).data();
                DeleteShareGroupOffsetsResponseData out = new DeleteShareGroupOffsetsResponseData();
                Errors idle = groups.checkIdle(req.groupId());
                if (idle != Errors.NONE) {
                    return CompletableFuture.completedFuture(new DeleteShareGroupOffsetsResponse(out
                            .setErrorCode(idle.code()).setErrorMessage(idleMessage(req.groupId(), idle))));
                }
                for (var t : req.topics()) {
                    Optional<TopicRegistry.TopicInfo> info = broker.topics().get(t.topicName());
                    var rt = new DeleteShareGroupOffsetsResponseData.DeleteShareGroupOffsetsResponseTopic().setTopicName(t.topicName())
                            .setTopicId(info.map(TopicRegistry.TopicInfo::id).orElse(Uuid.ZERO_UUID));
                    out.responses().add(rt);
                    if (info.isEmpty()) {
                        rt.setErrorCode(Errors.UNKNOWN_TOPIC_OR_PARTITION.code()).setErrorMessage(Errors.UNKNOWN_TOPIC_OR_PARTITION.message());
                    } else {
                        states.deleteState(req.groupId(), info.get().id());
                    }
                }
                return CompletableFuture.completedFuture(new DeleteShareGroupOffsetsResponse(out));
            }
        };
    }

    private static String idleMessage(String groupId, Errors error) {
        return error == Errors.NON_EMPTY_GROUP ? "Share group " + groupId + " has members: stop them first."
                : "Group " + groupId + " is not a share group.";
    }
}
