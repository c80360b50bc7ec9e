package dev.varve.broker.cluster;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.message.AddPartitionsToTxnRequestData;
import org.apache.kafka.common.message.AddPartitionsToTxnResponseData;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.AddPartitionsToTxnRequest;
import org.apache.kafka.common.requests.AddPartitionsToTxnResponse;
import org.apache.kafka.common.utils.Time;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * Partition leaders' AddPartitionsToTxn (v4+, the broker versions) to transaction coordinators on other
 * brokers: a verification of, or (transactions V2) an add of, the partitions of a producer's first
 * transactional write (KIP-890). One entry per transactional id per request, as the request is keyed
 * by it; each check completes with the coordinator's code per partition, or with the network's
 * (NETWORK_EXCEPTION and the like) for all of them.
 */
public final class AddPartitionsChannel extends InterBrokerChannel<AddPartitionsChannel.Pending> {
    private static final int MAX_BATCH = 500;

    /** One producer's question. */
    public record Check(String transactionalId, long producerId, short producerEpoch, Set<TopicPartition> partitions,
                        boolean verifyOnly) {
    }

    record Pending(Check check, CompletableFuture<Map<TopicPartition, Errors>> result) {
    }

    public AddPartitionsChannel(int localId, ClusterReplicaManager replicas, String listenerName, int timeoutMs, Time time) {
        super("add-partitions-to-txn", localId, replicas, listenerName, timeoutMs, time);
    }

    /** Sends {@code check} to the coordinator on broker {@code brokerId}. */
    public CompletableFuture<Map<TopicPartition, Errors>> send(int brokerId, Check check) {
        CompletableFuture<Map<TopicPartition, Errors>> f = new CompletableFuture<>();
        enqueue(brokerId, new Pending(check, f));
        return f;
    }

    @Override
    protected int maxBatch() {
        return MAX_BATCH;
    }

    @Override
    protected List<Pending> select(List<Pending> batch, Consumer<Pending> later) {
        Set<String> ids = new HashSet<>();
        List<Pending> now = new ArrayList<>();
        for (Pending p : batch) {
            if (ids.add(p.check().transactionalId())) {
                now.add(p);
            } else {
                later.accept(p);
            }
        }
        return now;
    }

    @Override
    protected AbstractRequest.Builder<?> request(List<Pending> items) {
        AddPartitionsToTxnRequestData.AddPartitionsToTxnTransactionCollection txns =
                new AddPartitionsToTxnRequestData.AddPartitionsToTxnTransactionCollection();
        for (Pending p : items) {
            Check c = p.check();
            AddPartitionsToTxnRequestData.AddPartitionsToTxnTopicCollection topics =
                    new AddPartitionsToTxnRequestData.AddPartitionsToTxnTopicCollection();
            for (TopicPartition tp : c.partitions()) {
                AddPartitionsToTxnRequestData.AddPartitionsToTxnTopic t = topics.find(tp.topic());
                if (t == null) {
                    t = new AddPartitionsToTxnRequestData.AddPartitionsToTxnTopic().setName(tp.topic());
                    topics.add(t);
                }
                t.partitions().add(tp.partition());
            }
            txns.add(new AddPartitionsToTxnRequestData.AddPartitionsToTxnTransaction()
                    .setTransactionalId(c.transactionalId()).setProducerId(c.producerId())
                    .setProducerEpoch(c.producerEpoch()).setVerifyOnly(c.verifyOnly()).setTopics(topics));
        }
        return AddPartitionsToTxnRequest.Builder.forBroker(txns);
    }

    @Override
    protected void answer(List<Pending> items, AbstractResponse response) {
        if (!(response instanceof AddPartitionsToTxnResponse body)) {
            fail(items, Errors.NETWORK_EXCEPTION);
            return;
        }
        AddPartitionsToTxnResponseData data = body.data();
        if (data.errorCode() != Errors.NONE.code()) {
            fail(items, Errors.forCode(data.errorCode()));
            return;
        }
        for (Pending p : items) {
            AddPartitionsToTxnResponseData.AddPartitionsToTxnResult r =
                    data.resultsByTransaction().find(p.check().transactionalId());
            Map<TopicPartition, Errors> out = new HashMap<>();
            for (TopicPartition tp : p.check().partitions()) {
                out.put(tp, Errors.UNKNOWN_SERVER_ERROR);
            }
            if (r != null) {
                for (AddPartitionsToTxnResponseData.AddPartitionsToTxnTopicResult t : r.topicResults()) {
                    for (AddPartitionsToTxnResponseData.AddPartitionsToTxnPartitionResult pr : t.resultsByPartition()) {
                        TopicPartition tp = new TopicPartition(t.name(), pr.partitionIndex());
                        if (out.containsKey(tp)) {
                            out.put(tp, Errors.forCode(pr.partitionErrorCode()));
                        }
                    }
                }
            }
            p.result().complete(out);
        }
    }

    @Override
    protected void fail(List<Pending> items, Errors error) {
        for (Pending p : items) {
            Map<TopicPartition, Errors> out = new HashMap<>();
            p.check().partitions().forEach(tp -> out.put(tp, error));
            p.result().complete(out);
        }
    }
}
