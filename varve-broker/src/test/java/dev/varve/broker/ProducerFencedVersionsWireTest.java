package dev.varve.broker;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.message.AddOffsetsToTxnRequestData;
import org.apache.kafka.common.message.EndTxnRequestData;
import org.apache.kafka.common.message.InitProducerIdRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AddOffsetsToTxnRequest;
import org.apache.kafka.common.requests.AddOffsetsToTxnResponse;
import org.apache.kafka.common.requests.AddPartitionsToTxnRequest;
import org.apache.kafka.common.requests.AddPartitionsToTxnResponse;
import org.apache.kafka.common.requests.EndTxnRequest;
import org.apache.kafka.common.requests.EndTxnResponse;
import org.apache.kafka.common.requests.InitProducerIdRequest;
import org.apache.kafka.common.requests.InitProducerIdResponse;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A fenced producer's requests to the transaction coordinator at every version: PRODUCER_FENCED from
 * the versions that announce it (KIP-588: InitProducerId v4, AddPartitionsToTxn v2, AddOffsetsToTxn v2,
 * EndTxn v2), INVALID_PRODUCER_EPOCH below them, as Kafka answers. Clients of the older versions
 * (kafkajs 2.2.4 speaks EndTxn v1) do not know error 90.
 */
class ProducerFencedVersionsWireTest {
    private static final String ID = "fenced-app";
    private static final TopicPartition TP = new TopicPartition("orders", 0);

    @TempDir
    File dir;

    @Test
    void aFencedProducerGetsProducerFencedOnlyFromTheVersionsThatKnowIt() throws Exception {
        try (Broker broker = Broker.start(BrokerConfig.from(Map.of("listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", dir.getAbsolutePath(), "transaction.state.log.num.partitions", "2",
                "offsets.topic.num.partitions", "2")));
             RawKafkaClient c = new RawKafkaClient(broker.boundAddresses().get(0))) {
            broker.context().createTopic(TP.topic(), 1, Map.of());
            InitProducerIdResponse first = init(c, (short) 4, -1, (short) -1);
            long producerId = first.data().producerId();
            short fenced = first.data().producerEpoch();
            // Two more instances: the epoch moves past both the first one's epoch and the one after it.
            init(c, (short) 4, -1, (short) -1);
            short current = init(c, (short) 4, -1, (short) -1).data().producerEpoch();
            assertThat(current).isEqualTo((short) (fenced + 2));

            for (short v = ApiKeys.END_TXN.oldestVersion(); v <= 4; v++) {
                EndTxnResponse r = c.send(new EndTxnRequest.Builder(new EndTxnRequestData().setTransactionalId(ID)
                        .setProducerId(producerId).setProducerEpoch(fenced).setCommitted(true), false), v);
                assertThat(r.error()).as("EndTxn v%d", v).isEqualTo(v < 2 ? Errors.INVALID_PRODUCER_EPOCH : Errors.PRODUCER_FENCED);
            }
            for (short v = ApiKeys.ADD_PARTITIONS_TO_TXN.oldestVersion(); v <= 3; v++) {
                AddPartitionsToTxnResponse r = c.send(AddPartitionsToTxnRequest.Builder.forClient(ID, producerId, fenced,
                        List.of(TP)), v);
                assertThat(r.errors().get(AddPartitionsToTxnResponse.V3_AND_BELOW_TXN_ID).get(TP)).as("AddPartitionsToTxn v%d", v)
                        .isEqualTo(v < 2 ? Errors.INVALID_PRODUCER_EPOCH : Errors.PRODUCER_FENCED);
            }
            for (short v = ApiKeys.ADD_OFFSETS_TO_TXN.oldestVersion(); v <= ApiKeys.ADD_OFFSETS_TO_TXN.latestVersion(); v++) {
                AddOffsetsToTxnResponse r = c.send(new AddOffsetsToTxnRequest.Builder(new AddOffsetsToTxnRequestData()
                        .setTransactionalId(ID).setProducerId(producerId).setProducerEpoch(fenced).setGroupId("g")), v);
                assertThat(Errors.forCode(r.data().errorCode())).as("AddOffsetsToTxn v%d", v)
                        .isEqualTo(v < 2 ? Errors.INVALID_PRODUCER_EPOCH : Errors.PRODUCER_FENCED);
            }
            // A returning producer (KIP-360, v3+) that states an epoch two behind the current one is fenced.
            for (short v = 3; v <= ApiKeys.INIT_PRODUCER_ID.latestVersion(); v++) {
                InitProducerIdResponse r = c.send(new InitProducerIdRequest.Builder(new InitProducerIdRequestData()
                        .setTransactionalId(ID).setTransactionTimeoutMs(60_000)
                        .setProducerId(producerId).setProducerEpoch(fenced)), v);
                assertThat(r.error()).as("InitProducerId v%d", v)
                        .isEqualTo(v < 4 ? Errors.INVALID_PRODUCER_EPOCH : Errors.PRODUCER_FENCED);
            }
            // The current instance is unaffected.
            EndTxnResponse ok = c.send(new EndTxnRequest.Builder(new EndTxnRequestData().setTransactionalId(ID)
                    .setProducerId(producerId).setProducerEpoch(current).setCommitted(false), false), (short) 1);
            assertThat(ok.error()).as("EndTxn v1 of the current epoch, no transaction open").isEqualTo(Errors.INVALID_TXN_STATE);
        }
    }

    /** InitProducerId for {@link #ID}, retried while the coordinator loads or finishes a previous step. */
    private static InitProducerIdResponse init(RawKafkaClient c, short version, long producerId, short epoch) throws Exception {
        long deadline = System.currentTimeMillis() + 20_000;
        while (true) {
            InitProducerIdResponse r = c.send(new InitProducerIdRequest.Builder(new InitProducerIdRequestData()
                    .setTransactionalId(ID).setTransactionTimeoutMs(60_000)
                    .setProducerId(producerId).setProducerEpoch(epoch)), version);
            if (r.error() == Errors.NONE) {
                return r;
            }
            assertThat(r.error().exception()).as("InitProducerId: %s", r.error())
                    .isInstanceOf(org.apache.kafka.common.errors.RetriableException.class);
            assertThat(System.currentTimeMillis()).as("InitProducerId retried for 20 s: %s", r.error()).isLessThan(deadline);
            Thread.sleep(50);
        }
    }
}
