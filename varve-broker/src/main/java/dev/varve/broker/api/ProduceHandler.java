package dev.varve.broker.api;

import dev.varve.broker.BrokerContext;
import dev.varve.broker.TopicRegistry.TopicInfo;
import dev.varve.storage.LogAppendInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.InvalidRequiredAcksException;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.message.ProduceResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.ProduceRequest;
import org.apache.kafka.common.requests.ProduceResponse;
import org.apache.kafka.common.requests.RequestContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.varve.storage.VerificationGuard;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.HashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * Produce: appends each partition's batches all-or-nothing and answers per partition. acks=1 answers
 * after the leader's append; acks=-1 once every in-sync replica has the batches (at once on a single
 * node, whose append is committed), or with NOT_ENOUGH_REPLICAS_AFTER_APPEND / REQUEST_TIMED_OUT; acks=-1 to a
 * topic whose min.insync.replicas exceeds the single node's ISR of one gets NOT_ENOUGH_REPLICAS and
 * appends nothing, as with Kafka; acks=0 gets no response (when a partition fails, the connection is
 * closed instead, as Kafka does). Each partition's record set must be exactly one v2 batch (Kafka's
 * check, with Kafka's error codes) before the log validates it. Topics are named (v3-12) or identified (v13+).
 */
public final class ProduceHandler extends AllVersionsHandler {
    private static final Logger LOG = LoggerFactory.getLogger(ProduceHandler.class);
    /** A single node's ISR of every partition: itself. */
    private static final int IN_SYNC_REPLICAS = 1;
    private final BrokerContext broker;
    private final dev.varve.broker.TxnPartitionVerifier verifier;

    public ProduceHandler(BrokerContext broker) {
        this(broker, null);
    }

    /** With {@code verifier} (may be null: no transaction verification) for transactional writes (KIP-890). */
    public ProduceHandler(BrokerContext broker, dev.varve.broker.TxnPartitionVerifier verifier) {
        super(ApiKeys.PRODUCE);
        this.broker = broker;
        this.verifier = verifier;
    }

    /** What verification left for the appends: the guards to present, and the partitions refused before any append. */
    private record Verified(Map<TopicPartition, VerificationGuard> guards, Map<TopicPartition, Errors> refused) {
        static final Verified NOTHING = new Verified(Map.of(), Map.of());
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        return start(context, request).response();
    }

    /**
     * Appends at once, or, when a transactional batch waits for the coordinator (KIP-890), once it has
     * answered; {@code applied} completes then, and the connection's next request waits for it (a
     * pipelined batch overtaking its predecessor would be refused as out of sequence).
     */
    @Override
    public Started start(RequestContext context, AbstractRequest request) {
        ProduceRequest req = (ProduceRequest) request;
        Verified started = startVerification(context, req);
        if (started.guards().values().stream().allMatch(g -> g == VerificationGuard.NONE)) {
            return new Started(append(context, req, started), null);
        }
        Set<TopicPartition> asked = new HashSet<>();
        long producerId = -1;
        short epoch = -1;
        for (Map.Entry<TopicPartition, VerificationGuard> e : started.guards().entrySet()) {
            if (e.getValue() != VerificationGuard.NONE) {
                asked.add(e.getKey());
                producerId = producerOf(req, e.getKey())[0];
                epoch = (short) producerOf(req, e.getKey())[1];
            }
        }
        CompletableFuture<Void> applied = new CompletableFuture<>();
        CompletableFuture<AbstractResponse> response = verifier.addOrVerify(req.transactionalId(), producerId, epoch, asked,
                        dev.varve.broker.TxnPartitionVerifier.Operation.forProduce(req.version()))
                .thenCompose(failed -> {
                    try {
                        if (failed.isEmpty()) {
                            return append(context, req, started);
                        }
                        Map<TopicPartition, Errors> refused = new HashMap<>(started.refused());
                        refused.putAll(failed);
                        return append(context, req, new Verified(started.guards(), refused));
                    } finally {
                        applied.complete(null);
                    }
                });
        response.whenComplete((r, e) -> applied.complete(null)); // the verification itself failed
        return new Started(response, applied);
    }

    /**
     * For each partition whose batch is transactional: the guard of a verification this leader starts
     * (NONE when the producer's transaction is already open there), or why it is refused at once. A
     * transactional batch in a request without a transactional id is refused as Kafka refuses it
     * (TRANSACTIONAL_ID_AUTHORIZATION_FAILED). Nothing when verification is off for the request's version.
     */
    private Verified startVerification(RequestContext context, ProduceRequest req) {
        if (verifier == null) {
            return Verified.NOTHING;
        }
        dev.varve.broker.TxnPartitionVerifier.Operation op =
                dev.varve.broker.TxnPartitionVerifier.Operation.forProduce(req.version());
        Map<TopicPartition, VerificationGuard> guards = new HashMap<>();
        Map<TopicPartition, Errors> refused = new HashMap<>();
        Long producer = null;
        for (ProduceRequestData.TopicProduceData topic : req.data().topicData()) {
            Optional<TopicInfo> info = topic.name() == null || topic.name().isEmpty()
                    ? broker.topics().get(topic.topicId()) : broker.topics().get(topic.name());
            if (info.isEmpty()) {
                continue;
            }
            if (!writable(context, info.get().name())) {
                continue;
            }
            for (ProduceRequestData.PartitionProduceData partition : topic.partitionData()) {
                if (!(partition.records() instanceof MemoryRecords records) || invalidRecords(partition, req.version()) != null) {
                    continue;
                }
                org.apache.kafka.common.record.internal.MutableRecordBatch batch = records.batches().iterator().next();
                if (!batch.isTransactional() || batch.isControlBatch() || !batch.hasProducerId()) {
                    continue;
                }
                TopicPartition tp = new TopicPartition(info.get().name(), partition.index());
                if (req.transactionalId() == null || req.transactionalId().isEmpty()) {
                    refused.put(tp, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
                    continue;
                }
                if (producer != null && producer != batch.producerId()) {
                    refused.put(tp, Errors.INVALID_PRODUCER_ID_MAPPING); // one producer per transactional request
                    continue;
                }
                producer = batch.producerId();
                if (!verifier.asks(op)) {
                    continue;
                }
                try {
                    guards.put(tp, verifier.startGuard(tp, batch.producerId(), batch.producerEpoch(), op));
                } catch (RuntimeException e) {
                    refused.put(tp, Errors.forException(e));
                }
            }
        }
        return guards.isEmpty() && refused.isEmpty() ? Verified.NOTHING : new Verified(guards, refused);
    }

    /** The producer id and epoch of {@code tp}'s batch in the request. */
    private long[] producerOf(ProduceRequest req, TopicPartition tp) {
        for (ProduceRequestData.TopicProduceData topic : req.data().topicData()) {
            Optional<TopicInfo> info = topic.name() == null || topic.name().isEmpty()
                    ? broker.topics().get(topic.topicId()) : broker.topics().get(topic.name());
            if (info.isPresent() && info.get().name().equals(tp.topic())) {
                for (ProduceRequestData.PartitionProduceData partition : topic.partitionData()) {
                    if (partition.index() == tp.partition() && partition.records() instanceof MemoryRecords records) {
                        var batch = records.batches().iterator().next();
                        return new long[]{batch.producerId(), batch.producerEpoch()};
                    }
                }
            }
        }
        throw new IllegalStateException(tp + " is not in the request");
    }

    private CompletableFuture<AbstractResponse> append(RequestContext context, ProduceRequest req, Verified verified) {
        short acks = req.acks();
        ProduceResponseData response = new ProduceResponseData();
        boolean validAcks = acks == 0 || acks == 1 || acks == -1;
        boolean clustered = broker.replicaManager().cluster() != null;
        java.util.List<CompletableFuture<?>> waits = new java.util.ArrayList<>();
        for (ProduceRequestData.TopicProduceData topic : req.data().topicData()) {
            Optional<TopicInfo> info = topic.name() == null || topic.name().isEmpty()
                    ? broker.topics().get(topic.topicId())
                    : broker.topics().get(topic.name());
            ProduceResponseData.TopicProduceResponse topicResponse = new ProduceResponseData.TopicProduceResponse()
                    .setName(topic.name())
                    .setTopicId(topic.topicId() == null ? Uuid.ZERO_UUID : topic.topicId());
            for (ProduceRequestData.PartitionProduceData partition : topic.partitionData()) {
                org.apache.kafka.common.requests.ApiError invalidRecords;
                ProduceResponseData.PartitionProduceResponse pr = new ProduceResponseData.PartitionProduceResponse()
                        .setIndex(partition.index())
                        .setBaseOffset(-1)
                        .setLogAppendTimeMs(-1)
                        .setLogStartOffset(-1);
                String name = info.map(TopicInfo::name).orElse(topic.name() == null || topic.name().isEmpty() ? null : topic.name());
                if (!validAcks) {
                    pr.setErrorCode(Errors.INVALID_REQUIRED_ACKS.code());
                } else if (name != null && !writable(context, name)) {
                    // checked before existence, as in Kafka: who may not write learns nothing of the topic
                    pr.setErrorCode(Errors.TOPIC_AUTHORIZATION_FAILED.code());
                } else if (info.isEmpty()) {
                    pr.setErrorCode((topic.name() == null || topic.name().isEmpty()
                            ? Errors.UNKNOWN_TOPIC_ID : Errors.UNKNOWN_TOPIC_OR_PARTITION).code());
                } else if ((invalidRecords = invalidRecords(partition, req.version())) != null) {
                    pr.setErrorCode(invalidRecords.error().code()).setErrorMessage(invalidRecords.message());
                } else if (org.apache.kafka.common.internals.Topic.isInternal(info.get().name())) {
                    // only the group coordinator writes __consumer_offsets (its records are its state)
                    pr.setErrorCode(Errors.INVALID_TOPIC_EXCEPTION.code())
                            .setErrorMessage("Cannot append to internal topic " + info.get().name());
                } else if (!clustered && acks == -1 && minInsyncReplicas(info.get()) > IN_SYNC_REPLICAS) {
                    // acks=all promises min.insync.replicas copies; with fewer in sync, append nothing
                    pr.setErrorCode(Errors.NOT_ENOUGH_REPLICAS.code()).setErrorMessage("The topic requires "
                            + minInsyncReplicas(info.get()) + " in-sync replicas; " + IN_SYNC_REPLICAS + " in sync");
                } else if (verified.refused().containsKey(new TopicPartition(info.get().name(), partition.index()))) {
                    Errors refused = verified.refused().get(new TopicPartition(info.get().name(), partition.index()));
                    RuntimeException why = dev.varve.broker.TxnPartitionVerifier.exception(refused);
                    pr.setErrorCode(Errors.forException(why).code()).setErrorMessage(why.getMessage());
                } else {
                    TopicPartition tp = new TopicPartition(info.get().name(), partition.index());
                    dev.varve.broker.ReplicaManager.LeaderAppend appended = append(tp, partition, pr, req.version(), acks == -1,
                            verified.guards().get(tp));
                    if (acks == -1 && appended != null && appended.info().lastOffset() >= 0) {
                        // acks=all: answer once every ISR member has the batches (or why not)
                        waits.add(broker.replicaManager().awaitAck(tp, appended, req.timeout())
                                .thenAccept(error -> {
                                    if (error != Errors.NONE) {
                                        pr.setErrorCode(error.code()).setErrorMessage(error.message());
                                    }
                                }));
                    }
                }
                topicResponse.partitionResponses().add(pr);
            }
            response.responses().add(topicResponse);
        }
        if (acks == 0) {
            for (ProduceResponseData.TopicProduceResponse t : response.responses()) {
                for (ProduceResponseData.PartitionProduceResponse p : t.partitionResponses()) {
                    if (p.errorCode() != Errors.NONE.code()) {
                        // No response carries the error: as in Kafka, the connection is closed instead,
                        // so the client notices and refreshes its metadata.
                        return CompletableFuture.failedFuture(new org.apache.kafka.common.KafkaException("acks=0 produce to "
                                + t.name() + "-" + p.index() + " failed with " + Errors.forCode(p.errorCode())));
                    }
                }
            }
            return CompletableFuture.completedFuture(null);
        }
        if (waits.isEmpty()) {
            return CompletableFuture.completedFuture(new ProduceResponse(response));
        }
        return CompletableFuture.allOf(waits.toArray(CompletableFuture[]::new))
                .thenApply(v -> new ProduceResponse(response));
    }

    /**
     * Kafka's check of the record set's shape (its {@code ProduceRequest.validateRecords}, which Kafka's
     * broker runs before appending): exactly one whole v2 batch, no ZSTD before v7. Null when it
     * passes, so that the same input gets the same error code as from Kafka (INVALID_RECORD for an
     * empty or truncated record set or for several batches, CORRUPT_MESSAGE for an impossible size or
     * magic, UNSUPPORTED_COMPRESSION_TYPE).
     */
    private static org.apache.kafka.common.requests.ApiError invalidRecords(ProduceRequestData.PartitionProduceData partition,
                                                                            short version) {
        try {
            ProduceRequest.validateRecords(version, partition.records());
            return null;
        } catch (org.apache.kafka.common.errors.ApiException e) {
            return org.apache.kafka.common.requests.ApiError.fromThrowable(e);
        } catch (RuntimeException e) { // e.g. an unknown compression id (before v7 the check reads it)
            return new org.apache.kafka.common.requests.ApiError(Errors.INVALID_RECORD, "malformed record batch: " + e.getMessage());
        }
    }

    /** Whether the request's principal may WRITE the topic. */
    private boolean writable(RequestContext context, String topic) {
        return broker.authorizer().authorize(context, org.apache.kafka.common.acl.AclOperation.WRITE,
                org.apache.kafka.common.resource.ResourceType.TOPIC, topic);
    }

    /** The topic's min.insync.replicas: its override, else the broker's default. */
    private int minInsyncReplicas(TopicInfo topic) {
        String override = topic.configs().get(org.apache.kafka.common.config.TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG);
        return override != null ? Integer.parseInt(override.trim()) : broker.config().minInsyncReplicas();
    }

    private dev.varve.broker.ReplicaManager.LeaderAppend append(TopicPartition tp, ProduceRequestData.PartitionProduceData partition,
                                 ProduceResponseData.PartitionProduceResponse pr, short version, boolean acksAll,
                                 VerificationGuard guard) {
        try {
            if (!(partition.records() instanceof MemoryRecords records)) {
                throw new org.apache.kafka.common.errors.CorruptRecordException("records are missing");
            }
            dev.varve.broker.ReplicaManager.LeaderAppend appended = broker.replicaManager().appendAsLeader(tp, records, acksAll,
                    dev.varve.storage.AppendOrigin.CLIENT, guard);
            LogAppendInfo info = appended.info();
            if (!info.duplicate()) {
                broker.metrics().topics().produced(tp.topic(), info.numRecords(), records.sizeInBytes());
            }
            pr.setErrorCode(Errors.NONE.code())
                    .setBaseOffset(info.firstOffset())
                    .setLogAppendTimeMs(info.logAppendTimeMs())
                    .setLogStartOffset(version >= 5 ? broker.replicaManager().log(tp).logStartOffset() : -1);
            return appended;
        } catch (dev.varve.storage.RecordsRejectedException e) {
            // KIP-467: the records at fault, by index, so that a client fails those and not the others alike
            LOG.debug("append to {} refused: {}", tp, e.getMessage());
            pr.setErrorCode(e.error().code()).setErrorMessage(e.getMessage());
            if (version >= 8) {
                List<ProduceResponseData.BatchIndexAndErrorMessage> errors = new ArrayList<>();
                for (dev.varve.storage.RecordsRejectedException.RecordError r : e.recordErrors()) {
                    errors.add(new ProduceResponseData.BatchIndexAndErrorMessage().setBatchIndex(r.batchIndex())
                            .setBatchIndexErrorMessage(r.message()));
                }
                pr.setRecordErrors(errors);
            }
            broker.metrics().topics().produceFailed(tp.topic(),
                    partition.records() instanceof MemoryRecords r ? r.sizeInBytes() : 0);
            return null;
        } catch (RuntimeException e) {
            Errors error = Errors.forException(e);
            if (error == Errors.UNKNOWN_SERVER_ERROR) {
                LOG.error("append to {} failed", tp, e);
            } else {
                LOG.debug("append to {} refused: {}", tp, e.getMessage());
            }
            pr.setErrorCode(error.code()).setErrorMessage(e.getMessage());
            broker.metrics().topics().produceFailed(tp.topic(),
                    partition.records() instanceof MemoryRecords r ? r.sizeInBytes() : 0);
            return null;
        }
    }
}
