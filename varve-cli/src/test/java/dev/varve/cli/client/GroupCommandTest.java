package dev.varve.cli.client;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code varve group ...} end to end: a real consumer group consumes part of a topic and commits, and the CLI's lag,
 * resets and deletes are checked against what the Admin client reads back.
 */
class GroupCommandTest {
    static CliHarness cli;
    /** Record i of partition 0 has timestamp BASE + i s; record i of partition 1 has BASE + 10 s + i s. */
    static final long BASE = 1_700_000_000_000L;
    static final TopicPartition P0 = new TopicPartition("lagged", 0);
    static final TopicPartition P1 = new TopicPartition("lagged", 1);

    @BeforeAll
    static void start() throws Exception {
        cli = new CliHarness();
        cli.admin.createTopics(List.of(new NewTopic("lagged", 2, (short) 1))).all().get();
        try (var producer = new KafkaProducer<String, String>(Map.of("bootstrap.servers", cli.bootstrap(),
                "key.serializer", StringSerializer.class, "value.serializer", StringSerializer.class))) {
            for (int i = 0; i < 10; i++) {
                producer.send(new ProducerRecord<>("lagged", 0, BASE + i * 1000L, "k", "p0-" + i)).get();
            }
            for (int i = 0; i < 6; i++) {
                producer.send(new ProducerRecord<>("lagged", 1, BASE + 10_000L + i * 1000L, "k", "p1-" + i)).get();
            }
        }
    }

    @AfterAll
    static void stop() throws Exception {
        cli.close();
    }

    static Map<TopicPartition, Long> committed(String group) throws Exception {
        Map<TopicPartition, Long> result = new HashMap<>();
        cli.admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get().forEach((tp, om) -> {
            if (om != null) {
                result.put(tp, om.offset());
            }
        });
        return result;
    }

    static KafkaConsumer<String, String> consumer(String group) {
        return new KafkaConsumer<>(Map.of("bootstrap.servers", cli.bootstrap(), "group.id", group, "client.id", "lag-client",
                "auto.offset.reset", "earliest", "enable.auto.commit", "false", "max.poll.records", "4",
                "key.deserializer", StringDeserializer.class, "value.deserializer", StringDeserializer.class));
    }

    @Test
    void describeShowsMembersAndLagOfAGroupThatConsumedPartOfATopicAndResetIsRefusedWhileItRuns() throws Exception {
        Map<TopicPartition, Long> positions = new HashMap<>();
        try (KafkaConsumer<String, String> consumer = consumer("g-live")) {
            consumer.subscribe(List.of("lagged"));
            int consumed = 0;
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (consumed == 0 && System.nanoTime() < deadline) {
                ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
                consumed += records.count();
            }
            assertThat(consumed).as("records consumed").isBetween(1, 4);
            for (TopicPartition tp : List.of(P0, P1)) {
                positions.put(tp, consumer.position(tp));
            }
            consumer.commitSync(Map.of(P0, new OffsetAndMetadata(positions.get(P0)), P1, new OffsetAndMetadata(positions.get(P1))));
            assertThat(committed("g-live")).isEqualTo(positions);
            long lag0 = 10 - positions.get(P0);
            long lag1 = 6 - positions.get(P1);
            assertThat(lag0 + lag1).as("only part consumed").isEqualTo(16 - consumed);

            CliHarness.Result json = cli.run("group", "describe", "g-live", "-o", "json");
            assertThat(json.exit()).as(json.toString()).isZero();
            JsonNode doc = json.json();
            assertThat(doc.get("group").asText()).isEqualTo("g-live");
            assertThat(doc.get("state").asText()).isEqualTo("Stable");
            assertThat(doc.get("type").asText()).isEqualTo("classic");
            assertThat(doc.get("coordinator").get("id").asInt()).isEqualTo(cli.nodeId());
            assertThat(doc.get("member-count").asInt()).isEqualTo(1);
            JsonNode member = doc.get("members").get(0);
            assertThat(member.get("client-id").asText()).isEqualTo("lag-client");
            assertThat(member.get("host").asText()).isNotEmpty();
            assertThat(member.get("assigned").get("lagged").toString()).isEqualTo("[0,1]");
            JsonNode rows = doc.get("partitions");
            assertThat(rows).hasSize(2);
            for (JsonNode row : rows) {
                TopicPartition tp = new TopicPartition(row.get("topic").asText(), row.get("partition").asInt());
                long end = tp.equals(P0) ? 10 : 6;
                assertThat(row.get("current-offset").asLong()).isEqualTo(positions.get(tp));
                assertThat(row.get("log-end-offset").asLong()).isEqualTo(end);
                assertThat(row.get("lag").asLong()).as("lag of %s", tp).isEqualTo(end - positions.get(tp));
                assertThat(row.get("member-id").asText()).isEqualTo(member.get("member-id").asText());
                assertThat(row.get("client-id").asText()).isEqualTo("lag-client");
            }
            assertThat(doc.get("total-lag").asLong()).isEqualTo(lag0 + lag1);

            CliHarness.Result text = cli.run("group", "describe", "g-live");
            assertThat(text.exit()).as(text.toString()).isZero();
            assertThat(text.out()).containsPattern("STATE\\s+Stable").containsPattern("TOTAL-LAG\\s+" + (lag0 + lag1))
                    .contains("MEMBERS", "PARTITIONS").containsPattern("lag-client\\s+\\S+\\s+-\\s+lagged:0,1")
                    .containsPattern("lagged\\s+0\\s+" + positions.get(P0) + "\\s+10\\s+" + lag0 + "\\s+\\S+\\s+lag-client")
                    .containsPattern("lagged\\s+1\\s+" + positions.get(P1) + "\\s+6\\s+" + lag1 + "\\s+\\S+\\s+lag-client");

            CliHarness.Result list = cli.run("group", "list", "-o", "json");
            assertThat(list.exit()).as(list.toString()).isZero();
            JsonNode listed = find(list.json(), "g-live");
            assertThat(listed.get("state").asText()).isEqualTo("Stable");
            assertThat(listed.get("type").asText()).isEqualTo("classic");
            assertThat(listed.get("protocol").asText()).isEqualTo("consumer");
            assertThat(listed.get("members").asInt()).isEqualTo(1);
            assertThat(cli.run("group", "list", "--state", "stable").out()).containsPattern("g-live\\s+classic\\s+consumer\\s+Stable\\s+1");
            assertThat(cli.run("group", "list", "--state", "empty").out()).doesNotContain("g-live");

            CliHarness.Result reset = cli.run("group", "reset-offsets", "g-live", "--all-topics", "--to-earliest", "--execute");
            assertThat(reset.exit()).isEqualTo(1);
            assertThat(reset.err()).startsWith("error: group g-live has 1 active member(s)").contains("stop its consumers first");
            assertThat(reset.err().lines().count()).isEqualTo(1);
            assertThat(committed("g-live")).as("unchanged").isEqualTo(positions);

            CliHarness.Result delete = cli.run("group", "delete", "g-live", "-o", "json");
            assertThat(delete.exit()).isEqualTo(1);
            assertThat(delete.json().get(0).get("status").asText()).contains("stop the group's consumers first");
        }
        // the consumer left: the group is empty and keeps its offsets
        CliHarness.Result empty = cli.run("group", "list", "--state", "Empty", "-o", "yaml");
        assertThat(find(empty.yaml(), "g-live").get("members").asInt()).isZero();
        CliHarness.Result after = cli.run("group", "describe", "g-live", "-o", "yaml");
        JsonNode doc = after.yaml();
        assertThat(doc.get("state").asText()).isEqualTo("Empty");
        assertThat(doc.get("members")).isEmpty();
        assertThat(doc.get("total-lag").asLong()).isEqualTo(16 - positions.get(P0) - positions.get(P1));
        assertThat(doc.get("partitions").get(0).get("member-id").isNull()).isTrue();
    }

    @Test
    void resetOffsetsIsADryRunUnlessExecutedAndMovesCommittedOffsetsAsAsked() throws Exception {
        String g = "g-reset";
        try (KafkaConsumer<String, String> consumer = consumer(g)) {
            consumer.assign(List.of(P0, P1));
            consumer.commitSync(Map.of(P0, new OffsetAndMetadata(4), P1, new OffsetAndMetadata(2)));
        }
        assertThat(committed(g)).isEqualTo(Map.of(P0, 4L, P1, 2L));

        CliHarness.Result dry = cli.run("group", "reset-offsets", g, "--all-topics", "--to-earliest");
        assertThat(dry.exit()).as(dry.toString()).isZero();
        assertThat(dry.out()).containsPattern("TOPIC\\s+PARTITION\\s+CURRENT-OFFSET\\s+NEW-OFFSET")
                .containsPattern("lagged\\s+0\\s+4\\s+0").containsPattern("lagged\\s+1\\s+2\\s+0").contains("Dry run: nothing changed")
                .contains("--execute");
        assertThat(committed(g)).as("a dry run changes nothing").isEqualTo(Map.of(P0, 4L, P1, 2L));

        JsonNode executed = cli.run("group", "reset-offsets", g, "--all-topics", "--to-earliest", "--execute", "-o", "json").json();
        assertThat(executed.get("executed").asBoolean()).isTrue();
        assertThat(executed.get("partitions").get(0).get("current-offset").asLong()).isEqualTo(4);
        assertThat(executed.get("partitions").get(0).get("new-offset").asLong()).isZero();
        assertThat(committed(g)).isEqualTo(Map.of(P0, 0L, P1, 0L));
        JsonNode described = cli.run("group", "describe", g, "-o", "json").json();
        assertThat(described.get("partitions").get(0).get("lag").asLong()).isEqualTo(10);
        assertThat(described.get("partitions").get(1).get("lag").asLong()).isEqualTo(6);
        assertThat(described.get("total-lag").asLong()).isEqualTo(16);

        assertThat(reset(g, "--topic", "lagged:0", "--shift-by", "3")).isEqualTo(Map.of(P0, 3L, P1, 0L));
        assertThat(reset(g, "--topic", "lagged:0", "--shift-by", "-5")).as("clamped to the log start").isEqualTo(Map.of(P0, 0L, P1, 0L));
        assertThat(reset(g, "--topic", "lagged:1", "--to-offset", "100")).as("clamped to the log end").isEqualTo(Map.of(P0, 0L, P1, 6L));
        assertThat(reset(g, "--topic", "lagged", "--to-offset", "2")).isEqualTo(Map.of(P0, 2L, P1, 2L));
        assertThat(reset(g, "--topic", "lagged", "--to-timestamp", Long.toString(BASE + 5000)))
                .as("p0's record 5 is the first at that time; all of p1 is later").isEqualTo(Map.of(P0, 5L, P1, 0L));
        assertThat(reset(g, "--topic", "lagged", "--to-datetime", Instant.ofEpochMilli(BASE + 12_500).toString()))
                .isEqualTo(Map.of(P0, 10L, P1, 3L));
        String withZone = Instant.ofEpochMilli(BASE + 7000).atOffset(ZoneOffset.ofHours(2)).toString();
        assertThat(reset(g, "--all-topics", "--to-datetime", withZone)).isEqualTo(Map.of(P0, 7L, P1, 0L));
        assertThat(reset(g, "--all-topics", "--to-latest")).isEqualTo(Map.of(P0, 10L, P1, 6L));
        assertThat(cli.run("group", "describe", g, "-o", "json").json().get("total-lag").asLong()).isZero();

        // a group that does not exist yet can be positioned before its consumers start
        assertThat(reset("g-new", "--topic", "lagged:1", "--to-offset", "5")).isEqualTo(Map.of(P1, 5L));
        CliHarness.Result noCommit = cli.run("group", "reset-offsets", "g-new", "--topic", "lagged:0", "--shift-by", "1");
        assertThat(noCommit.exit()).isEqualTo(1);
        assertThat(noCommit.err()).contains("no committed offset").contains("--to-earliest");
    }

    @Test
    void resetOffsetsRejectsBadInputWithTheRightErrorAndExitCode() throws Exception {
        CliHarness.Result both = cli.run("group", "reset-offsets", "g", "--all-topics", "--to-earliest", "--to-latest");
        assertThat(both.exit()).isEqualTo(2);
        assertThat(both.err()).contains("mutually exclusive");
        CliHarness.Result none = cli.run("group", "reset-offsets", "g", "--all-topics");
        assertThat(none.exit()).isEqualTo(2);
        assertThat(none.err()).contains("--to-earliest");
        assertThat(cli.run("group", "reset-offsets", "g", "--to-earliest").exit()).isEqualTo(2);

        CliHarness.Result date = cli.run("group", "reset-offsets", "g", "--topic", "lagged", "--to-datetime", "yesterday");
        assertThat(date.exit()).isEqualTo(1);
        assertThat(date.err()).startsWith("error: bad --to-datetime 'yesterday'").contains("2024-05-01T12:00:00Z");
        CliHarness.Result partition = cli.run("group", "reset-offsets", "g", "--topic", "lagged:7", "--to-earliest");
        assertThat(partition.exit()).isEqualTo(1);
        assertThat(partition.err()).contains("topic lagged has no partition 7");
        CliHarness.Result topic = cli.run("group", "reset-offsets", "g", "--topic", "nope", "--to-earliest");
        assertThat(topic.exit()).isEqualTo(1);
        assertThat(topic.err()).startsWith("error: ").contains("varve topic list");
        CliHarness.Result allOfNothing = cli.run("group", "reset-offsets", "never-seen", "--all-topics", "--to-earliest");
        assertThat(allOfNothing.exit()).isEqualTo(1);
        assertThat(allOfNothing.err()).contains("has no committed offsets").contains("--topic");
        CliHarness.Result state = cli.run("group", "list", "--state", "sleepy");
        assertThat(state.exit()).isEqualTo(1);
        assertThat(state.err()).contains("unknown group state 'sleepy'").contains("Stable");
    }

    @Test
    void deleteOffsetsAndDeleteRemoveWhatTheClusterKeeps() throws Exception {
        String g = "g-delete";
        try (KafkaConsumer<String, String> consumer = consumer(g)) {
            consumer.assign(List.of(P0, P1));
            consumer.commitSync(Map.of(P0, new OffsetAndMetadata(1), P1, new OffsetAndMetadata(1)));
        }
        CliHarness.Result offsets = cli.run("group", "delete-offsets", g, "--topic", "lagged:1");
        assertThat(offsets.exit()).as(offsets.toString()).isZero();
        assertThat(offsets.out()).containsPattern("lagged\\s+1\\s+OK");
        assertThat(committed(g)).isEqualTo(Map.of(P0, 1L));

        CliHarness.Result delete = cli.run("group", "delete", g, "missing-group");
        assertThat(delete.exit()).as(delete.toString()).isEqualTo(1);
        assertThat(delete.out()).containsPattern(g + "\\s+OK").containsPattern("missing-group\\s+.*varve group list");
        Set<String> groups = new java.util.HashSet<>();
        cli.admin.listGroups().all().get().forEach(l -> groups.add(l.groupId()));
        assertThat(groups).doesNotContain(g);
        assertThat(committed(g)).isEmpty();

        CliHarness.Result gone = cli.run("group", "describe", g);
        assertThat(gone.exit()).isEqualTo(1);
        assertThat(gone.err()).startsWith("error: group g-delete does not exist").contains("varve group list");
    }

    /** Runs reset-offsets --execute as JSON and returns the group's committed offsets read back with the Admin client. */
    private static Map<TopicPartition, Long> reset(String group, String... args) throws Exception {
        String[] all = new String[args.length + 6];
        all[0] = "group";
        all[1] = "reset-offsets";
        all[2] = group;
        System.arraycopy(args, 0, all, 3, args.length);
        all[args.length + 3] = "--execute";
        all[args.length + 4] = "-o";
        all[args.length + 5] = "json";
        CliHarness.Result r = cli.run(all);
        assertThat(r.exit()).as(r.toString()).isZero();
        assertThat(r.json().get("executed").asBoolean()).isTrue();
        Map<TopicPartition, Long> now = committed(group);
        for (JsonNode row : r.json().get("partitions")) {
            TopicPartition tp = new TopicPartition(row.get("topic").asText(), row.get("partition").asInt());
            assertThat(row.get("new-offset").asLong()).as("what the CLI says it set for %s", tp).isEqualTo(now.get(tp));
        }
        return now;
    }

    private static JsonNode find(JsonNode rows, String group) {
        for (JsonNode row : rows) {
            if (row.get("group").asText().equals(group)) {
                return row;
            }
        }
        throw new AssertionError("no group " + group + " in " + rows);
    }
}
