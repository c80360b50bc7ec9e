package dev.varve.broker.api;

import dev.varve.broker.BrokerContext;
import dev.varve.storage.PartitionLog;
import dev.varve.storage.ProducerStateEntry;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.message.DescribeProducersRequestData;
import org.apache.kafka.common.message.DescribeProducersResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.DescribeProducersRequest;
import org.apache.kafka.common.requests.DescribeProducersResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.concurrent.CompletableFuture;

/**
 * DescribeProducers (Admin {@code describeProducers}, {@code kafka-transactions.sh describe-producers}):
 * the producers a partition this broker leads remembers — id, epoch, last sequence, last timestamp,
 * the coordinator epoch of its last marker and the first offset of its open transaction (-1 if none);
 * NOT_LEADER_OR_FOLLOWER for a partition led elsewhere, UNKNOWN_TOPIC_OR_PARTITION for one that does
 * not exist, as Kafka answers.
 */
public final class DescribeProducersHandler extends AllVersionsHandler {
    private final BrokerContext broker;

    public DescribeProducersHandler(BrokerContext broker) {
        super(ApiKeys.DESCRIBE_PRODUCERS);
        this.broker = broker;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        DescribeProducersRequestData data = ((DescribeProducersRequest) request).data();
        DescribeProducersResponseData out = new DescribeProducersResponseData();
        for (DescribeProducersRequestData.TopicRequest topic : data.topics()) {
            DescribeProducersResponseData.TopicResponse t = new DescribeProducersResponseData.TopicResponse().setName(topic.name());
            // READ on the topic, as Kafka checks
            boolean readable = broker.authorizer().authorize(context, org.apache.kafka.common.acl.AclOperation.READ,
                    org.apache.kafka.common.resource.ResourceType.TOPIC, topic.name());
            for (int partition : topic.partitionIndexes()) {
                t.partitions().add(readable ? describe(new TopicPartition(topic.name(), partition))
                        : new DescribeProducersResponseData.PartitionResponse().setPartitionIndex(partition)
                                .setErrorCode(Errors.TOPIC_AUTHORIZATION_FAILED.code()));
            }
            out.topics().add(t);
        }
        return CompletableFuture.completedFuture(new DescribeProducersResponse(out));
    }

    private DescribeProducersResponseData.PartitionResponse describe(TopicPartition tp) {
        DescribeProducersResponseData.PartitionResponse r = new DescribeProducersResponseData.PartitionResponse()
                .setPartitionIndex(tp.partition());
        var info = broker.topics().get(tp.topic());
        if (info.isEmpty() || tp.partition() < 0 || tp.partition() >= info.get().partitions()) {
            return r.setErrorCode(Errors.UNKNOWN_TOPIC_OR_PARTITION.code());
        }
        var cluster = broker.replicaManager().cluster();
        if (cluster != null && !cluster.isLeader(tp)) {
            return r.setErrorCode(Errors.NOT_LEADER_OR_FOLLOWER.code());
        }
        PartitionLog log;
        try {
            log = broker.replicaManager().log(tp);
        } catch (RuntimeException e) {
            Errors error = Errors.forException(e);
            return r.setErrorCode(error.code()).setErrorMessage(e.getMessage());
        }
        for (ProducerStateEntry e : log.activeProducers().values()) {
            r.activeProducers().add(new DescribeProducersResponseData.ProducerState()
                    .setProducerId(e.producerId())
                    .setProducerEpoch(e.producerEpoch())
                    .setLastSequence(e.lastSeq())
                    .setLastTimestamp(e.lastTimestamp())
                    .setCoordinatorEpoch(e.coordinatorEpoch())
                    .setCurrentTxnStartOffset(e.inTransaction() ? e.currentTxnFirstOffset() : -1L));
        }
        return r;
    }
}
