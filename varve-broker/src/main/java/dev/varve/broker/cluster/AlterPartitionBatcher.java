package dev.varve.broker.cluster;

import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.AlterPartitionRequestData;
import org.apache.kafka.common.message.AlterPartitionResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.LongSupplier;

/**
 * Coalesces a broker's ISR changes into AlterPartition requests with many partitions, as Kafka's
 * AlterPartitionManager does: at most one request is in flight; changes proposed meanwhile wait and
 * all go in the next request. A leader that shrinks the ISR of 1,000 partitions after a follower died
 * sends a handful of requests, not 1,000 (and the controller decides each request as one command).
 *
 * <p>Each change is answered through its own callback with the partition's error and, when accepted,
 * its new state; a failed request answers every change in it with that error. A partition appears at
 * most once per request: a second change of the same partition waits for the next one.
 *
 * <p>Thread-safe; callbacks run on the controller channel's threads, outside this object's lock.
 */
public final class AlterPartitionBatcher {
    /** At most this many partitions per request (the controller decides one request in one entry). */
    static final int MAX_PARTITIONS_PER_REQUEST = 5_000;

    /** Receives the controller's answer to one partition's change. */
    public interface Answer {
        /** @param answer the partition's accepted state when {@code error} is NONE, else null */
        void onAnswer(Errors error, AlterPartitionResponseData.PartitionData answer);
    }

    private record Item(TopicIdPartition key, AlterPartitionRequestData.PartitionData data, Answer answer) {
    }

    private final int brokerId;
    private final LongSupplier brokerEpoch;
    private final java.util.function.Function<AlterPartitionRequestData, java.util.concurrent.CompletableFuture<ControllerChannel.Reply>> send;
    // guarded by "this"
    private final List<Item> queued = new ArrayList<>();
    private boolean inFlight;
    private long requestsSent;

    AlterPartitionBatcher(int brokerId, LongSupplier brokerEpoch, ControllerChannel controller) {
        this(brokerId, brokerEpoch, request -> controller.send(ApiKeys.ALTER_PARTITION, request));
    }

    /** @param send sends one AlterPartition request to the active controller (the simulation passes its network) */
    public AlterPartitionBatcher(int brokerId, LongSupplier brokerEpoch,
                          java.util.function.Function<AlterPartitionRequestData, java.util.concurrent.CompletableFuture<ControllerChannel.Reply>> send) {
        this.brokerId = brokerId;
        this.brokerEpoch = brokerEpoch;
        this.send = send;
    }

    /** Queues one partition's proposed ISR; sends at once when no request is in flight. */
    public void submit(Uuid topicId, AlterPartitionRequestData.PartitionData data, Answer answer) {
        synchronized (this) {
            queued.add(new Item(new TopicIdPartition(topicId, data.partitionIndex(), null), data, answer));
        }
        maybeSend();
    }

    /** AlterPartition requests sent so far (tests and metrics). */
    synchronized long requestsSent() {
        return requestsSent;
    }

    private void maybeSend() {
        List<Item> batch = new ArrayList<>();
        AlterPartitionRequestData request;
        synchronized (this) {
            if (inFlight || queued.isEmpty()) {
                return;
            }
            Set<TopicIdPartition> inBatch = new HashSet<>();
            for (Iterator<Item> it = queued.iterator(); it.hasNext() && batch.size() < MAX_PARTITIONS_PER_REQUEST; ) {
                Item item = it.next();
                if (inBatch.add(item.key())) {
                    batch.add(item);
                    it.remove();
                }
            }
            inFlight = true;
            requestsSent++;
            request = new AlterPartitionRequestData().setBrokerId(brokerId).setBrokerEpoch(brokerEpoch.getAsLong());
            Map<Uuid, AlterPartitionRequestData.TopicData> topics = new LinkedHashMap<>();
            for (Item item : batch) {
                topics.computeIfAbsent(item.key().topicId(), id -> {
                    AlterPartitionRequestData.TopicData t = new AlterPartitionRequestData.TopicData().setTopicId(id);
                    request.topics().add(t);
                    return t;
                }).partitions().add(item.data().duplicate());
            }
        }
        send.apply(request).whenComplete((reply, error) -> {
            try {
                answerScope.accept(() -> answer(batch, reply, error));
            } finally {
                synchronized (this) {
                    inFlight = false;
                }
                maybeSend();
            }
        });
    }

    private volatile java.util.function.Consumer<Runnable> answerScope = Runnable::run;

    /** Runs the answering of each request's changes (all of them) inside {@code scope}: the replica manager wakes waiting fetches once per answer, not once per partition. */
    void answerScope(java.util.function.Consumer<Runnable> scope) {
        this.answerScope = scope;
    }

    private static void answer(List<Item> batch, ControllerChannel.Reply reply, Throwable error) {
        Errors requestError;
        Map<TopicIdPartition, AlterPartitionResponseData.PartitionData> answers = new HashMap<>();
        if (error != null) {
            requestError = Errors.forException(error);
        } else {
            AlterPartitionResponseData resp = (AlterPartitionResponseData) reply.response();
            requestError = Errors.forCode(resp.errorCode());
            for (AlterPartitionResponseData.TopicData t : resp.topics()) {
                for (AlterPartitionResponseData.PartitionData p : t.partitions()) {
                    answers.put(new TopicIdPartition(t.topicId(), p.partitionIndex(), null), p);
                }
            }
        }
        for (Item item : batch) {
            if (requestError != Errors.NONE) {
                item.answer().onAnswer(requestError, null);
                continue;
            }
            AlterPartitionResponseData.PartitionData p = answers.get(item.key());
            if (p == null) {
                item.answer().onAnswer(Errors.UNKNOWN_SERVER_ERROR, null);
            } else {
                Errors e = Errors.forCode(p.errorCode());
                item.answer().onAnswer(e, e == Errors.NONE ? p : null);
            }
        }
    }
}
