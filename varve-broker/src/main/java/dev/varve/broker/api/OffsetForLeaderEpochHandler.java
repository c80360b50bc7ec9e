package dev.varve.broker.api;

import dev.varve.broker.BrokerContext;
import dev.varve.broker.ReplicaManager;
import dev.varve.broker.TopicRegistry.TopicInfo;
import dev.varve.broker.replication.EpochFencing;
import dev.varve.storage.LeaderEpochCache;
import dev.varve.storage.PartitionLog;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.message.OffsetForLeaderEpochRequestData;
import org.apache.kafka.common.message.OffsetForLeaderEpochResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.OffsetsForLeaderEpochRequest;
import org.apache.kafka.common.requests.OffsetsForLeaderEpochResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * OffsetForLeaderEpoch (KIP-101, KIP-279, KIP-320): for each partition, the largest epoch at most the
 * one asked for and where it ends in this log (the log end offset for the current epoch), so a
 * follower knows where to truncate and a consumer can detect a truncated log. The caller's idea of
 * the current leader epoch is checked first: older gets FENCED_LEADER_EPOCH, newer
 * UNKNOWN_LEADER_EPOCH (-1 skips the check).
 */
public final class OffsetForLeaderEpochHandler extends AllVersionsHandler {
    private final BrokerContext broker;

    public OffsetForLeaderEpochHandler(BrokerContext broker) {
        super(ApiKeys.OFFSET_FOR_LEADER_EPOCH);
        this.broker = broker;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        OffsetForLeaderEpochRequestData req = ((OffsetsForLeaderEpochRequest) request).data();
        OffsetForLeaderEpochResponseData out = new OffsetForLeaderEpochResponseData();
        // Kafka's check: CLUSTER_ACTION on the cluster (followers), else DESCRIBE on each topic (consumers, KIP-320)
        dev.varve.broker.security.AclAuthorizer auth = broker.authorizer();
        boolean clusterAction = auth.authorizeCluster(context, org.apache.kafka.common.acl.AclOperation.CLUSTER_ACTION);
        for (OffsetForLeaderEpochRequestData.OffsetForLeaderTopic t : req.topics()) {
            OffsetForLeaderEpochResponseData.OffsetForLeaderTopicResult rt =
                    new OffsetForLeaderEpochResponseData.OffsetForLeaderTopicResult().setTopic(t.topic());
            Optional<TopicInfo> info = broker.topics().get(t.topic());
            boolean allowed = clusterAction || auth.authorize(context, org.apache.kafka.common.acl.AclOperation.DESCRIBE,
                    org.apache.kafka.common.resource.ResourceType.TOPIC, t.topic());
            for (OffsetForLeaderEpochRequestData.OffsetForLeaderPartition p : t.partitions()) {
                rt.partitions().add(allowed ? answer(info, t.topic(), p) : new OffsetForLeaderEpochResponseData.EpochEndOffset()
                        .setPartition(p.partition()).setLeaderEpoch(LeaderEpochCache.UNDEFINED_EPOCH)
                        .setEndOffset(LeaderEpochCache.UNDEFINED_EPOCH_OFFSET)
                        .setErrorCode(Errors.TOPIC_AUTHORIZATION_FAILED.code()));
            }
            out.topics().add(rt);
        }
        return CompletableFuture.completedFuture(new OffsetsForLeaderEpochResponse(out));
    }

    private OffsetForLeaderEpochResponseData.EpochEndOffset answer(Optional<TopicInfo> info, String topic,
                                                                    OffsetForLeaderEpochRequestData.OffsetForLeaderPartition p) {
        OffsetForLeaderEpochResponseData.EpochEndOffset r = new OffsetForLeaderEpochResponseData.EpochEndOffset()
                .setPartition(p.partition())
                .setLeaderEpoch(LeaderEpochCache.UNDEFINED_EPOCH)
                .setEndOffset(LeaderEpochCache.UNDEFINED_EPOCH_OFFSET);
        if (info.isEmpty() || p.partition() < 0 || p.partition() >= info.get().partitions()) {
            return r.setErrorCode(Errors.UNKNOWN_TOPIC_OR_PARTITION.code());
        }
        dev.varve.broker.cluster.ClusterReplicaManager cluster = broker.replicaManager().cluster();
        TopicPartition tp = new TopicPartition(topic, p.partition());
        try {
            PartitionLog log;
            if (cluster != null) {
                // the leader answers, after checking the asker's epoch against its own
                log = cluster.leaderLog(tp, p.currentLeaderEpoch());
            } else {
                Errors fenced = p.currentLeaderEpoch() < 0 ? Errors.NONE
                        : EpochFencing.validate(p.currentLeaderEpoch(), ReplicaManager.LEADER_EPOCH);
                if (fenced != Errors.NONE) {
                    return r.setErrorCode(fenced.code());
                }
                log = broker.replicaManager().log(tp);
            }
            LeaderEpochCache.EpochEndOffset end = log.epochCache().endOffsetFor(p.leaderEpoch(), log.logEndOffset());
            return r.setErrorCode(Errors.NONE.code()).setLeaderEpoch(end.epoch()).setEndOffset(end.endOffset());
        } catch (RuntimeException e) {
            return r.setErrorCode(Errors.forException(e).code());
        }
    }
}
