package dev.varve.broker;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.ShareAcknowledgeRequestData;
import org.apache.kafka.common.message.ShareFetchRequestData;
import org.apache.kafka.common.message.ShareFetchResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.requests.ApiVersionsRequest;
import org.apache.kafka.common.requests.ApiVersionsResponse;
import org.apache.kafka.common.requests.ShareAcknowledgeRequest;
import org.apache.kafka.common.requests.ShareAcknowledgeResponse;
import org.apache.kafka.common.requests.ShareFetchRequest;
import org.apache.kafka.common.requests.ShareFetchResponse;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * ShareFetch and ShareAcknowledge (KIP-932) on the wire at every version kafka-clients 4.4 knows: share
 * sessions, acquisition, acknowledgement of every type, redelivery with delivery counts, the delayed fetch,
 * and Kafka's error codes for bad input (session epochs, unknown topic ids and partitions, acknowledgement
 * batches that lie about their ranges or types, records not acquired by the member).
 */
class ShareApisWireTest {
    @TempDir
    static File dir;
    static Broker broker;
    static KafkaProducer<String, String> producer;

    static final byte ACCEPT = 1, RELEASE = 2, REJECT = 3, RENEW = 4;

    @BeforeAll
    static void start() throws Exception {
        broker = Broker.start(BrokerConfig.from(Map.of(
                "listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", dir.getAbsolutePath(),
                "group.coordinator.rebalance.protocols", "classic,consumer,share",
                "share.coordinator.state.topic.num.partitions", "3",
                "offsets.topic.num.partitions", "2")));
        producer = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers(),
                ProducerConfig.LINGER_MS_CONFIG, "0"), new StringSerializer(), new StringSerializer());
    }

    @AfterAll
    static void stop() throws Exception {
        producer.close();
        broker.close();
    }

    static Uuid createTopic(String name, int partitions) throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()))) {
            admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1))).all().get();
        }
        return broker.context().topics().get(name).orElseThrow().id();
    }

    static void produce(String topic, int partition, int n) throws Exception {
        for (int i = 0; i < n; i++) {
            producer.send(new ProducerRecord<>(topic, partition, "k" + i, "v" + i));
        }
        producer.flush();
    }

    static RawKafkaClient client() throws Exception {
        return new RawKafkaClient(broker.boundAddresses().get(0));
    }

    record Part(Uuid topicId, int partition, List<ShareFetchRequestData.AcknowledgementBatch> acks) {
        Part(Uuid topicId, int partition) {
            this(topicId, partition, List.of());
        }
    }

    static ShareFetchRequestData.AcknowledgementBatch ack(long first, long last, byte... types) {
        List<Byte> t = new ArrayList<>();
        for (byte b : types) {
            t.add(b);
        }
        return new ShareFetchRequestData.AcknowledgementBatch().setFirstOffset(first).setLastOffset(last).setAcknowledgeTypes(t);
    }

    /** Makes {@code member} a member of share group {@code group} (ShareGroupHeartbeat, epoch 0). */
    static void join(RawKafkaClient c, String group, String member, String... topics) throws Exception {
        org.apache.kafka.common.requests.ShareGroupHeartbeatResponse r = c.send(new org.apache.kafka.common.requests.ShareGroupHeartbeatRequest.Builder(
                new org.apache.kafka.common.message.ShareGroupHeartbeatRequestData().setGroupId(group).setMemberId(member)
                        .setMemberEpoch(0).setSubscribedTopicNames(List.of(topics))), ApiKeys.SHARE_GROUP_HEARTBEAT.latestVersion());
        assertThat(Errors.forCode(r.data().errorCode())).as(r.data().errorMessage()).isEqualTo(Errors.NONE);
    }

    /** {@code member} leaves its share group (ShareGroupHeartbeat, epoch -1). */
    static void leave(RawKafkaClient c, String group, String member) throws Exception {
        org.apache.kafka.common.requests.ShareGroupHeartbeatResponse r = c.send(new org.apache.kafka.common.requests.ShareGroupHeartbeatRequest.Builder(
                new org.apache.kafka.common.message.ShareGroupHeartbeatRequestData().setGroupId(group).setMemberId(member)
                        .setMemberEpoch(-1)), ApiKeys.SHARE_GROUP_HEARTBEAT.latestVersion());
        assertThat(Errors.forCode(r.data().errorCode())).isEqualTo(Errors.NONE);
    }

    static ShareFetchResponse fetch(RawKafkaClient c, short v, String group, String member, int epoch, int maxWaitMs,
                                    Part... parts) throws Exception {
        ShareFetchRequestData d = new ShareFetchRequestData().setGroupId(group).setMemberId(member).setShareSessionEpoch(epoch)
                .setMaxWaitMs(maxWaitMs).setMinBytes(1).setMaxBytes(1 << 20).setMaxRecords(500).setBatchSize(500);
        for (Part p : parts) {
            ShareFetchRequestData.FetchTopic t = d.topics().find(p.topicId());
            if (t == null) {
                t = new ShareFetchRequestData.FetchTopic().setTopicId(p.topicId());
                d.topics().add(t);
            }
            t.partitions().add(new ShareFetchRequestData.FetchPartition().setPartitionIndex(p.partition())
                    .setAcknowledgementBatches(new ArrayList<>(p.acks())));
        }
        return c.send(new ShareFetchRequest.Builder(d), v);
    }

    static ShareAcknowledgeResponse acknowledge(RawKafkaClient c, short v, String group, String member, int epoch, Uuid topicId,
                                                int partition, ShareFetchRequestData.AcknowledgementBatch... batches) throws Exception {
        ShareAcknowledgeRequestData d = new ShareAcknowledgeRequestData().setGroupId(group).setMemberId(member).setShareSessionEpoch(epoch);
        ShareAcknowledgeRequestData.AcknowledgeTopic t = new ShareAcknowledgeRequestData.AcknowledgeTopic().setTopicId(topicId);
        ShareAcknowledgeRequestData.AcknowledgePartition p = new ShareAcknowledgeRequestData.AcknowledgePartition().setPartitionIndex(partition);
        for (ShareFetchRequestData.AcknowledgementBatch b : batches) {
            p.acknowledgementBatches().add(new ShareAcknowledgeRequestData.AcknowledgementBatch().setFirstOffset(b.firstOffset())
                    .setLastOffset(b.lastOffset()).setAcknowledgeTypes(b.acknowledgeTypes()));
        }
        t.partitions().add(p);
        d.topics().add(t);
        return c.send(new ShareAcknowledgeRequest.Builder(d), v);
    }

    static ShareFetchResponseData.PartitionData partition(ShareFetchResponse r, Uuid topicId, int partition) {
        for (ShareFetchResponseData.ShareFetchableTopicResponse t : r.data().responses()) {
            if (t.topicId().equals(topicId)) {
                for (ShareFetchResponseData.PartitionData p : t.partitions()) {
                    if (p.partitionIndex() == partition) {
                        return p;
                    }
                }
            }
        }
        return null;
    }

    static short ackError(ShareAcknowledgeResponse a) {
        return a.data().responses().iterator().next().partitions().get(0).errorCode();
    }

    /** "first-last:count" per acquired range. */
    static List<String> acquired(ShareFetchResponse r, Uuid topicId, int partition) {
        ShareFetchResponseData.PartitionData p = partition(r, topicId, partition);
        List<String> out = new ArrayList<>();
        if (p != null) {
            for (ShareFetchResponseData.AcquiredRecords a : p.acquiredRecords()) {
                out.add(a.firstOffset() + "-" + a.lastOffset() + ":" + a.deliveryCount());
            }
        }
        return out;
    }

    /** The offsets of the records sent, all of them (the client keeps those in acquired ranges). */
    static List<Long> sentOffsets(ShareFetchResponse r, Uuid topicId, int partition) {
        ShareFetchResponseData.PartitionData p = partition(r, topicId, partition);
        List<Long> out = new ArrayList<>();
        if (p != null && p.records() != null) {
            for (RecordBatch b : ((org.apache.kafka.common.record.internal.Records) p.records()).batches()) {
                for (Record rec : b) {
                    out.add(rec.offset());
                }
            }
        }
        return out;
    }

    @Test
    void apiVersionsAdvertisesTheShareApis() throws Exception {
        try (RawKafkaClient c = client()) {
            ApiVersionsResponse r = c.send(new ApiVersionsRequest.Builder(), (short) 3);
            assertThat(r.data().apiKeys().find(ApiKeys.SHARE_FETCH.id).maxVersion()).isEqualTo((short) 2);
            assertThat(r.data().apiKeys().find(ApiKeys.SHARE_FETCH.id).minVersion()).isEqualTo((short) 1);
            assertThat(r.data().apiKeys().find(ApiKeys.SHARE_ACKNOWLEDGE.id).maxVersion()).isEqualTo((short) 2);
        }
    }

    @Test
    void aWholeCycleAtEveryVersion() throws Exception {
        for (short v = ApiKeys.SHARE_FETCH.oldestVersion(); v <= ApiKeys.SHARE_FETCH.latestVersion(); v++) {
            String topic = "share-cycle-v" + v;
            Uuid id = createTopic(topic, 2);
            String group = "g-cycle-v" + v;
            try (RawKafkaClient c = client(); RawKafkaClient c2 = client()) {
                join(c, group, "m1", topic);
                join(c2, group, "m2", topic);
                // epoch 0 opens the session; latest: the share-partition starts at the end, nothing to acquire yet
                ShareFetchResponse r = fetch(c, v, group, "m1", 0, 0, new Part(id, 0), new Part(id, 1));
                assertThat(r.error()).isEqualTo(Errors.NONE);
                assertThat(r.data().acquisitionLockTimeoutMs()).isEqualTo(30_000);
                assertThat(acquired(r, id, 0)).isEmpty();

                // a waiting fetch is answered when records arrive, long before its MaxWaitMs
                Thread later = new Thread(() -> {
                    try {
                        Thread.sleep(300);
                        produce(topic, 0, 5);
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    }
                });
                later.start();
                long t0 = System.nanoTime();
                r = fetch(c, v, group, "m1", 1, 8_000);
                long waitedMs = (System.nanoTime() - t0) / 1_000_000;
                later.join();
                assertThat(waitedMs).isLessThan(6_000);
                assertThat(acquired(r, id, 0).get(0)).startsWith("0-");
                List<Long> got = new ArrayList<>(sentOffsets(r, id, 0));
                int e = 2;
                // the records may have come in several batches, each waking the fetch: the rest is acquired now
                while (!got.contains(4L)) {
                    r = fetch(c, v, group, "m1", e++, 1_000);
                    assertThat(acquired(r, id, 0)).allMatch(range -> range.endsWith(":1"));
                    got.addAll(sentOffsets(r, id, 0));
                }
                assertThat(got).containsExactly(0L, 1L, 2L, 3L, 4L);

                // accept 0-1, release 2, reject 3; 4 stays acquired
                ShareAcknowledgeResponse a = acknowledge(c, v, group, "m1", e++, id, 0, ack(0, 3, ACCEPT, ACCEPT, RELEASE, REJECT));
                assertThat(a.error()).isEqualTo(Errors.NONE);
                assertThat(ackError(a)).isEqualTo(Errors.NONE.code());

                // the released record comes back with its second delivery; nothing finished or held comes back
                r = fetch(c, v, group, "m1", e++, 0);
                assertThat(acquired(r, id, 0)).containsExactly("2-2:2");

                // acknowledging a record already accepted: INVALID_RECORD_STATE as the partition's acknowledge error
                r = fetch(c, v, group, "m1", e++, 0, new Part(id, 0, List.of(ack(0, 0, ACCEPT))));
                assertThat(r.error()).isEqualTo(Errors.NONE);
                assertThat(partition(r, id, 0).acknowledgeErrorCode()).isEqualTo(Errors.INVALID_RECORD_STATE.code());

                // another member finds nothing available, and may not acknowledge m1's records
                r = fetch(c2, v, group, "m2", 0, 0, new Part(id, 0));
                assertThat(acquired(r, id, 0)).isEmpty();
                a = acknowledge(c2, v, group, "m2", 1, id, 0, ack(4, 4, ACCEPT));
                assertThat(ackError(a)).isEqualTo(Errors.INVALID_RECORD_STATE.code());

                if (v >= 2) {
                    // RENEW (v2) keeps the lock and fetches nothing new
                    ShareFetchRequestData.AcknowledgementBatch renew = ack(4, 4, RENEW);
                    a = acknowledge(c, v, group, "m1", e++, id, 0, renew);
                    assertThat(ackError(a)).isEqualTo(Errors.NONE.code());
                } else {
                    a = acknowledge(c, v, group, "m1", e++, id, 0, ack(4, 4, RENEW));
                    assertThat(ackError(a)).isEqualTo(Errors.INVALID_REQUEST.code());
                }

                // m1 closes its session (final epoch): what it holds goes back without counting the delivery
                a = acknowledge(c, v, group, "m1", -1, id, 0, ack(2, 2, ACCEPT));
                assertThat(a.error()).isEqualTo(Errors.NONE);
                assertThat(ackError(a)).isEqualTo(Errors.NONE.code());
                r = fetch(c2, v, group, "m2", 2, 0);
                assertThat(acquired(r, id, 0)).containsExactly("4-4:1");
                // m1's session is gone
                r = fetch(c, v, group, "m1", e, 0);
                assertThat(r.error()).isEqualTo(Errors.SHARE_SESSION_NOT_FOUND);
                assertThat(broker.shareStates().startOffsets(group).values()).contains(4L);
            }
        }
    }

    @Test
    void badInputGetsKafkasErrors() throws Exception {
        Uuid id = createTopic("share-bad", 1);
        produce("share-bad", 0, 3);
        for (short v = ApiKeys.SHARE_FETCH.oldestVersion(); v <= ApiKeys.SHARE_FETCH.latestVersion(); v++) {
            String group = "g-bad-v" + v;
            try (RawKafkaClient c = client()) {
                join(c, group, "m", "share-bad");
                // acknowledgements in the opening fetch
                ShareFetchResponse r = fetch(c, v, group, "m", 0, 0, new Part(id, 0, List.of(ack(0, 0, ACCEPT))));
                assertThat(r.error()).isEqualTo(Errors.INVALID_REQUEST);
                // no session yet
                assertThat(fetch(c, v, group, "m", 1, 0).error()).isEqualTo(Errors.SHARE_SESSION_NOT_FOUND);
                assertThat(acknowledge(c, v, group, "m", 1, id, 0, ack(0, 0, ACCEPT)).error()).isEqualTo(Errors.SHARE_SESSION_NOT_FOUND);
                assertThat(fetch(c, v, group, "m", -1, 0).error()).isEqualTo(Errors.SHARE_SESSION_NOT_FOUND);
                // ShareAcknowledge cannot open a session
                assertThat(acknowledge(c, v, group, "m", 0, id, 0, ack(0, 0, ACCEPT)).error()).isEqualTo(Errors.INVALID_SHARE_SESSION_EPOCH);
                // not a member
                assertThat(fetch(c, v, group, "stranger", 0, 0, new Part(id, 0)).error()).isEqualTo(Errors.UNKNOWN_MEMBER_ID);
                assertThat(acknowledge(c, v, group, "stranger", 1, id, 0, ack(0, 0, ACCEPT)).error()).isEqualTo(Errors.UNKNOWN_MEMBER_ID);
                // empty group or member id
                assertThat(fetch(c, v, "", "m", 0, 0).error()).isEqualTo(Errors.INVALID_REQUEST);
                assertThat(fetch(c, v, group, "", 0, 0).error()).isEqualTo(Errors.INVALID_REQUEST);

                // unknown topic id and partition: per-partition errors, the request itself is fine
                Uuid unknown = Uuid.randomUuid();
                r = fetch(c, v, group, "m", 0, 0, new Part(id, 0), new Part(unknown, 0), new Part(id, 99));
                assertThat(r.error()).isEqualTo(Errors.NONE);
                assertThat(partition(r, unknown, 0).errorCode()).isEqualTo(Errors.UNKNOWN_TOPIC_ID.code());
                assertThat(partition(r, id, 99).errorCode()).isEqualTo(Errors.UNKNOWN_TOPIC_OR_PARTITION.code());
                // a wrong epoch (the next is 1)
                assertThat(fetch(c, v, group, "m", 7, 0).error()).isEqualTo(Errors.INVALID_SHARE_SESSION_EPOCH);
                assertThat(acknowledge(c, v, group, "m", 7, id, 0, ack(0, 0, ACCEPT)).error()).isEqualTo(Errors.INVALID_SHARE_SESSION_EPOCH);
                assertThat(fetch(c, v, group, "m", -5, 0).error()).isEqualTo(Errors.INVALID_SHARE_SESSION_EPOCH);

                // acknowledgement batches that lie: INVALID_REQUEST for the partition; a range far larger than
                // what is in flight: INVALID_RECORD_STATE at once
                int epoch = 1;
                Object[][] lies = {
                        {ack(2, 1, ACCEPT), Errors.INVALID_REQUEST},                      // first > last
                        {ack(0, 1, ACCEPT, ACCEPT, ACCEPT), Errors.INVALID_REQUEST},      // 3 types for 2 offsets
                        {ack(0, 0), Errors.INVALID_REQUEST},                              // no type
                        {ack(0, 0, (byte) 9), Errors.INVALID_REQUEST},                   // unknown type
                        {ack(-3, 0, ACCEPT), Errors.INVALID_REQUEST},                    // negative offset
                        {ack(0, Long.MAX_VALUE, ACCEPT), Errors.INVALID_RECORD_STATE},    // all of the log
                        {ack(0, 0, ACCEPT), Errors.INVALID_RECORD_STATE},                 // never acquired
                };
                for (Object[] lie : lies) {
                    r = fetch(c, v, group, "m", epoch++, 0, new Part(id, 0, List.of((ShareFetchRequestData.AcknowledgementBatch) lie[0])));
                    assertThat(r.error()).isEqualTo(Errors.NONE);
                    assertThat(Errors.forCode(partition(r, id, 0).acknowledgeErrorCode())).as("%s", lie[0]).isEqualTo(lie[1]);
                }
                // overlapping or descending batches
                r = fetch(c, v, group, "m", epoch++, 0, new Part(id, 0, List.of(ack(0, 2, ACCEPT), ack(2, 3, ACCEPT))));
                assertThat(partition(r, id, 0).acknowledgeErrorCode()).isEqualTo(Errors.INVALID_REQUEST.code());
                ShareAcknowledgeResponse a = acknowledge(c, v, group, "m", epoch++, id, 0, ack(0, 0, (byte) 7));
                assertThat(ackError(a)).isEqualTo(Errors.INVALID_REQUEST.code());
                a = acknowledge(c, v, group, "m", epoch++, Uuid.randomUuid(), 0, ack(0, 0, ACCEPT));
                assertThat(ackError(a)).isEqualTo(Errors.UNKNOWN_TOPIC_ID.code());
                // the connection and the broker are fine
                assertThat(fetch(c, v, group, "m", epoch, 0).error()).isEqualTo(Errors.NONE);
            }
        }
    }

    @Test
    void aMemberThatLeavesGivesItsRecordsBackToTheOthers() throws Exception {
        Uuid id = createTopic("share-leave", 1);
        short v = ApiKeys.SHARE_FETCH.latestVersion();
        try (RawKafkaClient a = client(); RawKafkaClient b = client()) {
            join(a, "g-leave", "a", "share-leave");
            join(b, "g-leave", "b", "share-leave");
            fetch(a, v, "g-leave", "a", 0, 0, new Part(id, 0));
            fetch(b, v, "g-leave", "b", 0, 0, new Part(id, 0));
            produce("share-leave", 0, 3);
            List<String> got = new ArrayList<>();
            for (int e = 1; got.stream().noneMatch(r -> r.contains("-2:")); e++) {
                got.addAll(acquired(fetch(a, v, "g-leave", "a", e, 1_000), id, 0));
            }
            assertThat(acquired(fetch(b, v, "g-leave", "b", 1, 0), id, 0)).isEmpty();
            leave(a, "g-leave", "a");
            // a's records are available again: the delivery counted (a may have processed them)
            assertThat(acquired(fetch(b, v, "g-leave", "b", 2, 2_000), id, 0)).containsExactly("0-2:2");
            // a's session is gone with it
            assertThat(fetch(a, v, "g-leave", "a", 9, 0).error()).isEqualTo(Errors.UNKNOWN_MEMBER_ID);
        }
    }

    @Test
    void readCommittedNeverDeliversAbortedRecordsAndEarliestStartsAtTheLogStart() throws Exception {
        Uuid id = createTopic("share-txn", 1);
        try (KafkaProducer<String, String> txn = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                broker.bootstrapServers(), ProducerConfig.TRANSACTIONAL_ID_CONFIG, "share-txn"), new StringSerializer(), new StringSerializer())) {
            txn.initTransactions();
            txn.beginTransaction();
            for (int i = 0; i < 3; i++) {
                txn.send(new ProducerRecord<>("share-txn", 0, "k", "aborted" + i));
            }
            txn.flush();
            txn.abortTransaction();
            txn.beginTransaction();
            for (int i = 0; i < 2; i++) {
                txn.send(new ProducerRecord<>("share-txn", 0, "k", "committed" + i));
            }
            txn.commitTransaction();
        }
        broker.shareStates().setGroupSettings(new dev.varve.broker.share.ShareGroupSettings() {
            @Override
            public String autoOffsetReset(String groupId) {
                return groupId.startsWith("g-rc") ? "earliest" : "latest";
            }

            @Override
            public boolean readCommitted(String groupId) {
                return groupId.equals("g-rc");
            }
        });
        try (RawKafkaClient c = client()) {
            short v = ApiKeys.SHARE_FETCH.latestVersion();
            join(c, "g-rc", "m", "share-txn");
            join(c, "g-rc-uncommitted", "m", "share-txn");
            // aborted 0-2, abort marker 3, committed 4-5, commit marker 6
            assertThat(acquired(fetch(c, v, "g-rc", "m", 0, 0, new Part(id, 0)), id, 0)).containsExactly("4-5:1");
            assertThat(acquired(fetch(c, v, "g-rc-uncommitted", "m", 0, 0, new Part(id, 0)), id, 0))
                    .containsExactly("0-2:1", "4-5:1");
        } finally {
            broker.shareStates().setGroupSettings(dev.varve.broker.share.ShareGroupSettings.DEFAULTS);
        }
    }

    @Test
    void aRecordReleasedDeliveryCountLimitTimesIsArchived() throws Exception {
        Uuid id = createTopic("share-limit", 1);
        short v = ApiKeys.SHARE_FETCH.latestVersion();
        try (RawKafkaClient c = client()) {
            join(c, "g-limit", "m", "share-limit");
            fetch(c, v, "g-limit", "m", 0, 0, new Part(id, 0));
            produce("share-limit", 0, 1);
            int e = 1;
            List<String> got = acquired(fetch(c, v, "g-limit", "m", e++, 2_000), id, 0);
            // group.share.delivery.count.limit is 5: four releases bring it back, the fifth archives it
            for (int delivery = 1; delivery <= 5; delivery++) {
                assertThat(got).containsExactly("0-0:" + delivery);
                ShareFetchResponse r = fetch(c, v, "g-limit", "m", e++, 0, new Part(id, 0, List.of(ack(0, 0, RELEASE))));
                assertThat(partition(r, id, 0).acknowledgeErrorCode()).isEqualTo(Errors.NONE.code());
                got = acquired(r, id, 0);
            }
            assertThat(got).isEmpty();
            assertThat(broker.shareStates().startOffsets("g-limit").values()).containsExactly(1L);
        }
    }

    @Test
    void aFetchWithNothingToAcquireWaitsItsMaxWait() throws Exception {
        Uuid id = createTopic("share-idle", 1);
        try (RawKafkaClient c = client()) {
            short v = ApiKeys.SHARE_FETCH.latestVersion();
            join(c, "g-idle", "m", "share-idle");
            fetch(c, v, "g-idle", "m", 0, 0, new Part(id, 0));
            long t0 = System.nanoTime();
            ShareFetchResponse r = fetch(c, v, "g-idle", "m", 1, 400);
            long waitedMs = (System.nanoTime() - t0) / 1_000_000;
            assertThat(r.error()).isEqualTo(Errors.NONE);
            assertThat(acquired(r, id, 0)).isEmpty();
            assertThat(waitedMs).isBetween(300L, 5_000L);
        }
    }

    @Test
    void maxRecordsBoundsWhatIsAcquired() throws Exception {
        Uuid id = createTopic("share-max", 1);
        try (RawKafkaClient c = client()) {
            short v = ApiKeys.SHARE_FETCH.latestVersion();
            join(c, "g-max", "m", "share-max");
            fetch(c, v, "g-max", "m", 0, 0, new Part(id, 0));
            for (int i = 0; i < 4; i++) {
                produce("share-max", 0, 1); // one batch per record
            }
            ShareFetchRequestData d = new ShareFetchRequestData().setGroupId("g-max").setMemberId("m").setShareSessionEpoch(1)
                    .setMaxWaitMs(0).setMinBytes(1).setMaxBytes(1 << 20).setMaxRecords(2).setBatchSize(2).setShareAcquireMode((byte) 1);
            ShareFetchResponse r = c.send(new ShareFetchRequest.Builder(d), v);
            assertThat(acquired(r, id, 0)).containsExactly("0-1:1");
            assertThat(sentOffsets(r, id, 0)).containsExactly(0L, 1L);
        }
    }
}
