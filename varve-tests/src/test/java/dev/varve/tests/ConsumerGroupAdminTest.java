package dev.varve.tests;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ConsumerGroupListing;
import org.apache.kafka.clients.admin.DeleteConsumerGroupOffsetsResult;
import org.apache.kafka.clients.admin.DeleteConsumerGroupsResult;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsResult;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.TopicListing;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.GroupNotEmptyException;
import org.apache.kafka.common.errors.GroupSubscribedToTopicException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Collectors;

import static dev.varve.tests.GroupAssertions.awaitAssignment;
import static dev.varve.tests.GroupAssertions.awaitCommitted;
import static dev.varve.tests.GroupAssertions.committed;
import static dev.varve.tests.GroupAssertions.describe;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The Admin client's consumer-group operations against groups in known states: two offsets-only
 * groups (Empty) and one with a live member (Stable). ListGroups (with and without a state
 * filter), DescribeGroups, OffsetFetch for several groups in one request, OffsetDelete and
 * DeleteGroups, including their refusals, and the internal {@code __consumer_offsets} topic.
 */
@Timeout(120)
class ConsumerGroupAdminTest {
    private static final long GET_SECONDS = 30;

    @RegisterExtension
    static final SharedTestBroker BROKER = new SharedTestBroker();

    private static void commit(String group, Map<TopicPartition, OffsetAndMetadata> offsets) {
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(
                GroupMember.config(BROKER.bootstrap(), group, "committer", Map.of()))) {
            consumer.assign(offsets.keySet());
            consumer.commitSync(offsets, Duration.ofSeconds(GET_SECONDS));
        }
    }

    private static <T> T get(KafkaFuture<T> future) throws Exception {
        return future.get(GET_SECONDS, TimeUnit.SECONDS);
    }

    private static void assertFailsWith(KafkaFuture<?> future, Class<? extends Throwable> type) {
        assertThatThrownBy(() -> future.get(GET_SECONDS, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class).hasCauseInstanceOf(type);
    }

    private static Map<String, GroupListing> listGroups(Admin admin, ListGroupsOptions options) throws Exception {
        return get(admin.listGroups(options).all()).stream()
                .collect(Collectors.toMap(GroupListing::groupId, Function.identity()));
    }

    @Test
    void adminListsDescribesFetchesAndDeletesGroups() throws Exception {
        RecordFixture fixture = new RecordFixture(TestBroker.unique("admin-groups"), 3, 99,
                System.currentTimeMillis() - 600_000L);
        Clients.createTopic(BROKER.bootstrap(), fixture.topic, 3, Map.of());
        try (KafkaProducer<byte[], byte[]> producer = Clients.producer(BROKER.bootstrap(), Map.of())) {
            Clients.produce(producer, fixture, 0, 30);
        }
        TopicPartition p0 = fixture.tp(0);
        TopicPartition p1 = fixture.tp(1);
        TopicPartition p2 = fixture.tp(2);
        String empty1 = TestBroker.unique("admin-empty-1");
        String empty2 = TestBroker.unique("admin-empty-2");
        String stable = TestBroker.unique("admin-stable");
        String unknown = TestBroker.unique("admin-unknown");
        Map<TopicPartition, OffsetAndMetadata> commits1 = Map.of(p0, new OffsetAndMetadata(5), p1, new OffsetAndMetadata(7));
        Map<TopicPartition, OffsetAndMetadata> commits2 = Map.of(p0, new OffsetAndMetadata(10, "ten"),
                p2, new OffsetAndMetadata(3, "three"));
        commit(empty1, commits1);
        commit(empty2, commits2);

        try (Admin admin = Clients.admin(BROKER.bootstrap());
             GroupMember member = GroupMember.start(BROKER.bootstrap(), stable, "the-member", fixture, Map.of())) {
            awaitAssignment(List.of(member), 3, 3);
            awaitCommitted(admin, stable, Clients.endOffsets(fixture, 30), List.of(member));

            // ListGroups: every group with its state and type; a state filter selects.
            Map<String, GroupListing> groups = listGroups(admin, ListGroupsOptions.forConsumerGroups());
            assertThat(groups).containsKeys(empty1, empty2, stable).doesNotContainKey(unknown);
            assertThat(groups.get(empty1).groupState()).hasValue(GroupState.EMPTY);
            assertThat(groups.get(empty2).groupState()).hasValue(GroupState.EMPTY);
            assertThat(groups.get(stable).groupState()).hasValue(GroupState.STABLE);
            for (String g : List.of(empty1, empty2, stable)) {
                assertThat(groups.get(g).type()).as("type of %s", g).hasValue(GroupType.CLASSIC);
            }
            assertThat(groups.get(stable).protocol()).isEqualTo("consumer");
            assertThat(groups.get(stable).isSimpleConsumerGroup()).isFalse();
            assertThat(groups.get(empty1).isSimpleConsumerGroup()).isTrue();
            Map<String, GroupListing> stableOnly = listGroups(admin,
                    ListGroupsOptions.forConsumerGroups().inGroupStates(Set.of(GroupState.STABLE)));
            assertThat(stableOnly).containsKey(stable).doesNotContainKeys(empty1, empty2);
            @SuppressWarnings("deprecation")
            Collection<ConsumerGroupListing> legacy = get(admin.listConsumerGroups().all());
            assertThat(legacy).extracting(ConsumerGroupListing::groupId).contains(empty1, empty2, stable);

            // DescribeGroups of several groups in one call.
            Map<String, ConsumerGroupDescription> described = get(
                    admin.describeConsumerGroups(List.of(empty1, stable)).all());
            ConsumerGroupDescription s = described.get(stable);
            assertThat(s.groupState()).as("%s", s).isEqualTo(GroupState.STABLE);
            assertThat(s.partitionAssignor()).as("%s", s).isEqualTo("range");
            assertThat(s.type()).as("%s", s).isEqualTo(GroupType.CLASSIC);
            assertThat(s.coordinator()).as("%s", s).isNotNull();
            assertThat(s.coordinator().id()).as("the coordinator is the broker: %s", s).isEqualTo(1);
            assertThat(s.members()).as("%s", s).hasSize(1);
            MemberDescription m = s.members().iterator().next();
            assertThat(m.consumerId()).isEqualTo(member.memberId());
            assertThat(m.clientId()).isEqualTo("the-member");
            assertThat(m.host()).isEqualTo("/127.0.0.1");
            assertThat(m.groupInstanceId()).isEmpty();
            assertThat(m.assignment().topicPartitions()).containsExactlyInAnyOrder(p0, p1, p2);
            ConsumerGroupDescription e = described.get(empty1);
            assertThat(e.groupState()).as("%s", e).isEqualTo(GroupState.EMPTY);
            assertThat(e.members()).as("%s", e).isEmpty();
            assertThat(e.isSimpleConsumerGroup()).as("%s", e).isTrue();

            // OffsetFetch for several groups in one call; a spec may name partitions, committed or not.
            ListConsumerGroupOffsetsResult offsets = admin.listConsumerGroupOffsets(Map.of(
                    empty1, new ListConsumerGroupOffsetsSpec(),
                    empty2, new ListConsumerGroupOffsetsSpec(),
                    stable, new ListConsumerGroupOffsetsSpec().topicPartitions(List.of(p0, p1)),
                    unknown, new ListConsumerGroupOffsetsSpec()));
            assertThat(get(offsets.partitionsToOffsetAndMetadata(empty1))).isEqualTo(commits1);
            assertThat(get(offsets.partitionsToOffsetAndMetadata(empty2))).isEqualTo(commits2);
            assertThat(get(offsets.partitionsToOffsetAndMetadata(stable)))
                    .isEqualTo(Map.of(p0, new OffsetAndMetadata(10), p1, new OffsetAndMetadata(10)));
            assertThat(get(offsets.partitionsToOffsetAndMetadata(unknown))).as("a group that does not exist").isEmpty();
            Map<TopicPartition, OffsetAndMetadata> notCommitted = get(admin.listConsumerGroupOffsets(Map.of(
                    empty1, new ListConsumerGroupOffsetsSpec().topicPartitions(List.of(p1, p2))))
                    .partitionsToOffsetAndMetadata(empty1));
            Map<TopicPartition, OffsetAndMetadata> expectedNotCommitted = new HashMap<>();
            expectedNotCommitted.put(p1, new OffsetAndMetadata(7));
            expectedNotCommitted.put(p2, null);
            assertThat(notCommitted).as("p2 was never committed").isEqualTo(expectedNotCommitted);

            // OffsetDelete: fine for a partition nobody subscribes to, refused while a member subscribes.
            DeleteConsumerGroupOffsetsResult deleted = admin.deleteConsumerGroupOffsets(empty1, Set.of(p0));
            get(deleted.all());
            assertThat(committed(admin, empty1)).isEqualTo(Map.of(p1, 7L));
            DeleteConsumerGroupOffsetsResult refused = admin.deleteConsumerGroupOffsets(stable, Set.of(p0));
            assertFailsWith(refused.partitionResult(p0), GroupSubscribedToTopicException.class);
            assertThat(committed(admin, stable)).as("nothing deleted").isEqualTo(Clients.endOffsets(fixture, 30));
            assertFailsWith(admin.deleteConsumerGroupOffsets(unknown, Set.of(p0)).all(), GroupIdNotFoundException.class);

            // DeleteGroups: each group its own answer.
            DeleteConsumerGroupsResult deleteGroups = admin.deleteConsumerGroups(List.of(empty2, stable, unknown));
            get(deleteGroups.deletedGroups().get(empty2));
            assertFailsWith(deleteGroups.deletedGroups().get(stable), GroupNotEmptyException.class);
            assertFailsWith(deleteGroups.deletedGroups().get(unknown), GroupIdNotFoundException.class);
            assertThat(listGroups(admin, ListGroupsOptions.forConsumerGroups()))
                    .containsKeys(empty1, stable).doesNotContainKey(empty2);
            assertThat(committed(admin, empty2)).as("a deleted group's offsets are gone").isEmpty();

            // Once its member has left, the group can be deleted too.
            member.stop(CloseOptions.GroupMembershipOperation.DEFAULT);
            member.assertHealthy();
            assertThat(describe(admin, stable).groupState()).isEqualTo(GroupState.EMPTY);
            get(admin.deleteConsumerGroups(List.of(stable)).all());
            assertThat(listGroups(admin, ListGroupsOptions.forConsumerGroups())).doesNotContainKey(stable);
            assertFailsWith(admin.describeConsumerGroups(List.of(stable)).describedGroups().get(stable),
                    GroupIdNotFoundException.class);
        }
    }

    /**
     * DescribeGroups v6 (KIP-1043) answers GROUP_ID_NOT_FOUND for a group that does not exist, where
     * older versions answered state Dead; the 4.4 Admin client surfaces it as {@link GroupIdNotFoundException}.
     */
    @Test
    void describingAGroupThatDoesNotExistFailsWithGroupIdNotFound() throws Exception {
        String unknown = TestBroker.unique("never-used");
        try (Admin admin = Clients.admin(BROKER.bootstrap())) {
            assertFailsWith(admin.describeConsumerGroups(List.of(unknown)).describedGroups().get(unknown),
                    GroupIdNotFoundException.class);
        }
    }

    /** Offsets live in the internal, compacted topic {@code __consumer_offsets}. */
    @Test
    void offsetsLiveInTheInternalCompactedTopic() throws Exception {
        String topic = TestBroker.unique("offsets-topic");
        Clients.createTopic(BROKER.bootstrap(), topic, 1, Map.of());
        commit(TestBroker.unique("offsets-topic"), Map.of(new TopicPartition(topic, 0), new OffsetAndMetadata(0)));
        try (Admin admin = Clients.admin(BROKER.bootstrap())) {
            Map<String, TopicListing> listed = get(admin.listTopics(new ListTopicsOptions().listInternal(true))
                    .namesToListings());
            assertThat(listed).containsKey("__consumer_offsets");
            assertThat(listed.get("__consumer_offsets").isInternal()).isTrue();
            assertThat(get(admin.listTopics().names())).as("hidden without listInternal")
                    .doesNotContain("__consumer_offsets");
            TopicDescription d = get(admin.describeTopics(List.of("__consumer_offsets")).allTopicNames())
                    .get("__consumer_offsets");
            assertThat(d.isInternal()).isTrue();
            assertThat(d.partitions()).hasSize(TestBroker.OFFSETS_TOPIC_PARTITIONS);
            ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, "__consumer_offsets");
            Config config = get(admin.describeConfigs(List.of(resource)).all()).get(resource);
            assertThat(Optional.ofNullable(config.get("cleanup.policy")).map(c -> c.value())).hasValue("compact");
        }
    }
}
