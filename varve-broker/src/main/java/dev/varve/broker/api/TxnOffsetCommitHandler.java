package dev.varve.broker.api;

import dev.varve.broker.BrokerContext;
import dev.varve.broker.TopicRegistry.TopicInfo;
import dev.varve.broker.group.GroupRecords;
import dev.varve.broker.group.TransactionalOffsets;
import dev.varve.broker.group.TxnOffsetCommitVerifier;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.TxnOffsetCommitRequestData;
import org.apache.kafka.common.message.TxnOffsetCommitResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.common.requests.TxnOffsetCommitRequest;
import org.apache.kafka.common.requests.TxnOffsetCommitResponse;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * TxnOffsetCommit: a transactional producer's offsets for a group, pending until its transaction ends
 * (see {@link TransactionalOffsets}). As Kafka answers it: partitions of unknown topics get
 * UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID when named by id, v6+), metadata over
 * {@code offset.metadata.max.bytes} OFFSET_METADATA_TOO_LARGE; the rest are written together as one
 * transactional batch, or not at all with one error (INVALID_GROUP_ID for an empty group id, the
 * group's or the write's). The producer is checked against its transaction by the
 * {@link TxnOffsetCommitVerifier} first.
 */
public final class TxnOffsetCommitHandler extends AllVersionsHandler {
    private final BrokerContext broker;
    private final TransactionalOffsets offsets;
    private final TxnOffsetCommitVerifier verifier;

    public TxnOffsetCommitHandler(BrokerContext broker, TransactionalOffsets offsets, TxnOffsetCommitVerifier verifier) {
        super(ApiKeys.TXN_OFFSET_COMMIT);
        this.broker = broker;
        this.offsets = offsets;
        this.verifier = verifier;
    }

    private record Slot(TxnOffsetCommitResponseData.TxnOffsetCommitResponsePartition response, TopicPartition tp) {
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        TxnOffsetCommitRequestData req = ((TxnOffsetCommitRequest) request).data();
        TxnOffsetCommitResponseData out = new TxnOffsetCommitResponseData();
        Map<TopicPartition, GroupRecords.OffsetValue> valid = new LinkedHashMap<>();
        List<Slot> pending = new ArrayList<>();
        for (TxnOffsetCommitRequestData.TxnOffsetCommitRequestTopic topic : req.topics()) {
            boolean byId = request.version() >= 6;
            Optional<TopicInfo> info = byId ? broker.topics().get(topic.topicId()) : broker.topics().get(topic.name());
            TxnOffsetCommitResponseData.TxnOffsetCommitResponseTopic rt = new TxnOffsetCommitResponseData.TxnOffsetCommitResponseTopic()
                    .setName(topic.name() == null ? "" : topic.name())
                    .setTopicId(topic.topicId() == null ? Uuid.ZERO_UUID : topic.topicId());
            for (TxnOffsetCommitRequestData.TxnOffsetCommitRequestPartition p : topic.partitions()) {
                TxnOffsetCommitResponseData.TxnOffsetCommitResponsePartition rp =
                        new TxnOffsetCommitResponseData.TxnOffsetCommitResponsePartition().setPartitionIndex(p.partitionIndex());
                rt.partitions().add(rp);
                String name = info.map(TopicInfo::name).orElse(byId ? null : topic.name());
                if (name != null && !broker.authorizer().authorize(context, org.apache.kafka.common.acl.AclOperation.READ,
                        org.apache.kafka.common.resource.ResourceType.TOPIC, name)) {
                    // READ on the topic (the transactional id and group: AuthorizingHandler)
                    rp.setErrorCode(Errors.TOPIC_AUTHORIZATION_FAILED.code());
                } else if (info.isEmpty()) {
                    rp.setErrorCode((byId ? Errors.UNKNOWN_TOPIC_ID : Errors.UNKNOWN_TOPIC_OR_PARTITION).code());
                } else if (p.partitionIndex() < 0 || p.partitionIndex() >= info.get().partitions()) {
                    rp.setErrorCode(Errors.UNKNOWN_TOPIC_OR_PARTITION.code());
                } else {
                    TopicPartition tp = new TopicPartition(info.get().name(), p.partitionIndex());
                    valid.put(tp, new GroupRecords.OffsetValue(p.committedOffset(), p.committedLeaderEpoch(),
                            p.committedMetadata(), 0));
                    pending.add(new Slot(rp, tp));
                }
            }
            out.topics().add(rt);
        }
        if (valid.isEmpty()) {
            return CompletableFuture.completedFuture(new TxnOffsetCommitResponse(out));
        }
        if (req.groupId() == null || req.groupId().isEmpty()) {
            pending.forEach(s -> s.response().setErrorCode(Errors.INVALID_GROUP_ID.code()));
            return CompletableFuture.completedFuture(new TxnOffsetCommitResponse(out));
        }
        return verifier.verify(req.transactionalId(), req.producerId(), req.producerEpoch(), req.groupId(), request.version())
                .thenCompose(verified -> verified.error() != Errors.NONE
                        ? CompletableFuture.completedFuture(errors(valid, verified.error()))
                        : offsets.commitTransactional(req.groupId(), req.producerId(), req.producerEpoch(),
                                req.generationIdOrMemberEpoch(), req.memberId(), req.groupInstanceId(), valid,
                                verified.guard()))
                .thenApply(result -> {
                    pending.forEach(s -> s.response().setErrorCode(
                            result.getOrDefault(s.tp(), Errors.UNKNOWN_SERVER_ERROR).code()));
                    return new TxnOffsetCommitResponse(out);
                });
    }

    private static Map<TopicPartition, Errors> errors(Map<TopicPartition, ?> partitions, Errors error) {
        Map<TopicPartition, Errors> out = new LinkedHashMap<>();
        partitions.keySet().forEach(tp -> out.put(tp, error));
        return out;
    }
}
