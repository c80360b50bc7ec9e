package dev.varve.broker.api;

import dev.varve.broker.BrokerContext;
import dev.varve.broker.cluster.ClusterReplicaManager;
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

import java.util.ArrayList;
import java.util.List;
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
 *
 * <p>In a cluster, as Kafka's DelayedDeleteRecords, a partition is answered once every live replica's
 * log starts at or after the offset (the low watermark), so "deleted" survives a failover to any of
 * them; REQUEST_TIMED_OUT after the request's timeout (the deletion stands on the replicas that made
 * it, and the others make it as they fetch), NOT_LEADER_OR_FOLLOWER if leadership moves meanwhile.
 * No request thread waits.
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
        List<CompletableFuture<Void>> waits = new ArrayList<>();
        for (DeleteRecordsTopic topic : req.data().topics()) {
            DeleteRecordsTopicResult tr = response.topics().find(topic.name());
            if (tr == null) {
                tr = new DeleteRecordsTopicResult().setName(topic.name());
                response.topics().add(tr);
            }
            for (DeleteRecordsPartition p : topic.partitions()) {
                TopicPartition tp = new TopicPartition(topic.name(), p.partitionIndex());
                DeleteRecordsPartitionResult pr = delete(tp, p.offset());
                ClusterReplicaManager cluster = broker.replicaManager().cluster();
                if (cluster != null && pr.errorCode() == Errors.NONE.code()) {
                    // answered when every live replica has moved its log start there too
                    waits.add(cluster.awaitLowWatermark(tp, pr.lowWatermark(), req.data().timeoutMs())
                            .thenAccept(error -> {
                                synchronized (pr) {
                                    pr.setErrorCode(error.code());
                                    if (error != Errors.NONE) {
                                        pr.setLowWatermark(DeleteRecordsResponse.INVALID_LOW_WATERMARK);
                                    }
                                }
                            }));
                }
                // A partition named twice: the last answer wins (the collection is keyed by partition).
                DeleteRecordsPartitionResult previous = tr.partitions().find(p.partitionIndex());
                if (previous != null) {
                    tr.partitions().remove(previous);
                }
                tr.partitions().add(pr);
            }
        }
        if (waits.isEmpty()) {
            return CompletableFuture.completedFuture(new DeleteRecordsResponse(response));
        }
        return CompletableFuture.allOf(waits.toArray(new CompletableFuture<?>[0]))
                .thenApply(v -> new DeleteRecordsResponse(response));
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
