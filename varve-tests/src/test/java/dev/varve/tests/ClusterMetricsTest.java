package dev.varve.tests;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The metrics of a 3-node cluster (real processes) follow what happens to it: the records a producer
 * sends are counted once, by their leaders; a broker killed -9 shows up as under-replicated partitions
 * on the others and as a fenced broker; its restart as ISR expansions, with every partition back in
 * sync; a stalled broker as ISR shrinks; each node's /health/ready answers 200 once it serves.
 */
class ClusterMetricsTest {
    private static final Pattern ADMIN = Pattern.compile("admin listener on (http://[^ ]+) ");
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    @TempDir
    Path dir;

    /** The node's admin listener, from the last line its current process logged about it. */
    static String adminUrl(TestCluster.Node node) {
        Matcher m = ADMIN.matcher(node.log());
        String url = null;
        while (m.find()) {
            url = m.group(1);
        }
        if (url == null) {
            throw new IllegalStateException("node " + node.id + " logged no admin listener");
        }
        return url;
    }

    static HttpResponse<String> get(TestCluster.Node node, String path) throws Exception {
        return HTTP.send(HttpRequest.newBuilder(URI.create(adminUrl(node) + path)).timeout(Duration.ofSeconds(10)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    /** Sum over the nodes given of every series {@code name{...}} whose labels include {@code labels}. */
    static double sum(List<TestCluster.Node> nodes, String name, String... labels) throws Exception {
        double total = 0;
        for (TestCluster.Node node : nodes) {
            String page = get(node, "/metrics").body();
            Matcher m = Pattern.compile("^" + Pattern.quote(name) + "(\\{([^}]*)\\})? (\\S+)$", Pattern.MULTILINE).matcher(page);
            while (m.find()) {
                Map<String, String> found = new HashMap<>();
                if (m.group(2) != null) {
                    for (Matcher l = Pattern.compile("(\\w+)=\"([^\"]*)\"").matcher(m.group(2)); l.find(); ) {
                        found.put(l.group(1), l.group(2));
                    }
                }
                boolean match = true;
                for (int i = 0; i < labels.length; i += 2) {
                    match &= labels[i + 1].equals(found.get(labels[i]));
                }
                if (match) {
                    total += Double.parseDouble(m.group(3));
                }
            }
        }
        return total;
    }

    @Test
    @Timeout(value = 4, unit = TimeUnit.MINUTES)
    void metricsFollowProduceFailoverAndResync() throws Exception {
        // a stalled follower leaves the ISRs after 2 s, well before its session times out
        try (TestCluster cluster = TestCluster.start(dir, 3, Map.of("replica.lag.time.max.ms", "2000",
                "broker.session.timeout.ms", "9000"));
             Admin admin = cluster.admin()) {
            List<TestCluster.Node> all = cluster.nodes();
            TestCluster.createAndAwaitInSync(admin, new NewTopic("watched", 6, (short) 3), Duration.ofSeconds(60));
            try (KafkaProducer<String, String> p = cluster.producer(Map.of())) {
                for (int i = 0; i < 300; i++) {
                    p.send(new ProducerRecord<>("watched", i % 6, null, "v" + i));
                }
                p.flush();
            }
            // counted once, by each partition's leader; the followers count what they replicated
            assertThat(sum(all, "kafka_server_brokertopicmetrics_messagesin_total", "topic", "watched")).isEqualTo(300.0);
            await().atMost(Duration.ofSeconds(30)).ignoreExceptions().until(() -> sum(all, "kafka_server_brokertopicmetrics_replicationbytesout_total") > 0
                    && sum(all, "kafka_server_brokertopicmetrics_replicationbytesin_total") > 0);
            assertThat(sum(all, "kafka_server_replicamanager_underreplicatedpartitions")).isZero();
            assertThat(sum(all, "kafka_server_replicamanager_leadercount")).isGreaterThanOrEqualTo(6.0);
            assertThat(sum(all, "kafka_controller_kafkacontroller_activecontrollercount")).isEqualTo(1.0);
            // the active controller timed its events (the topic's creation among them); followers in sync
            assertThat(sum(all, "kafka_controller_controllereventmanager_eventqueuetimems_count_total")).isGreaterThan(0.0);
            assertThat(sum(all, "kafka_controller_controllereventmanager_eventqueueprocessingtimems_count_total")).isGreaterThan(0.0);
            await().atMost(Duration.ofSeconds(30)).ignoreExceptions().until(() ->
                    sum(all, "kafka_server_replicafetchermanager_maxlag", "clientId", "Replica") == 0.0);
            for (TestCluster.Node node : all) {
                assertThat(get(node, "/health/ready").statusCode()).isEqualTo(200);
            }
            // killed -9: the controller fences it (nothing listens on its port) and takes it out of the ISRs
            // not the active controller: a stalled controller would delay the ISR changes this test counts
            // until the stalled broker's session expired, and the controller's fencing is not a shrink
            int controller = admin.describeMetadataQuorum().quorumInfo().get(30, java.util.concurrent.TimeUnit.SECONDS).leaderId();
            TestCluster.Node victim = cluster.node(controller == 3 ? 2 : 3);
            victim.kill();
            List<TestCluster.Node> survivors = all.stream().filter(n -> n != victim).toList();
            await().atMost(Duration.ofSeconds(60)).ignoreExceptions().untilAsserted(() -> {
                assertThat(sum(survivors, "kafka_server_replicamanager_underreplicatedpartitions")).isEqualTo(6.0);
                assertThat(sum(List.of(cluster.node(controller)), "kafka_controller_kafkacontroller_fencedbrokercount")).isEqualTo(1.0);
                assertThat(sum(List.of(cluster.node(controller)), "kafka_controller_kafkacontroller_offlinepartitionscount")).isZero();
                assertThat(sum(survivors, "kafka_controller_kafkacontroller_activecontrollercount")).isEqualTo(1.0);
            });
            double expandsBefore = sum(survivors, "kafka_server_replicamanager_isrexpands_total");

            // restarted: it catches up and its leaders take it back into their ISRs (IsrExpandsPerSec)
            victim.start();
            await().atMost(Duration.ofSeconds(90)).ignoreExceptions().untilAsserted(() -> {
                assertThat(get(victim, "/health/ready").statusCode()).isEqualTo(200);
                assertThat(sum(all, "kafka_server_replicamanager_underreplicatedpartitions")).isZero();
                assertThat(sum(survivors, "kafka_server_replicamanager_isrexpands_total")).isGreaterThan(expandsBefore);
                assertThat(sum(List.of(cluster.node(controller)), "kafka_controller_kafkacontroller_fencedbrokercount")).isZero();
            });

            // stalled (SIGSTOP), still registered, while records arrive: its leaders drop it after
            // replica.lag.time.max.ms (IsrShrinksPerSec)
            double shrinksBefore = sum(survivors, "kafka_server_replicamanager_isrshrinks_total");
            // the producer connected and its metadata loaded before the stall: its sends then reach the leaders
            // while the stalled follower still counts as in sync, and wait for it (acks=all)
            try (KafkaProducer<String, String> p = cluster.producer(Map.of(org.apache.kafka.clients.producer.ProducerConfig.ACKS_CONFIG, "all"))) {
                for (int i = 0; i < 6; i++) {
                    p.send(new ProducerRecord<>("watched", i, null, "before-stall")).get(30, java.util.concurrent.TimeUnit.SECONDS);
                }
                victim.pause();
                try {
                    // records it does not fetch (a follower at the log end stays in sync however long it is silent);
                    // until the leaders drop it from their ISRs the sends wait in the produce purgatory
                    List<java.util.concurrent.Future<?>> sent = new java.util.ArrayList<>();
                    for (int i = 0; i < 60; i++) {
                        sent.add(p.send(new ProducerRecord<>("watched", i % 6, null, "late" + i)));
                    }
                    await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(20)).ignoreExceptions().until(() ->
                            sum(survivors, "kafka_server_delayedoperationpurgatory_purgatorysize", "delayedOperation", "Produce") > 0
                                    || sent.stream().allMatch(java.util.concurrent.Future::isDone));
                    assertThat(sent.stream().allMatch(java.util.concurrent.Future::isDone))
                            .as("acks=all sends were seen waiting before the ISR shrank").isFalse();
                    for (java.util.concurrent.Future<?> f : sent) {
                        f.get(30, java.util.concurrent.TimeUnit.SECONDS);
                    }
                    assertThat(sum(survivors, "kafka_server_delayedoperationpurgatory_purgatorysize", "delayedOperation", "Produce")).isZero();
                    await().atMost(Duration.ofSeconds(30)).ignoreExceptions().untilAsserted(() ->
                            assertThat(sum(survivors, "kafka_server_replicamanager_isrshrinks_total")).isGreaterThan(shrinksBefore));
                } finally {
                    victim.resume();
                }
            }
            await().atMost(Duration.ofSeconds(90)).ignoreExceptions().untilAsserted(() ->
                    assertThat(sum(all, "kafka_server_replicamanager_underreplicatedpartitions")).isZero());
        }
    }
}
