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
            for (ListOffsetsRequestData.ListOffsetsPartition p : topic.partitions()) {
                ListOffsetsResponseData.ListOffsetsPartitionResponse r =
                        answer(new TopicPartition(topic.name(), p.partitionIndex()), p.timestamp());
                if (req.version() < 4) {
                    r.setLeaderEpoch(-1); // the field exists from v4; older versions cannot carry it
                }
                tr.partitions().add(r);
            }
            response.topics().add(tr);
        }
        return CompletableFuture.completedFuture(new ListOffsetsResponse(response));
    }

    private ListOffsetsResponseData.ListOffsetsPartitionResponse answer(TopicPartition tp, long timestamp) {
        ListOffsetsResponseData.ListOffsetsPartitionResponse r = new ListOffsetsResponseData.ListOffsetsPartitionResponse()
                .setPartitionIndex(tp.partition()).setTimestamp(-1).setOffset(-1)
                .setLeaderEpoch(ReplicaManager.LEADER_EPOCH);
        try {
            PartitionLog log = broker.replicaManager().log(tp);
            long hw = log.highWatermark();
            Optional<FileRecords.TimestampAndOffset> found;
            if (timestamp == ListOffsetsRequest.EARLIEST_TIMESTAMP || timestamp == ListOffsetsRequest.EARLIEST_LOCAL_TIMESTAMP) {
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
