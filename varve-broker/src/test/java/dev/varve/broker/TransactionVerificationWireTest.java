package dev.varve.broker;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.message.AddPartitionsToTxnRequestData;
import org.apache.kafka.common.message.EndTxnRequestData;
import org.apache.kafka.common.message.FindCoordinatorRequestData;
import org.apache.kafka.common.message.InitProducerIdRequestData;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.requests.AddPartitionsToTxnRequest;
import org.apache.kafka.common.requests.AddPartitionsToTxnResponse;
import org.apache.kafka.common.requests.ApiVersionsRequest;
import org.apache.kafka.common.requests.ApiVersionsResponse;
import org.apache.kafka.common.requests.EndTxnRequest;
import org.apache.kafka.common.requests.EndTxnResponse;
import org.apache.kafka.common.requests.FindCoordinatorRequest;
import org.apache.kafka.common.requests.InitProducerIdRequest;
import org.apache.kafka.common.requests.InitProducerIdResponse;
import org.apache.kafka.common.requests.ProduceRequest;
import org.apache.kafka.common.requests.ProduceResponse;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * KIP-890 on the wire, against a node: a transactional write to a partition that is not in the
 * producer's transaction is refused with the code its Produce version knows and nothing is written
 * (part 1); transactions V2 (Produce v12, EndTxn v5) add the partition themselves and bump the epoch
 * at every end (part 2); ApiVersions announces {@code transaction.version}.
 */
class TransactionVerificationWireTest {
    @TempDir
    File dir;
    private Broker broker;
    private RawKafkaClient client;

    @BeforeEach
    void start() throws Exception {
        broker = Broker.start(BrokerConfig.from(Map.of("listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", dir.getAbsolutePath(), "transaction.state.log.num.partitions", "3")));
        broker.context().createTopic("t", 3, Map.of());
        client = new RawKafkaClient(broker.boundAddresses().get(0));
    }

    @AfterEach
    void stop() throws Exception {
        client.close();
        broker.close();
    }

    private InitProducerIdResponse init(String id) throws Exception {
        InitProducerIdResponse r = null;
        for (int attempt = 0; attempt < 100; attempt++) {
            client.send(new FindCoordinatorRequest.Builder(new FindCoordinatorRequestData().setKeyType((byte) 1).setKey(id)),
                    (short) 3);
            r = client.send(new InitProducerIdRequest.Builder(new InitProducerIdRequestData().setTransactionalId(id)
                    .setTransactionTimeoutMs(60_000)), (short) 4);
            if (r.error() == Errors.NONE) {
                return r;
            }
            Thread.sleep(50);
        }
        throw new AssertionError("InitProducerId of " + id + ": " + r.error());
    }

    private Errors produce(String id, long pid, short epoch, int seq, int partition, short version) throws Exception {
        ProduceRequestData.TopicProduceData topic = new ProduceRequestData.TopicProduceData().setName("t");
        topic.partitionData().add(new ProduceRequestData.PartitionProduceData().setIndex(partition)
                .setRecords(MemoryRecords.withTransactionalRecords(Compression.NONE, pid, epoch, seq,
                        new SimpleRecord(("r" + seq).getBytes()))));
        ProduceRequestData data = new ProduceRequestData().setAcks((short) -1).setTimeoutMs(5000).setTransactionalId(id);
        data.topicData().add(topic);
        ProduceResponse r = client.send(new ProduceRequest.Builder(version, version, data), version);
        return Errors.forCode(r.data().responses().iterator().next().partitionResponses().get(0).errorCode());
    }

    private long logEnd(int partition) {
        return broker.context().replicaManager().log(new TopicPartition("t", partition)).logEndOffset();
    }

    @Test
    void aTransactionalWriteOutsideTheTransactionIsRefusedAndWritesNothing() throws Exception {
        InitProducerIdResponse p = init("v1-app");
        long pid = p.data().producerId();
        short epoch = p.data().producerEpoch();
        // no AddPartitionsToTxn: refused, INVALID_TXN_STATE to a client before Produce v11, TRANSACTION_ABORTABLE from v11
        assertThat(produce("v1-app", pid, epoch, 0, 0, (short) 10)).isEqualTo(Errors.INVALID_TXN_STATE);
        assertThat(produce("v1-app", pid, epoch, 0, 0, (short) 11)).isEqualTo(Errors.TRANSACTION_ABORTABLE);
        assertThat(logEnd(0)).isZero();
        // without a transactional id in the request at all
        assertThat(produce(null, pid, epoch, 0, 0, (short) 11)).isEqualTo(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
        // added: the writes go in
        AddPartitionsToTxnResponse added = client.send(AddPartitionsToTxnRequest.Builder.forClient("v1-app", pid, epoch,
                List.of(new TopicPartition("t", 0))), (short) 3);
        assertThat(added.errors().get(AddPartitionsToTxnResponse.V3_AND_BELOW_TXN_ID).values()).containsOnly(Errors.NONE);
        assertThat(produce("v1-app", pid, epoch, 0, 0, (short) 11)).isEqualTo(Errors.NONE);
        assertThat(produce("v1-app", pid, epoch, 1, 0, (short) 11)).isEqualTo(Errors.NONE);
        assertThat(logEnd(0)).isEqualTo(2);
        // partition 1 was never added
        assertThat(produce("v1-app", pid, epoch, 0, 1, (short) 11)).isEqualTo(Errors.TRANSACTION_ABORTABLE);
        assertThat(logEnd(1)).isZero();
        EndTxnResponse end = client.send(new EndTxnRequest.Builder(new EndTxnRequestData().setTransactionalId("v1-app")
                .setProducerId(pid).setProducerEpoch(epoch).setCommitted(true), false), (short) 4);
        assertThat(end.error()).isEqualTo(Errors.NONE);
        // a late write of the committed transaction (its retry after the end, say) opens nothing
        long deadline = System.currentTimeMillis() + 10_000;
        while (broker.context().replicaManager().log(new TopicPartition("t", 0)).lastStableOffset() < 3
                && System.currentTimeMillis() < deadline) {
            Thread.sleep(20);
        }
        assertThat(produce("v1-app", pid, epoch, 2, 0, (short) 11)).isEqualTo(Errors.TRANSACTION_ABORTABLE);
        assertThat(logEnd(0)).isEqualTo(3); // the two records and the marker
    }

    @Test
    void transactionsV2AddThePartitionFromProduceAndBumpTheEpochAtEveryEnd() throws Exception {
        ApiVersionsResponse versions = client.send(new ApiVersionsRequest.Builder(), (short) 3);
        assertThat(versions.data().finalizedFeatures().find("transaction.version").maxVersionLevel()).isEqualTo((short) 2);
        InitProducerIdResponse p = init("v2-app");
        long pid = p.data().producerId();
        short epoch = p.data().producerEpoch();
        for (int txn = 0; txn < 3; txn++) {
            Errors produced = null;
            for (int attempt = 0; attempt < 100; attempt++) {
                // the previous end's markers may still be going out: the add answers CONCURRENT_TRANSACTIONS
                produced = produce("v2-app", pid, epoch, 0, 2, (short) 12);
                if (produced != Errors.CONCURRENT_TRANSACTIONS) {
                    break;
                }
                Thread.sleep(20);
            }
            assertThat(produced).as("txn %d", txn).isEqualTo(Errors.NONE);
            EndTxnResponse end = null;
            for (int attempt = 0; attempt < 100; attempt++) {
                end = client.send(new EndTxnRequest.Builder(new EndTxnRequestData().setTransactionalId("v2-app")
                        .setProducerId(pid).setProducerEpoch(epoch).setCommitted(txn != 1), true), (short) 5);
                if (end.error() != Errors.CONCURRENT_TRANSACTIONS) {
                    break;
                }
                Thread.sleep(20);
            }
            assertThat(end.error()).as("txn %d", txn).isEqualTo(Errors.NONE);
            assertThat(end.data().producerId()).isEqualTo(pid);
            assertThat(end.data().producerEpoch()).isEqualTo((short) (epoch + 1));
            // the old epoch is fenced from now on
            assertThat(produce("v2-app", pid, epoch, 1, 2, (short) 12)).isEqualTo(Errors.INVALID_PRODUCER_EPOCH);
            epoch = end.data().producerEpoch();
        }
        // three records, three markers; the aborted one is the second
        long deadline = System.currentTimeMillis() + 10_000;
        while (broker.context().replicaManager().log(new TopicPartition("t", 2)).lastStableOffset() < 6
                && System.currentTimeMillis() < deadline) {
            Thread.sleep(20);
        }
        assertThat(logEnd(2)).isEqualTo(6);
        assertThat(broker.context().replicaManager().log(new TopicPartition("t", 2)).lastStableOffset()).isEqualTo(6);
    }

    /** WriteTxnMarkers for producer {@code pid} in {@code t-partition} at {@code version}; the partition's error. */
    private Errors writeMarker(long pid, short epoch, boolean commit, byte transactionVersion, int partition, short version)
            throws Exception {
        org.apache.kafka.common.message.WriteTxnMarkersRequestData data = new org.apache.kafka.common.message.WriteTxnMarkersRequestData();
        data.markers().add(new org.apache.kafka.common.message.WriteTxnMarkersRequestData.WritableTxnMarker()
                .setProducerId(pid).setProducerEpoch(epoch).setTransactionResult(commit).setCoordinatorEpoch(0)
                .setTransactionVersion(transactionVersion)
                .setTopics(List.of(new org.apache.kafka.common.message.WriteTxnMarkersRequestData.WritableTxnMarkerTopic()
                        .setName("t").setPartitionIndexes(List.of(partition)))));
        org.apache.kafka.common.requests.WriteTxnMarkersResponse r = client.send(
                new org.apache.kafka.common.requests.WriteTxnMarkersRequest.Builder(data), version);
        return r.errorsByProducerId().get(pid).get(new TopicPartition("t", partition));
    }

    /**
     * KIP-1228 on the wire: WriteTxnMarkers v2 says its transaction's version, and a leader refuses a
     * transactions V2 marker at the producer's epoch once the producer's next transaction (which writes
     * at that epoch, bumped by the previous end) is open in the partition: a marker come late would end
     * it with the previous transaction's outcome. A request that does not say (v1) is checked as V1.
     */
    @Test
    void aLateTransactionsV2MarkerIsRefusedWhileTheProducersNextTransactionIsOpen() throws Exception {
        InitProducerIdResponse p = init("v2-late");
        long pid = p.data().producerId();
        short epoch = p.data().producerEpoch();
        assertThat(produce("v2-late", pid, epoch, 0, 1, (short) 12)).isEqualTo(Errors.NONE);
        EndTxnResponse end = client.send(new EndTxnRequest.Builder(new EndTxnRequestData().setTransactionalId("v2-late")
                .setProducerId(pid).setProducerEpoch(epoch).setCommitted(true), true), (short) 5);
        assertThat(end.error()).isEqualTo(Errors.NONE);
        short next = end.data().producerEpoch();
        Errors produced = null;
        for (int attempt = 0; attempt < 100; attempt++) {
            produced = produce("v2-late", pid, next, 0, 1, (short) 12); // the next transaction, at the bumped epoch
            if (produced != Errors.CONCURRENT_TRANSACTIONS) {
                break;
            }
            Thread.sleep(20);
        }
        assertThat(produced).isEqualTo(Errors.NONE);
        long logEnd = logEnd(1);
        var log = broker.context().replicaManager().log(new TopicPartition("t", 1));
        assertThat(log.ongoingTransactions()).containsValue(pid);

        // the first transaction's COMMIT, once more: at the producer's epoch, with its transaction open
        assertThat(writeMarker(pid, next, true, (byte) 2, 1, (short) 2)).isEqualTo(Errors.INVALID_PRODUCER_EPOCH);
        assertThat(logEnd(1)).as("nothing written").isEqualTo(logEnd);
        assertThat(log.ongoingTransactions()).containsValue(pid);
        // without the version (v1), it is taken as a V1 marker would be: this is what KIP-1228 closes
        assertThat(writeMarker(pid, next, true, (byte) 0, 1, (short) 1)).isEqualTo(Errors.NONE);
        assertThat(log.ongoingTransactions()).doesNotContainValue(pid);
    }
}
