package dev.varve.bench;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;

import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

/**
 * The control-plane probes of {@code bench/scale-side-by-side.sh}, against any Kafka-protocol cluster
 * through the stock Admin client. Every timing is printed in seconds since {@code SINCE_MS} (epoch
 * milliseconds the script took just before the action), so the probe's own JVM start is not counted.
 *
 * <pre>
 *   ScaleProbe create-ready BOOT TOPIC PARTITIONS RF TIMEOUT_S   create the topic, wait until every partition
 *                                                                 has a leader and RF replicas in sync
 *   ScaleProbe ready BOOT TOPIC RF SINCE_MS TIMEOUT_S            wait until every partition has a leader and RF in sync
 *   ScaleProbe led-away BOOT TOPIC NODE SINCE_MS TIMEOUT_S       wait until no partition is led by NODE (or leaderless)
 *   ScaleProbe creates BOOT COUNT                                COUNT one-partition RF=3 CreateTopics one at a time,
 *                                                                 then as many DeleteTopics: "creates/s errors"
 * </pre>
 * A TOPIC of the form {@code NAME*K} means K topics NAME-0 .. NAME-(K-1) sharing the PARTITIONS, created
 * one CreateTopics each (Kafka refuses a request of more than 10,000 metadata records, so 10,000
 * partitions are ten topics and ten requests).
 * Prints one line: the seconds (or the figures), or "timeout" and exits 1.
 */
public final class ScaleProbe {
    private ScaleProbe() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println("usage: ScaleProbe create-ready|ready|led-away|creates BOOT ...");
            System.exit(2);
        }
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[1]);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 30_000);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 60_000);
        try (Admin admin = Admin.create(p)) {
            switch (args[0]) {
                case "create-ready" -> {
                    // the client connected and its metadata loaded first, so that the figure is the cluster's
                    // time, not this JVM's start and first round trips (about 0.4 s here, for either system)
                    warmUp(admin);
                    long since = System.currentTimeMillis();
                    List<String> topics = topics(args[2]);
                    int partitions = Integer.parseInt(args[3]) / topics.size();
                    short rf = Short.parseShort(args[4]);
                    for (String t : topics) { // one request each: Kafka refuses more than 10,000 records per request
                        admin.createTopics(List.of(new NewTopic(t, partitions, rf))).all().get(300, TimeUnit.SECONDS);
                    }
                    double created = (System.currentTimeMillis() - since) / 1000.0;
                    double ready = waitFor(admin, args[2], since, Long.parseLong(args[5]), d -> allInSync(d, rf));
                    System.out.printf("%.2f %.2f%n", created, ready);
                }
                case "ready" -> {
                    short rf = Short.parseShort(args[3]);
                    System.out.printf("%.2f%n", waitFor(admin, args[2], Long.parseLong(args[4]), Long.parseLong(args[5]),
                            d -> allInSync(d, rf)));
                }
                case "led-away" -> {
                    int node = Integer.parseInt(args[3]);
                    System.out.printf("%.2f%n", waitFor(admin, args[2], Long.parseLong(args[4]), Long.parseLong(args[5]),
                            d -> d.partitions().stream().allMatch(tp -> tp.leader() != null && !tp.leader().isEmpty()
                                    && tp.leader().id() != node)));
                }
                case "creates" -> creates(admin, Integer.parseInt(args[2]));
                default -> {
                    System.err.println("unknown probe " + args[0]);
                    System.exit(2);
                }
            }
        }
    }

    /** Between two describes of a topic while waiting for a state. */
    private static final long POLL_MS = 25;

    /** Connects to every broker and loads the cluster's metadata, as a long-running client would have. */
    private static void warmUp(Admin admin) throws Exception {
        for (Node node : admin.describeCluster().nodes().get(60, TimeUnit.SECONDS)) {
            admin.describeConfigs(List.of(new ConfigResource(ConfigResource.Type.BROKER, Integer.toString(node.id()))))
                    .all().get(60, TimeUnit.SECONDS);
        }
        admin.listTopics().names().get(60, TimeUnit.SECONDS);
    }

    private static boolean allInSync(TopicDescription d, int rf) {
        for (TopicPartitionInfo tp : d.partitions()) {
            if (tp.leader() == null || tp.leader().isEmpty() || tp.isr().size() < rf) {
                return false;
            }
        }
        return true;
    }

    private static List<String> topics(String spec) {
        int star = spec.indexOf('*');
        if (star < 0) {
            return List.of(spec);
        }
        String name = spec.substring(0, star);
        int k = Integer.parseInt(spec.substring(star + 1));
        return java.util.stream.IntStream.range(0, k).mapToObj(i -> name + "-" + i).toList();
    }

    private static double waitFor(Admin admin, String spec, long sinceMs, long timeoutS,
                                  java.util.function.Predicate<TopicDescription> done) throws InterruptedException {
        long deadline = System.currentTimeMillis() + timeoutS * 1000;
        List<String> topics = topics(spec);
        while (System.currentTimeMillis() < deadline) {
            long asked = System.currentTimeMillis();
            String outcome;
            try {
                Map<String, TopicDescription> d = admin.describeTopics(topics).allTopicNames().get(2, TimeUnit.SECONDS);
                if (d.size() == topics.size() && d.values().stream().allMatch(done)) {
                    trace(asked, sinceMs, "done");
                    return (System.currentTimeMillis() - sinceMs) / 1000.0;
                }
                outcome = "not yet";
            } catch (Exception e) {
                // a broker just died or is starting: ask again
                outcome = String.valueOf(e.getCause() != null ? e.getCause() : e);
            }
            trace(asked, sinceMs, outcome);
            Thread.sleep(POLL_MS);
        }
        System.out.println("timeout");
        System.exit(1);
        return -1;
    }

    /** One describe of the wait, into the run's log (stderr): when it was asked, how long it took, what it found. */
    private static void trace(long askedMs, long sinceMs, String outcome) {
        long now = System.currentTimeMillis();
        System.err.printf("describe at +%d ms took %d ms: %s%n", askedMs - sinceMs, now - askedMs, outcome);
    }

    private static void creates(Admin admin, int count) {
        String prefix = "probe-" + System.nanoTime() + "-";
        int errors = 0;
        long start = System.nanoTime();
        long[] each = new long[count];
        for (int i = 0; i < count; i++) {
            long t0 = System.nanoTime();
            try {
                admin.createTopics(List.of(new NewTopic(prefix + i, 1, (short) 3))).all().get(60, TimeUnit.SECONDS);
                each[i] = System.nanoTime() - t0;
            } catch (Exception e) {
                errors++;
                System.err.println("create " + prefix + i + ": " + e.getMessage());
            }
        }
        double createSeconds = (System.nanoTime() - start) / 1e9;
        long[] sorted = each.clone();
        java.util.Arrays.sort(sorted);
        System.err.printf("create latency ms: p10 %.1f p50 %.1f p90 %.1f max %.1f%n", sorted[count / 10] / 1e6,
                sorted[count / 2] / 1e6, sorted[count * 9 / 10] / 1e6, sorted[count - 1] / 1e6);
        start = System.nanoTime();
        for (int i = 0; i < count; i++) {
            try {
                admin.deleteTopics(List.of(prefix + i)).all().get(60, TimeUnit.SECONDS);
            } catch (Exception e) {
                errors++;
                System.err.println("delete " + prefix + i + ": " + e.getMessage());
            }
        }
        double deleteSeconds = (System.nanoTime() - start) / 1e9;
        System.out.printf("%.1f %.1f %d%n", count / createSeconds, count / deleteSeconds, errors);
    }
}
