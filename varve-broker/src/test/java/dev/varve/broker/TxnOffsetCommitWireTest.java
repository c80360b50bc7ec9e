package dev.varve.broker;

import dev.varve.storage.LogAppendInfo;
import dev.varve.storage.PartitionLog;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.ApiVersionsResponseData;
import org.apache.kafka.common.message.OffsetFetchRequestData;
import org.apache.kafka.common.message.OffsetFetchResponseData;
import org.apache.kafka.common.message.TxnOffsetCommitRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.OffsetFetchRequest;
import org.apache.kafka.common.requests.OffsetFetchResponse;
import org.apache.kafka.common.requests.TxnOffsetCommitRequest;
import org.apache.kafka.common.requests.TxnOffsetCommitResponse;
import org.apache.kafka.common.utils.Utils;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * TxnOffsetCommit at every version on the wire against a single node, ended by markers written to
 * {@code __consumer_offsets} as the WriteTxnMarkers path writes them (committed, aborted, one left
 * open), then a restart that replays the partitions from disk to the same state.
 */
class TxnOffsetCommitWireTest {
    private static final int OFFSETS_PARTITIONS = 4;
    private static final short LATEST = ApiKeys.TXN_OFFSET_COMMIT.latestVersion();

    @TempDir
    File dir;

    private Broker start() throws Exception {
        return Broker.start(BrokerConfig.from(Map.of(
                "listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", dir.getAbsolutePath(),
                "offsets.topic.num.partitions", Integer.toString(OFFSETS_PARTITIONS),
                "group.initial.rebalance.delay.ms", "0")));
    }

    private static String group(short v) {
        return "txn-v" + v;
    }

    /** The producer id InitProducerId gave each version's transactional id (epoch 0: a new id). */
    private static final Map<Short, Long> PRODUCER_IDS = new java.util.concurrent.ConcurrentHashMap<>();

    private static long producerId(short v) {
        return PRODUCER_IDS.get(v);
    }

    /**
     * Opens a real transaction for version {@code v}'s transactional id, as a producer does before it
     * commits offsets in it: the coordinator checks (KIP-890) that the producer's transaction holds the
     * group's offsets partition. Up to v4 the producer adds it with AddOffsetsToTxn; from v5
     * (transactions V2) the TxnOffsetCommit adds it itself.
     */
    private static void begin(RawKafkaClient c, short v) throws Exception {
        String id = "tx-" + v;
        org.apache.kafka.common.requests.InitProducerIdResponse init = null;
        for (int attempt = 0; attempt < 100; attempt++) {
            c.send(new org.apache.kafka.common.requests.FindCoordinatorRequest.Builder(
                    new org.apache.kafka.common.message.FindCoordinatorRequestData().setKeyType((byte) 1).setKey(id)), (short) 3);
            init = c.send(new org.apache.kafka.common.requests.InitProducerIdRequest.Builder(
                    new org.apache.kafka.common.message.InitProducerIdRequestData().setTransactionalId(id)
                            .setTransactionTimeoutMs(600_000)), (short) 4);
            if (init.error() == Errors.NONE) {
                break;
            }
            Thread.sleep(50);
        }
        assertThat(init.error()).as("InitProducerId of " + id).isEqualTo(Errors.NONE);
        assertThat(init.data().producerEpoch()).isZero();
        PRODUCER_IDS.put(v, init.data().producerId());
        if (v < 5) {
            org.apache.kafka.common.requests.AddOffsetsToTxnResponse added = c.send(
                    new org.apache.kafka.common.requests.AddOffsetsToTxnRequest.Builder(
                            new org.apache.kafka.common.message.AddOffsetsToTxnRequestData().setTransactionalId(id)
                                    .setProducerId(producerId(v)).setProducerEpoch((short) 0).setGroupId(group(v))), (short) 3);
            assertThat(Errors.forCode(added.data().errorCode())).as("AddOffsetsToTxn of " + id).isEqualTo(Errors.NONE);
        }
    }

    /** Even versions commit, odd ones abort, the newest stays open. */
    private static Boolean outcome(short v) {
        return v == LATEST ? null : v % 2 == 0;
    }

    @Test
    void everyVersionWritesPendingOffsetsThatMarkersEndAndARestartReplays() throws Exception {
        Broker broker = start();
        Uuid topicId;
        try {
            topicId = broker.context().createTopic("eos", 2, Map.of()).id();
            assertThat(advertised(broker)).isEqualTo(List.of(ApiKeys.TXN_OFFSET_COMMIT.oldestVersion(), LATEST));
            try (RawKafkaClient c = new RawKafkaClient(broker.boundAddresses().get(0))) {
                for (short v = ApiKeys.TXN_OFFSET_COMMIT.oldestVersion(); v <= LATEST; v++) {
                    begin(c, v);
                    TxnOffsetCommitResponse r = c.send(request(v, topicId), v);
                    assertThat(r.data().topics()).as("v" + v).hasSize(2);
                    assertThat(r.data().topics().get(0).partitions()).extracting(p -> Errors.forCode(p.errorCode()))
                            .as("v" + v).containsExactly(Errors.NONE, Errors.UNKNOWN_TOPIC_OR_PARTITION);
                    assertThat(r.data().topics().get(1).partitions()).extracting(p -> Errors.forCode(p.errorCode()))
                            .as("v" + v).containsExactly(v >= 6 ? Errors.UNKNOWN_TOPIC_ID : Errors.UNKNOWN_TOPIC_OR_PARTITION);
                    assertThat(fetch(c, group(v), true)).as("v" + v).extracting(p -> Errors.forCode(p.errorCode()))
                            .isEqualTo(Errors.UNSTABLE_OFFSET_COMMIT);
                    assertThat(fetch(c, group(v), false).committedOffset()).as("v" + v).isEqualTo(-1);
                }
                // without a transaction that holds the offsets partition: refused, nothing pending
                TxnOffsetCommitResponse stranger = c.send(TxnOffsetCommitRequest.Builder.forTopicNames(
                        requestData((short) 3, topicId).setTransactionalId("tx-none").setGroupId("txn-none"), false),
                        (short) 3);
                assertThat(Errors.forCode(stranger.data().topics().get(0).partitions().get(0).errorCode()))
                        .isEqualTo(Errors.INVALID_PRODUCER_ID_MAPPING);
                assertThat(fetch(c, "txn-none", true).committedOffset()).isEqualTo(-1);
                TxnOffsetCommitResponse noGroup = c.send(TxnOffsetCommitRequest.Builder.forTopicNames(
                        requestData((short) 3, topicId).setGroupId(""), false), (short) 3);
                assertThat(noGroup.data().topics().get(0).partitions()).extracting(p -> Errors.forCode(p.errorCode()))
                        .containsExactly(Errors.INVALID_GROUP_ID, Errors.UNKNOWN_TOPIC_OR_PARTITION);
                for (short v = ApiKeys.TXN_OFFSET_COMMIT.oldestVersion(); v <= LATEST; v++) {
                    if (outcome(v) != null) {
                        writeMarker(broker, v, outcome(v));
                    }
                }
                assertEnded(c);
            }
        } finally {
            broker.close();
        }

        broker = start();
        try (RawKafkaClient c = new RawKafkaClient(broker.boundAddresses().get(0))) {
            assertEnded(c); // the replay gives the same committed, aborted and open transactions
            writeMarker(broker, LATEST, true);
            assertThat(fetch(c, group(LATEST), true).committedOffset()).isEqualTo(10 + LATEST);
        } finally {
            broker.close();
        }
    }

    private void assertEnded(RawKafkaClient c) throws Exception {
        for (short v = ApiKeys.TXN_OFFSET_COMMIT.oldestVersion(); v <= LATEST; v++) {
            OffsetFetchResponseData.OffsetFetchResponsePartitions stable = fetch(c, group(v), true);
            if (outcome(v) == null) {
                assertThat(Errors.forCode(stable.errorCode())).as("v" + v).isEqualTo(Errors.UNSTABLE_OFFSET_COMMIT);
                assertThat(fetch(c, group(v), false).committedOffset()).as("v" + v).isEqualTo(-1);
            } else {
                assertThat(Errors.forCode(stable.errorCode())).as("v" + v).isEqualTo(Errors.NONE);
                assertThat(stable.committedOffset()).as("v" + v).isEqualTo(outcome(v) ? 10 + v : -1);
                if (outcome(v)) {
                    assertThat(stable.metadata()).as("v" + v).isEqualTo("m" + v);
                }
            }
        }
    }

    private static TxnOffsetCommitRequest.Builder request(short v, Uuid topicId) {
        TxnOffsetCommitRequestData data = requestData(v, topicId);
        return v >= 6 ? TxnOffsetCommitRequest.Builder.forTopicIdsOrNames(data, true)
                : TxnOffsetCommitRequest.Builder.forTopicNames(data, v >= 5);
    }

    private static TxnOffsetCommitRequestData requestData(short v, Uuid topicId) {
        TxnOffsetCommitRequestData.TxnOffsetCommitRequestTopic known = new TxnOffsetCommitRequestData.TxnOffsetCommitRequestTopic()
                .setPartitions(List.of(
                        new TxnOffsetCommitRequestData.TxnOffsetCommitRequestPartition().setPartitionIndex(0)
                                .setCommittedOffset(10 + v).setCommittedMetadata("m" + v),
                        new TxnOffsetCommitRequestData.TxnOffsetCommitRequestPartition().setPartitionIndex(5)
                                .setCommittedOffset(1)));
        TxnOffsetCommitRequestData.TxnOffsetCommitRequestTopic unknown = new TxnOffsetCommitRequestData.TxnOffsetCommitRequestTopic()
                .setPartitions(List.of(new TxnOffsetCommitRequestData.TxnOffsetCommitRequestPartition()
                        .setPartitionIndex(0).setCommittedOffset(1)));
        if (v >= 6) {
            known.setTopicId(topicId);
            unknown.setTopicId(Uuid.randomUuid());
        } else {
            known.setName("eos");
            unknown.setName("nope");
        }
        return new TxnOffsetCommitRequestData().setTransactionalId("tx-" + v)
                .setGroupId(group(v)).setProducerId(producerId(v)).setProducerEpoch((short) 0)
                .setTopics(List.of(known, unknown));
    }

    /** OffsetFetch v8 of partition 0 of "eos" for a group. */
    private static OffsetFetchResponseData.OffsetFetchResponsePartitions fetch(RawKafkaClient c, String group,
                                                                              boolean requireStable) throws Exception {
        OffsetFetchRequestData data = new OffsetFetchRequestData().setRequireStable(requireStable).setGroups(List.of(
                new OffsetFetchRequestData.OffsetFetchRequestGroup().setGroupId(group).setTopics(List.of(
                        new OffsetFetchRequestData.OffsetFetchRequestTopics().setName("eos").setPartitionIndexes(List.of(0))))));
        OffsetFetchResponse r = c.send(OffsetFetchRequest.Builder.forTopicNames(data, requireStable), (short) 8);
        return r.group(group).topics().get(0).partitions().get(0);
    }

    /** Appends the producer's marker to its group's offsets partition, then ends the transaction there. */
    private static void writeMarker(Broker broker, short v, boolean commit) {
        int partition = Utils.abs(group(v).hashCode()) % OFFSETS_PARTITIONS;
        PartitionLog log = broker.context().replicaManager().log(new TopicPartition(OffsetsTopic.NAME, partition));
        LogAppendInfo info = log.appendMarkerAsLeader(producerId(v), (short) 0, 0, commit, ReplicaManager.LEADER_EPOCH);
        log.maybeIncrementHighWatermark(info.lastOffset() + 1);
        broker.transactionalOffsets().completeTransaction(partition, producerId(v), commit, info.firstOffset());
    }

    private static List<Short> advertised(Broker broker) {
        ApiVersionsResponseData.ApiVersion av = broker.dispatcher().apiVersions().find(ApiKeys.TXN_OFFSET_COMMIT.id);
        return av == null ? List.of() : List.of(av.minVersion(), av.maxVersion());
    }
}
