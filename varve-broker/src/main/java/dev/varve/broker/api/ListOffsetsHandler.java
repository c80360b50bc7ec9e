package dev.varve.broker.api;

import dev.varve.broker.BrokerContext;
import dev.varve.broker.ReplicaManager;
import dev.varve.storage.PartitionLog;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.message.ListOffsetsRequestData;
import org.apache.kafka.common.message.ListOffsetsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.ListOffsetsRequest;
import org.apache.kafka.common.requests.ListOffsetsResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * ListOffsets: earliest (the log start), latest (the high watermark), the offset of the largest
 * timestamp, and the first offset at or after a timestamp; only committed offsets are reported.
 */
public final class ListOffsetsHandler extends AllVersionsHandler {
    private final BrokerContext broker;

    public ListOffsetsHandler(BrokerContext broker) {
        super(ApiKeys.LIST_OFFSETS);
        this.broker = broker;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        ListOffsetsRequest req = (ListOffsetsRequest) request;
        ListOffsetsResponseData response = new ListOffsetsResponseData();
        for (ListOffsetsRequestData.ListOffsetsTopic topic : req.data().topics()) {
            ListOffsetsResponseData.ListOffsetsTopicResponse tr = new ListOffsetsResponseData.ListOffsetsTopicResponse()
                    .setName(topic.name());
            // DESCRIBE on the topic (Kafka's check, before existence)
            boolean describable = broker.authorizer().authorize(context, org.apache.kafka.common.acl.AclOperation.DESCRIBE,
                    org.apache.kafka.common.resource.ResourceType.TOPIC, topic.name());
            for (ListOffsetsRequestData.ListOffsetsPartition p : topic.partitions()) {
                ListOffsetsResponseData.ListOffsetsPartitionResponse r = !describable
                        ? new ListOffsetsResponseData.ListOffsetsPartitionResponse().setPartitionIndex(p.partitionIndex())
                                .setTimestamp(-1).setOffset(-1).setErrorCode(Errors.TOPIC_AUTHORIZATION_FAILED.code())
                        : answer(new TopicPartition(topic.name(), p.partitionIndex()), p.timestamp(),
                                req.data().replicaId() >= 0, p.currentLeaderEpoch(),
                                req.data().isolationLevel() == org.apache.kafka.common.IsolationLevel.READ_COMMITTED.id());
                if (req.version() < 4) {
                    r.setLeaderEpoch(-1); // the field exists from v4; older versions cannot carry it
                }
                tr.partitions().add(r);
            }
            response.topics().add(tr);
        }
        return CompletableFuture.completedFuture(new ListOffsetsResponse(response));
    }

    /**
     * @param replica       the request comes from a follower replica: LATEST is then the log end (it truncates
     *                      to it when it is ahead of the leader), not the high watermark
     * @param readCommitted isolation level READ_COMMITTED: offsets are bounded by the last stable offset
     */
    private ListOffsetsResponseData.ListOffsetsPartitionResponse answer(TopicPartition tp, long timestamp,
                                                                       boolean replica, int currentLeaderEpoch,
                                                                       boolean readCommitted) {
        ListOffsetsResponseData.ListOffsetsPartitionResponse r = new ListOffsetsResponseData.ListOffsetsPartitionResponse()
                .setPartitionIndex(tp.partition()).setTimestamp(-1).setOffset(-1)
                .setLeaderEpoch(ReplicaManager.LEADER_EPOCH);
        try {
            dev.varve.broker.cluster.ClusterReplicaManager cluster = broker.replicaManager().cluster();
            PartitionLog log = cluster != null ? cluster.leaderLog(tp, currentLeaderEpoch) : broker.replicaManager().log(tp);
            if (cluster != null) {
                r.setLeaderEpoch(cluster.leaderEpoch(tp));
            }
            long hw = replica ? log.logEndOffset() : readCommitted ? log.lastStableOffset() : log.highWatermark();
            Optional<FileRecords.TimestampAndOffset> found;
            boolean earliest = timestamp == ListOffsetsRequest.EARLIEST_TIMESTAMP
                    || timestamp == ListOffsetsRequest.EARLIEST_LOCAL_TIMESTAMP;
            if (cluster != null && !replica && !earliest && cluster.leaderEpochStartOffset(tp) > hw) {
                // KIP-207: a new leader's HW still lags the previous leader's; clients retry
                r.setErrorCode(Errors.OFFSET_NOT_AVAILABLE.code());
                return r;
            }
            if (earliest) {
                r.setOffset(log.logStartOffset());
            } else if (timestamp == ListOffsetsRequest.LATEST_TIMESTAMP || timestamp == ListOffsetsRequest.LATEST_TIERED_TIMESTAMP) {
                r.setOffset(hw);
            } else if (timestamp == ListOffsetsRequest.MAX_TIMESTAMP) {
                found = log.maxTimestampAndOffset(hw);
                found.ifPresent(t -> r.setTimestamp(t.timestamp).setOffset(t.offset));
            } else if (timestamp < 0) {
                r.setErrorCode(Errors.UNSUPPORTED_VERSION.code());
                return r;
            } else {
                found = log.offsetForTimestamp(timestamp, hw);
                found.ifPresent(t -> {
                    r.setTimestamp(t.timestamp).setOffset(t.offset);
                    t.leaderEpoch.ifPresent(r::setLeaderEpoch);
                });
            }
            r.setErrorCode(Errors.NONE.code());
        } catch (RuntimeException e) {
            r.setErrorCode(Errors.forException(e).code());
        }
        return r;
    }
}
