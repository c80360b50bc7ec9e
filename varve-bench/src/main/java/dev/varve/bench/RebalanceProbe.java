package dev.varve.bench;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Consumer-group rebalance time with stock Java consumers, against any Kafka-protocol broker: the probe of
 * {@code bench/rebalance-side-by-side.sh} (issue 17), and of the CI-sized {@code RebalanceProbeTest}.
 *
 * <pre>
 *   RebalanceProbe BOOT MODE MEMBERS PARTITIONS RUNS [CHANGE] [TIMEOUT_S]
 * </pre>
 * MODE is one of
 * <ul>
 *   <li>{@code classic}: {@code group.protocol=classic} with {@link RangeAssignor}, the first of the Java
 *       client's default {@code partition.assignment.strategy} (eager: every member gives up all its partitions
 *       in every rebalance);</li>
 *   <li>{@code classic-cooperative}: classic with {@link CooperativeStickyAssignor} (incremental);</li>
 *   <li>{@code consumer}: {@code group.protocol=consumer} (KIP-848), server-side assignor {@code uniform};</li>
 *   <li>{@code consumer-range}: KIP-848 with the server-side {@code range} assignor.</li>
 * </ul>
 * The client-side timing is the Java client's default in every mode (classic: heartbeat every 3 s, 45 s session);
 * a KIP-848 member's heartbeat interval is the broker's ({@code group.consumer.heartbeat.interval.ms}).
 * {@code -Drebalance.consumer=key=value,key=value} adds consumer settings (e.g. {@code heartbeat.interval.ms=500}).
 *
 * <p>Creates the topic {@code rebalance-PARTITIONS} (RF 1) unless it exists; it stays empty: rebalance time is
 * about assignment, not data, and every member pauses the partitions it is given, so nothing is fetched. Each of
 * RUNS runs uses a fresh group id and three phases, each timed from just before the change until the group has
 * <em>settled</em>:
 * <ol>
 *   <li>join: MEMBERS consumers, all constructed first, subscribe at once (the clock starts just before);</li>
 *   <li>leave: CHANGE members (spread over the group) close, leaving the group;</li>
 *   <li>rejoin: CHANGE new consumers (constructed first) subscribe.</li>
 * </ol>
 * Before the leave and the rejoin the probe pauses a random 0 to {@code -Drebalance.jitter.ms} (default 5000: set it
 * to the members' heartbeat interval) ms, from a generator seeded with {@code -Drebalance.seed} (default 17), so both
 * brokers see the same pauses: where a change falls in the members' heartbeat period decides how long it waits for
 * their next heartbeats, and without the pause the probe's own pace would fix that point for every run.
 * Settled means: every live member's own view (its {@link ConsumerRebalanceListener} callbacks: assigned minus
 * revoked and lost) is disjoint from the others', together they hold every partition exactly once, and they are
 * balanced (the largest share at most one more than the smallest: what range, cooperative-sticky and uniform all
 * give one topic); and a describeConsumerGroups sent after that reports the group STABLE with exactly the live
 * members, each with the partitions it believes it owns. The phase's time is when that describe was sent (the
 * probe looks every {@value #CHECK_MS} ms).
 *
 * <p>{@code -Drebalance.warmup} (default 1) runs come first and are not counted: on a fresh broker the first group
 * pays for cold code on both sides (measured: twice to seven times the broker CPU of the runs after it).
 * Prints one line per run on stderr ({@code run K: join S leave S rejoin S}), and on stdout the medians in
 * seconds: {@code JOIN LEAVE REJOIN}. A phase that does not settle within TIMEOUT_S (default 180) prints what the
 * broker and the members saw on stderr, {@code timeout} on stdout, and exits 1.
 *
 * <p>Threads: one polling thread per member (as an application has), plus the client's own (classic: a heartbeat
 * thread each; KIP-848: a network thread each): about 2 x MEMBERS, mostly asleep.
 */
public final class RebalanceProbe {
    /** Between two looks at the members' views (and, once they agree, a describe). */
    static final long CHECK_MS = 20;
    /** Each member's poll: how quickly it runs rebalance callbacks and notices a stop. */
    private static final Duration POLL = Duration.ofMillis(100);
    private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(30);
    /** {@code -Drebalance.trace=true}: every callback of a phase on stderr, with its time since the phase began. */
    private static final boolean TRACE = Boolean.getBoolean("rebalance.trace");
    /** The callbacks of the phase under way, when tracing: "+SECONDS member +assigned/-revoked". */
    private static final java.util.concurrent.ConcurrentLinkedQueue<String> EVENTS =
            new java.util.concurrent.ConcurrentLinkedQueue<>();
    private static volatile long phaseStartNanos;

    private RebalanceProbe() {
    }

    /** One phase's outcome: seconds to settle, each member's partitions then, and the callbacks it took. */
    public record Phase(String name, double seconds, Map<String, Set<TopicPartition>> assignment, int callbacks) {
    }

    /** The three phases of a run. */
    public record Result(Phase join, Phase leave, Phase rejoin) {
        List<Phase> phases() {
            return List.of(join, leave, rejoin);
        }
    }

    /** A phase did not settle in time; the message says what the broker and the members saw. */
    public static final class NotSettledException extends RuntimeException {
        NotSettledException(String message) {
            super(message);
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 5) {
            System.err.println("usage: RebalanceProbe BOOT classic|classic-cooperative|consumer|consumer-range MEMBERS"
                    + " PARTITIONS RUNS [CHANGE] [TIMEOUT_S]");
            System.exit(2);
        }
        String bootstrap = args[0];
        String mode = args[1];
        int members = Integer.parseInt(args[2]);
        int partitions = Integer.parseInt(args[3]);
        int runs = Integer.parseInt(args[4]);
        int change = args.length > 5 ? Integer.parseInt(args[5]) : 10;
        Duration timeout = Duration.ofSeconds(args.length > 6 ? Long.parseLong(args[6]) : 180);
        String topic = "rebalance-" + partitions;
        Map<String, Object> overrides = consumerOverrides(System.getProperty("rebalance.consumer", ""));
        long jitterMs = Long.getLong("rebalance.jitter.ms", 5_000);
        // the same seed on both brokers: the same pauses before the leave and rejoin phases
        java.util.Random jitter = new java.util.Random(Long.getLong("rebalance.seed", 17));
        createTopic(bootstrap, topic, partitions);
        double[][] seconds = new double[3][runs];
        // warm-up runs first, not counted: a fresh broker's first group pays for its cold code (and __consumer_offsets)
        int warmups = Integer.getInteger("rebalance.warmup", 1);
        for (int r = -warmups; r < runs; r++) {
            String group = "rebalance-" + mode + "-" + System.currentTimeMillis();
            String label = r < 0 ? "warm-up run (not counted)" : "run " + (r + 1);
            Result result;
            try {
                result = run(bootstrap, topic, group, mode, members, change, overrides, timeout, jitter, jitterMs);
            } catch (NotSettledException e) {
                System.err.println(label + " (" + group + "): " + e.getMessage());
                System.out.println("timeout");
                System.exit(1);
                return;
            }
            List<Phase> phases = result.phases();
            StringBuilder line = new StringBuilder(label + " (" + group + "):");
            for (int i = 0; i < 3; i++) {
                if (r >= 0) {
                    seconds[i][r] = phases.get(i).seconds();
                }
                line.append(String.format(" %s %.2f s (%d callbacks)", phases.get(i).name(), phases.get(i).seconds(),
                        phases.get(i).callbacks()));
            }
            System.err.println(line);
            Thread.sleep(2_000); // the last group's members gone from the broker's view before the next
        }
        System.out.printf("%.2f %.2f %.2f%n", median(seconds[0]), median(seconds[1]), median(seconds[2]));
        System.exit(0); // no client thread may keep the JVM up
    }

    /** "key=value,key=value" (-Drebalance.consumer): consumer settings on top of the mode's. */
    static Map<String, Object> consumerOverrides(String spec) {
        Map<String, Object> out = new HashMap<>();
        for (String kv : spec.split(",")) {
            if (!kv.isBlank()) {
                int eq = kv.indexOf('=');
                if (eq < 1) {
                    throw new IllegalArgumentException("not key=value: " + kv);
                }
                out.put(kv.substring(0, eq).trim(), kv.substring(eq + 1).trim());
            }
        }
        return out;
    }

    static double median(double[] values) {
        double[] s = values.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    /** Creates {@code topic} with {@code partitions} partitions, replication factor 1, unless it exists. */
    public static void createTopic(String bootstrap, String topic, int partitions) throws Exception {
        try (Admin admin = admin(bootstrap)) {
            try {
                admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get(120, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof TopicExistsException)) {
                    throw e;
                }
            }
            int found = admin.describeTopics(List.of(topic)).allTopicNames().get(60, TimeUnit.SECONDS)
                    .get(topic).partitions().size();
            if (found != partitions) {
                throw new IllegalStateException(topic + " has " + found + " partitions, not " + partitions);
            }
        }
    }

    /**
     * One run of the three phases on {@code topic} (which must exist) with a new {@code group}; every member is
     * closed before it returns. {@code overrides} go into every consumer's configuration after the mode's.
     *
     * @throws NotSettledException when a phase does not settle within {@code timeout}
     */
    public static Result run(String bootstrap, String topic, String group, String mode, int members, int change,
                             Map<String, Object> overrides, Duration timeout) throws Exception {
        return run(bootstrap, topic, group, mode, members, change, overrides, timeout, new java.util.Random(0), 0);
    }

    /**
     * As {@link #run(String, String, String, String, int, int, Map, Duration)}, with a pause of a random 0 to
     * {@code jitterMs} ms (drawn from {@code jitter}) before the leave and the rejoin phase, outside the timing.
     * Members heartbeat on a fixed period, so how long a change waits for the next heartbeats depends on where in
     * that period it falls; without the pause that phase would be set by the probe's own pace (the previous phase
     * ends just after a round of heartbeats), the same in every run, and one broker could be lucky in every run.
     */
    public static Result run(String bootstrap, String topic, String group, String mode, int members, int change,
                             Map<String, Object> overrides, Duration timeout, java.util.Random jitter, long jitterMs)
            throws Exception {
        if (change < 1 || change >= members) {
            throw new IllegalArgumentException("CHANGE must be between 1 and MEMBERS - 1");
        }
        List<Member> everyone = new ArrayList<>();
        EVENTS.clear(); // the last run's closes
        try (Admin admin = admin(bootstrap)) {
            int partitions = admin.describeTopics(List.of(topic)).allTopicNames().get(60, TimeUnit.SECONDS)
                    .get(topic).partitions().size();
            try { // connected, the coordinator known: the admin's first round trips are not in the figures
                admin.describeConsumerGroups(List.of(group)).all().get(60, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                // a group that does not exist yet may be reported as an error: connected all the same
            }
            List<Member> live = new ArrayList<>();
            for (int i = 0; i < members; i++) {
                live.add(new Member("m-" + i, config(bootstrap, group, "m-" + i, mode, overrides), topic));
            }
            everyone.addAll(live);
            long t0 = System.nanoTime();
            live.forEach(Member::go);
            Phase join = awaitSettled("join", admin, group, live, partitions, t0, timeout);

            // the leavers are spread over the group (with range, the members of one end would hold neighbours)
            List<Member> leaving = new ArrayList<>();
            for (int i = 0; i < change; i++) {
                leaving.add(live.get(i * members / change));
            }
            pause(jitter, jitterMs);
            t0 = System.nanoTime();
            leaving.forEach(Member::stop);
            live.removeAll(leaving);
            Phase leave = awaitSettled("leave", admin, group, live, partitions, t0, timeout);
            for (Member m : leaving) {
                m.awaitClosed();
                m.assertHealthy(); // its close (revoke, leave) went through
            }

            List<Member> joining = new ArrayList<>();
            for (int i = members; i < members + change; i++) {
                joining.add(new Member("m-" + i, config(bootstrap, group, "m-" + i, mode, overrides), topic));
            }
            everyone.addAll(joining);
            live.addAll(joining);
            pause(jitter, jitterMs);
            t0 = System.nanoTime();
            joining.forEach(Member::go);
            Phase rejoin = awaitSettled("rejoin", admin, group, live, partitions, t0, timeout);
            return new Result(join, leave, rejoin);
        } finally {
            everyone.forEach(Member::stop); // all close at once, each on its own thread
            for (Member m : everyone) {
                m.awaitClosed();
            }
        }
    }

    private static void pause(java.util.Random jitter, long jitterMs) throws InterruptedException {
        if (jitterMs > 0) {
            Thread.sleep((long) (jitter.nextDouble() * jitterMs));
        }
    }

    static Properties config(String bootstrap, String group, String clientId, String mode, Map<String, Object> overrides) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, clientId);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        // nothing to commit: the group's work is assignment only
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        switch (mode) {
            case "classic" -> {
                p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
                p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, RangeAssignor.class.getName());
            }
            case "classic-cooperative" -> {
                p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
                p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, CooperativeStickyAssignor.class.getName());
            }
            case "consumer" -> {
                p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
                p.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, "uniform");
            }
            case "consumer-range" -> {
                p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
                p.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, "range");
            }
            default -> throw new IllegalArgumentException("unknown mode " + mode);
        }
        p.putAll(overrides);
        return p;
    }

    private static Admin admin(String bootstrap) {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 30_000);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 60_000);
        return Admin.create(p);
    }

    /** Waits until the group has settled with exactly {@code live} (see the class comment). */
    private static Phase awaitSettled(String name, Admin admin, String group, List<Member> live, int partitions,
                                      long t0, Duration timeout) throws Exception {
        long deadline = t0 + timeout.toNanos();
        phaseStartNanos = t0;
        int callbacksBefore = 0;
        for (Member m : live) {
            callbacksBefore += m.callbacks.get();
        }
        String lastSeen = "the members' views never agreed";
        while (System.nanoTime() < deadline) {
            for (Member m : live) {
                m.assertHealthy();
            }
            Map<String, Set<TopicPartition>> views = new TreeMap<>();
            for (Member m : live) {
                views.put(m.name, Set.copyOf(m.owned));
            }
            String clients = checkViews(views, partitions);
            if (clients == null) {
                long asked = System.nanoTime();
                ConsumerGroupDescription d;
                try {
                    d = admin.describeConsumerGroups(List.of(group)).all().get(30, TimeUnit.SECONDS).get(group);
                } catch (ExecutionException e) {
                    lastSeen = "describe failed: " + e.getCause();
                    Thread.sleep(CHECK_MS);
                    continue;
                }
                String broker = checkDescription(d, views);
                if (broker == null) {
                    // the views must not have moved while the broker was asked
                    boolean unchanged = true;
                    for (Member m : live) {
                        unchanged &= m.owned.equals(views.get(m.name));
                    }
                    if (unchanged) {
                        int callbacks = -callbacksBefore;
                        for (Member m : live) {
                            callbacks += m.callbacks.get();
                        }
                        if (TRACE) {
                            System.err.println(name + " callbacks: " + String.join(" ", EVENTS));
                            EVENTS.clear();
                        }
                        return new Phase(name, (asked - t0) / 1e9, views, callbacks);
                    }
                    lastSeen = "a member's view changed during the describe";
                } else {
                    lastSeen = "the members agree; the broker: " + broker;
                }
            } else {
                lastSeen = clients;
            }
            Thread.sleep(CHECK_MS);
        }
        throw new NotSettledException(name + " of " + live.size() + " members did not settle in " + timeout.toSeconds()
                + " s; last check: " + lastSeen + "\n" + diagnostics(admin, group, live));
    }

    /** Null when the views are disjoint, cover all {@code partitions} and are balanced; otherwise what is wrong. */
    static String checkViews(Map<String, Set<TopicPartition>> views, int partitions) {
        Set<TopicPartition> union = new HashSet<>();
        int sum = 0;
        int min = Integer.MAX_VALUE;
        int max = 0;
        for (Set<TopicPartition> v : views.values()) {
            union.addAll(v);
            sum += v.size();
            min = Math.min(min, v.size());
            max = Math.max(max, v.size());
        }
        if (union.size() != sum) {
            return (sum - union.size()) + " partitions held by two members at once";
        }
        if (sum != partitions) {
            return sum + " of " + partitions + " partitions held";
        }
        if (max - min > 1) {
            return "unbalanced: from " + min + " to " + max + " partitions a member";
        }
        return null;
    }

    /** Null when the broker reports the group STABLE with exactly these members and partitions. */
    static String checkDescription(ConsumerGroupDescription d, Map<String, Set<TopicPartition>> views) {
        if (d.groupState() != GroupState.STABLE) {
            return "state " + d.groupState();
        }
        if (d.members().size() != views.size()) {
            return d.members().size() + " members, not " + views.size();
        }
        for (MemberDescription m : d.members()) {
            Set<TopicPartition> mine = views.get(m.clientId());
            if (mine == null) {
                return "unknown member " + m.clientId();
            }
            if (!mine.equals(m.assignment().topicPartitions())) {
                return m.clientId() + " has " + m.assignment().topicPartitions().size()
                        + " partitions at the broker, " + mine.size() + " in its own view";
            }
        }
        return null;
    }

    /** What the broker and the members see now: the report of a phase that did not settle. */
    private static String diagnostics(Admin admin, String group, List<Member> live) {
        StringBuilder out = new StringBuilder();
        try {
            ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(group)).all().get(30, TimeUnit.SECONDS)
                    .get(group);
            out.append(String.format("broker: group %s type %s state %s epoch %s target-assignment epoch %s, %d members%n",
                    group, d.type(), d.groupState(), d.groupEpoch().map(String::valueOf).orElse("-"),
                    d.targetAssignmentEpoch().map(String::valueOf).orElse("-"), d.members().size()));
            List<MemberDescription> ms = new ArrayList<>(d.members());
            ms.sort((a, b) -> a.clientId().compareTo(b.clientId()));
            for (MemberDescription m : ms) {
                out.append(String.format("  %s id %s epoch %s: %d partitions, target %s%n", m.clientId(), m.consumerId(),
                        m.memberEpoch().map(String::valueOf).orElse("-"), m.assignment().topicPartitions().size(),
                        m.targetAssignment().map(t -> String.valueOf(t.topicPartitions().size())).orElse("-")));
            }
        } catch (Exception e) {
            out.append("describe failed: ").append(e).append('\n');
        }
        Map<TopicPartition, List<String>> owners = new HashMap<>();
        for (Member m : live) {
            out.append(String.format("  client %s: %d partitions, %d callbacks, last %.2f s ago%n", m.name, m.owned.size(),
                    m.callbacks.get(), (System.nanoTime() - m.lastChangeNanos) / 1e9));
            for (TopicPartition tp : m.owned) {
                owners.computeIfAbsent(tp, k -> new ArrayList<>()).add(m.name);
            }
        }
        owners.forEach((tp, names) -> {
            if (names.size() > 1) {
                out.append("  ").append(tp).append(" held by ").append(names).append('\n');
            }
        });
        return out.toString();
    }

    /**
     * One consumer polling on its own thread, as an application's would. Its view of what it owns comes from its
     * rebalance callbacks; partitions it is given are paused at once, so it never fetches.
     */
    private static final class Member {
        final String name;
        final KafkaConsumer<byte[], byte[]> consumer;
        final String topic;
        final Thread thread;
        final CountDownLatch started = new CountDownLatch(1);
        final CountDownLatch closed = new CountDownLatch(1);
        final Set<TopicPartition> owned = ConcurrentHashMap.newKeySet();
        final AtomicInteger callbacks = new AtomicInteger();
        volatile long lastChangeNanos = System.nanoTime();
        volatile boolean stopRequested;
        volatile Throwable failure;

        Member(String name, Properties config, String topic) {
            this.name = name;
            this.consumer = new KafkaConsumer<>(config);
            this.topic = topic;
            this.thread = new Thread(this::run, "member-" + name);
            this.thread.setDaemon(true);
            this.thread.start();
        }

        void go() {
            started.countDown();
        }

        void stop() {
            stopRequested = true;
            started.countDown(); // a member that never started closes at once
        }

        void awaitClosed() throws InterruptedException {
            if (!closed.await(CLOSE_TIMEOUT.toSeconds() + 30, TimeUnit.SECONDS)) {
                System.err.println(name + " did not close");
            }
        }

        void assertHealthy() {
            if (failure != null) {
                throw new IllegalStateException("member " + name + " failed", failure);
            }
        }

        private void changed(String sign, Collection<TopicPartition> partitions) {
            callbacks.incrementAndGet();
            lastChangeNanos = System.nanoTime();
            if (TRACE) {
                EVENTS.add(String.format("%.2f:%s:%s%d", (lastChangeNanos - phaseStartNanos) / 1e9, name, sign,
                        partitions.size()));
            }
        }

        private void run() {
            try {
                started.await();
                if (!stopRequested) {
                    consumer.subscribe(List.of(topic), new ConsumerRebalanceListener() {
                        @Override
                        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                            owned.removeAll(partitions);
                            changed("-", partitions);
                        }

                        @Override
                        public void onPartitionsLost(Collection<TopicPartition> partitions) {
                            owned.removeAll(partitions);
                            changed("lost-", partitions);
                        }

                        @Override
                        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                            consumer.pause(partitions);
                            owned.addAll(partitions);
                            changed("+", partitions);
                        }
                    });
                    while (!stopRequested) {
                        consumer.poll(POLL);
                    }
                }
            } catch (Throwable t) {
                failure = t;
            } finally {
                try {
                    consumer.close(CloseOptions.timeout(CLOSE_TIMEOUT));
                } catch (Throwable t) {
                    if (failure == null) {
                        failure = t;
                    }
                }
                closed.countDown();
            }
        }
    }
}
