package dev.varve.broker.api;

import dev.varve.broker.BrokerContext;
import dev.varve.storage.PartitionLog;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
import org.apache.kafka.common.message.DeleteRecordsRequestData.DeleteRecordsPartition;
import org.apache.kafka.common.message.DeleteRecordsRequestData.DeleteRecordsTopic;
import org.apache.kafka.common.message.DeleteRecordsResponseData;
import org.apache.kafka.common.message.DeleteRecordsResponseData.DeleteRecordsPartitionResult;
import org.apache.kafka.common.message.DeleteRecordsResponseData.DeleteRecordsTopicResult;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.DeleteRecordsRequest;
import org.apache.kafka.common.requests.DeleteRecordsResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.concurrent.CompletableFuture;

/**
 * DeleteRecords: per partition, moves the log start offset to the requested offset (-1: the high
 * watermark) and deletes the segments wholly below it. {@code LogManager.deleteRecordsBefore}
 * checkpoints the new log start offset before returning, so the answer is durable. The result is the
 * new low watermark (log start offset); an offset below it changes nothing and returns it.
 *
 * <p>Errors per partition: an offset above the high watermark, or negative other than -1, gets
 * OFFSET_OUT_OF_RANGE; an unknown partition UNKNOWN_TOPIC_OR_PARTITION; an offline one
 * KAFKA_STORAGE_ERROR. On a single node the high watermark is the log end, so there is nothing to
 * wait for and the request's timeout is not needed.
 */
public final class DeleteRecordsHandler extends AllVersionsHandler {
    private final BrokerContext broker;

    public DeleteRecordsHandler(BrokerContext broker) {
        super(ApiKeys.DELETE_RECORDS);
        this.broker = broker;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        DeleteRecordsRequest req = (DeleteRecordsRequest) request;
        DeleteRecordsResponseData response = new DeleteRecordsResponseData();
        for (DeleteRecordsTopic topic : req.data().topics()) {
            DeleteRecordsTopicResult tr = response.topics().find(topic.name());
            if (tr == null) {
                tr = new DeleteRecordsTopicResult().setName(topic.name());
                response.topics().add(tr);
            }
            for (DeleteRecordsPartition p : topic.partitions()) {
                DeleteRecordsPartitionResult pr = delete(new TopicPartition(topic.name(), p.partitionIndex()), p.offset());
                // A partition named twice: the last answer wins (the collection is keyed by partition).
                DeleteRecordsPartitionResult previous = tr.partitions().find(p.partitionIndex());
                if (previous != null) {
                    tr.partitions().remove(previous);
                }
                tr.partitions().add(pr);
            }
        }
        return CompletableFuture.completedFuture(new DeleteRecordsResponse(response));
    }

    private DeleteRecordsPartitionResult delete(TopicPartition tp, long offset) {
        DeleteRecordsPartitionResult r = new DeleteRecordsPartitionResult()
                .setPartitionIndex(tp.partition()).setLowWatermark(DeleteRecordsResponse.INVALID_LOW_WATERMARK);
        if (org.apache.kafka.common.internals.Topic.isInternal(tp.topic())) {
            // the group coordinator's state: only compaction and offset expiry remove its records
            return r.setErrorCode(Errors.INVALID_TOPIC_EXCEPTION.code());
        }
        try {
            PartitionLog log = broker.replicaManager().log(tp);
            long target = offset == DeleteRecordsRequest.HIGH_WATERMARK ? log.highWatermark() : offset;
            if (target < 0) {
                throw new OffsetOutOfRangeException("Cannot delete records of " + tp + " before offset " + offset
                        + ": it is negative.");
            }
            long lowWatermark = broker.replicaManager().logManager().deleteRecordsBefore(tp, target);
            r.setLowWatermark(lowWatermark).setErrorCode(Errors.NONE.code());
        } catch (RuntimeException e) {
            r.setErrorCode(Errors.forException(e).code());
        }
        return r;
    }
}
