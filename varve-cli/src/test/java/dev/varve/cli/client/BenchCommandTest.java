package dev.varve.cli.client;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/** {@code varve bench produce|consume} end to end against a real broker. */
class BenchCommandTest {
    static CliHarness cli;

    @BeforeAll
    static void start() throws Exception {
        cli = new CliHarness();
    }

    @AfterAll
    static void stop() throws Exception {
        BenchCommand.Progress.plainIntervalMs = 5000;
        cli.close();
    }

    static void create(String topic, int partitions) throws Exception {
        cli.admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
    }

    static long endOffsetSum(String topic, int partitions) throws Exception {
        Map<TopicPartition, OffsetSpec> specs = new HashMap<>();
        for (int p = 0; p < partitions; p++) {
            specs.put(new TopicPartition(topic, p), OffsetSpec.latest());
        }
        return cli.admin.listOffsets(specs).all().get().values().stream().mapToLong(i -> i.offset()).sum();
    }

    @Test
    void producesTheRecordsAskedForWithLatencyPercentilesAndConsumesThemBack() throws Exception {
        create("bench", 3);
        CliHarness.Result r = cli.run("bench", "produce", "bench", "--records", "5000", "--record-size", "100", "-o", "json");
        assertThat(r.exit()).as(r.toString()).isZero();
        assertThat(endOffsetSum("bench", 3)).isEqualTo(5000);
        JsonNode s = r.json();
        assertThat(s.get("records").asLong()).isEqualTo(5000);
        assertThat(s.get("errors").asLong()).isZero();
        assertThat(s.get("bytes").asLong()).isEqualTo(500_000);
        assertThat(s.get("records-per-second").asDouble()).isPositive();
        assertThat(s.get("mb-per-second").asDouble()).isPositive();
        JsonNode l = s.get("latency-ms");
        double[] ps = {l.get("p50").asDouble(), l.get("p95").asDouble(), l.get("p99").asDouble(), l.get("p999").asDouble(),
                l.get("max").asDouble()};
        assertThat(ps[0]).isPositive();
        assertThat(ps).isSorted();
        assertThat(l.get("avg").asDouble()).isBetween(0.0, ps[4]);
        // every latency is inside the run
        assertThat(ps[4]).isLessThanOrEqualTo(s.get("elapsed-seconds").asDouble() * 1000 + 1);

        CliHarness.Result c = cli.run("bench", "consume", "bench", "--records", "5000", "-o", "yaml");
        assertThat(c.exit()).as(c.toString()).isZero();
        assertThat(c.yaml().get("records").asLong()).isEqualTo(5000);
        assertThat(c.yaml().get("bytes").asLong()).isEqualTo(500_000);
        assertThat(c.yaml().get("mb-per-second").asDouble()).isPositive();

        // no amount: everything the topic holds now, in text
        CliHarness.Result all = cli.run("bench", "consume", "bench");
        assertThat(all.exit()).as(all.toString()).isZero();
        assertThat(all.out()).containsPattern("Consumed 5,000 records \\(0\\.48 MB\\) from bench in [0-9.]+ s: [0-9,]+ records/s");
    }

    @Test
    void consumingInAGroupCommitsItsOffsets() throws Exception {
        create("bench-group", 2);
        assertThat(cli.run("bench", "produce", "bench-group", "-n", "300", "-s", "10", "-q").exit()).isZero();
        CliHarness.Result c = cli.run("bench", "consume", "bench-group", "--group", "benchers", "-o", "json");
        assertThat(c.exit()).as(c.toString()).isZero();
        assertThat(c.json().get("records").asLong()).isEqualTo(300);
        assertThat(c.json().get("group").asText()).isEqualTo("benchers");
        Map<TopicPartition, OffsetAndMetadata> committed = cli.admin.listConsumerGroupOffsets("benchers")
                .partitionsToOffsetAndMetadata().get();
        assertThat(committed.values().stream().mapToLong(OffsetAndMetadata::offset).sum()).isEqualTo(300);
    }

    @Test
    void aDurationRunShowsProgressAndEveryAckedRecordIsInTheTopic() throws Exception {
        create("bench-time", 1);
        BenchCommand.Progress.plainIntervalMs = 200;
        try {
            CliHarness.Result r = cli.run("bench", "produce", "bench-time", "--duration", "1", "--throughput", "2000",
                    "--acks", "1", "--linger-ms", "2", "--batch-size", "4096", "--compression", "lz4", "-o", "json");
            assertThat(r.exit()).as(r.toString()).isZero();
            JsonNode s = r.json();
            long n = s.get("records").asLong();
            assertThat(endOffsetSum("bench-time", 1)).isEqualTo(n);
            assertThat(s.get("elapsed-seconds").asDouble()).isBetween(0.95, 5.0);
            // about 2000 a second for one second, never more than the limit allows
            assertThat(n).isBetween(1000L, 2001L);
            assertThat(s.get("compression").asText()).isEqualTo("lz4");
            assertThat(r.err()).containsPattern("produced [0-9,]+ records  [0-9,]+ records/s  [0-9.]+ MB/s  elapsed [0-9.]+s");
        } finally {
            BenchCommand.Progress.plainIntervalMs = 5000;
        }
    }

    @Test
    void textSummaryAndQuietProgress() throws Exception {
        create("bench-text", 1);
        CliHarness.Result r = cli.run("bench", "produce", "bench-text", "-n", "1000", "-s", "1024", "--producers", "2", "-q");
        assertThat(r.exit()).as(r.toString()).isZero();
        assertThat(r.err()).isEmpty();
        assertThat(r.out()).containsPattern("Produced 1,000 records \\(0\\.98 MB\\) to bench-text in [0-9.]+ s")
                .containsPattern("Latency \\(ms, send to ack\\): avg [0-9.]+  p50 [0-9.]+  p95 [0-9.]+  p99 [0-9.]+  p99\\.9 [0-9.]+  max [0-9.]+");
        assertThat(endOffsetSum("bench-text", 1)).isEqualTo(1000);
    }

    @Test
    void badInputIsExplained() throws Exception {
        CliHarness.Result missing = cli.run("bench", "produce", "no-such-topic", "-n", "10");
        assertThat(missing.exit()).isEqualTo(1);
        assertThat(missing.err()).contains("error: topic 'no-such-topic' does not exist (create it with `varve topic create no-such-topic`)");

        CliHarness.Result both = cli.run("bench", "produce", "bench", "-n", "10", "--duration", "1");
        assertThat(both.exit()).isEqualTo(2);
        assertThat(both.err()).contains("mutually exclusive");

        CliHarness.Result acks = cli.run("bench", "produce", "bench", "--acks", "2");
        assertThat(acks.exit()).isEqualTo(1);
        assertThat(acks.err()).contains("--acks must be all, 1 or 0");

        // the producer refuses every record: the summary says so and the run fails with the client's reason
        create("bench-refused", 1);
        CliHarness.Result refused = cli.run("bench", "produce", "bench-refused", "-n", "50", "-s", "2000", "-q",
                "-X", "max.request.size=1000", "-o", "json");
        assertThat(refused.exit()).as(refused.toString()).isEqualTo(1);
        assertThat(refused.json().get("records").asLong()).isZero();
        assertThat(refused.json().get("errors").asLong()).isPositive();
        assertThat(refused.err()).startsWith("error: sending failed after 0 acknowledged records: ").contains("max.request.size")
                .hasLineCount(1);
        assertThat(endOffsetSum("bench-refused", 1)).isZero();

        create("bench-empty", 1);
        CliHarness.Result starved = cli.run("bench", "consume", "bench-empty", "-n", "10", "--timeout", "1");
        assertThat(starved.exit()).as(starved.toString()).isEqualTo(1);
        assertThat(starved.out()).contains("Consumed 0 records");
        assertThat(starved.err()).contains("error: stopped after 0 records of the 10 asked for: nothing arrived for 1 s");
    }

    @Test
    void histogramPercentilesAreWithinOnePercentOfTheExactOnes() {
        Random random = new Random(42);
        LatencyHistogram h = new LatencyHistogram();
        long[] values = new long[20_000];
        for (int i = 0; i < values.length; i++) {
            values[i] = (long) Math.exp(random.nextDouble() * 16); // 1 µs .. ~9 s
            h.record(values[i]);
        }
        Arrays.sort(values);
        for (double p : new double[] {0.5, 0.9, 0.99, 0.999, 1.0}) {
            long exact = values[(int) Math.ceil(p * values.length) - 1];
            assertThat((double) h.percentile(p)).as("p" + p).isCloseTo(exact, within(Math.max(1, exact / 64.0)));
            assertThat(h.percentile(p)).isGreaterThanOrEqualTo(exact);
        }
        assertThat(h.max()).isEqualTo(values[values.length - 1]);
        assertThat(h.count()).isEqualTo(values.length);
        List<Long> each = new ArrayList<>();
        for (long v = 0; v < 1 << 20; v = v * 3 / 2 + 1) {
            int i = LatencyHistogram.index(v);
            assertThat(LatencyHistogram.highest(i)).isGreaterThanOrEqualTo(v);
            assertThat(i == 0 || LatencyHistogram.highest(i - 1) < v).as("bucket of " + v).isTrue();
            each.add(v);
        }
        assertThat(each).isNotEmpty();
    }
}
