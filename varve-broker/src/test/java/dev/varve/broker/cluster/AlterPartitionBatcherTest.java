package dev.varve.broker.cluster;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.NotControllerException;
import org.apache.kafka.common.message.AlterPartitionRequestData;
import org.apache.kafka.common.message.AlterPartitionResponseData;
import org.apache.kafka.common.protocol.Errors;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

import static org.assertj.core.api.Assertions.assertThat;

/** ISR changes proposed while a request is in flight go out together in the next one; answers reach each change. */
class AlterPartitionBatcherTest {
    private final List<AlterPartitionRequestData> sent = new ArrayList<>();
    private final List<CompletableFuture<ControllerChannel.Reply>> replies = new ArrayList<>();
    private final AlterPartitionBatcher batcher = new AlterPartitionBatcher(1, () -> 7L, request -> {
        CompletableFuture<ControllerChannel.Reply> f = new CompletableFuture<>();
        synchronized (sent) {
            sent.add(request);
            replies.add(f);
        }
        return f;
    });
    private final Map<Integer, Errors> answered = new ConcurrentHashMap<>();
    private final Uuid topic = Uuid.randomUuid();

    private void submit(int partition) {
        batcher.submit(topic, new AlterPartitionRequestData.PartitionData().setPartitionIndex(partition).setLeaderEpoch(3),
                (error, answer) -> {
                    assertThat(answer == null).isEqualTo(error != Errors.NONE);
                    answered.put(partition, error);
                });
    }

    /** The controller's answer: NONE for every partition of the request except {@code refused}. */
    private static ControllerChannel.Reply answer(AlterPartitionRequestData req, int refused) {
        AlterPartitionResponseData resp = new AlterPartitionResponseData();
        for (AlterPartitionRequestData.TopicData t : req.topics()) {
            AlterPartitionResponseData.TopicData tr = new AlterPartitionResponseData.TopicData().setTopicId(t.topicId());
            for (AlterPartitionRequestData.PartitionData p : t.partitions()) {
                tr.partitions().add(new AlterPartitionResponseData.PartitionData().setPartitionIndex(p.partitionIndex())
                        .setErrorCode((p.partitionIndex() == refused ? Errors.FENCED_LEADER_EPOCH : Errors.NONE).code()));
            }
            resp.topics().add(tr);
        }
        return new ControllerChannel.Reply(resp, 42);
    }

    private static int partitions(AlterPartitionRequestData req) {
        return req.topics().stream().mapToInt(t -> t.partitions().size()).sum();
    }

    /**
     * Every change of one request is answered inside one run of the answer scope, so the replica manager
     * wakes waiting fetches once per request (it holds wakes back in it), not once per partition.
     */
    @Test
    void theAnswersOfOneRequestRunInsideOneScope() {
        List<Integer> answeredPerScope = new ArrayList<>();
        batcher.answerScope(answering -> {
            int before = answered.size();
            answering.run();
            answeredPerScope.add(answered.size() - before);
        });
        submit(0);
        for (int p = 1; p <= 500; p++) {
            submit(p);
        }
        replies.get(0).complete(answer(sent.get(0), -1));
        replies.get(1).complete(answer(sent.get(1), 7));
        assertThat(answeredPerScope).containsExactly(1, 500);
        assertThat(sent).hasSize(2);
    }

    @Test
    void changesWaitingForTheRequestInFlightShareTheNextOne() {
        submit(0);
        assertThat(sent).hasSize(1);
        for (int p = 1; p <= 1000; p++) {
            submit(p);
        }
        assertThat(sent).as("one request in flight").hasSize(1);
        replies.get(0).complete(answer(sent.get(0), -1));
        assertThat(sent).hasSize(2);
        assertThat(partitions(sent.get(1))).as("all 1,000 waiting changes in one request").isEqualTo(1000);
        assertThat(sent.get(1).brokerId()).isEqualTo(1);
        assertThat(sent.get(1).brokerEpoch()).isEqualTo(7L);
        replies.get(1).complete(answer(sent.get(1), 500));
        assertThat(answered).hasSize(1001);
        assertThat(answered.get(500)).isEqualTo(Errors.FENCED_LEADER_EPOCH);
        assertThat(answered.entrySet().stream().filter(e -> e.getKey() != 500)).allSatisfy(e ->
                assertThat(e.getValue()).isEqualTo(Errors.NONE));
        assertThat(batcher.requestsSent()).isEqualTo(2);
    }

    @Test
    void aPartitionAppearsOncePerRequestAndAFailedRequestAnswersEveryChange() {
        submit(0);
        submit(1);
        submit(1); // a second change of partition 1 waits for the request after
        replies.get(0).completeExceptionally(new NotControllerException("moving"));
        assertThat(answered.get(0)).isEqualTo(Errors.NOT_CONTROLLER);
        assertThat(sent).hasSize(2);
        assertThat(partitions(sent.get(1))).isEqualTo(1);
        replies.get(1).complete(answer(sent.get(1), -1));
        assertThat(sent).hasSize(3);
        assertThat(partitions(sent.get(2))).isEqualTo(1);
        replies.get(2).complete(answer(sent.get(2), -1));
        assertThat(answered).containsEntry(1, Errors.NONE);
        assertThat(batcher.requestsSent()).isEqualTo(3);
    }
}
