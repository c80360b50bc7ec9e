package dev.varve.tests.chaos;

import dev.varve.tests.TestCluster;
import dev.varve.tests.chaos.GroupHistory.Stop;
import dev.varve.tests.chaos.GroupHistory.Subscription;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.StringDeserializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.regex.Pattern;

/**
 * The consumer-group workload of a {@link ChaosRunner} run, in the same cluster and under the same faults: a
 * KIP-848 group ({@code group.protocol=consumer}, server-side assignor uniform or range by the seed's parity)
 * or, for one seed in four (or {@code -Dvarve.chaos.group.protocol=classic}), a classic group (the
 * cooperative-sticky assignor, 6 s client sessions, client-side patterns only) of stock Kafka consumers reads {@link GroupHistory#TOPIC} (12 partitions, RF=3) while an idempotent acks=all
 * producer writes it (about 100 records a second, each acknowledged offset recorded). A member polls, records
 * what it was delivered, and commits synchronously (5 s) before its next poll; its rebalance callbacks are
 * recorded as they run (in its thread, inside poll or close). Members subscribe by name, by a broker-side
 * regex ({@link SubscriptionPattern}) or by a client-side {@link Pattern}; one is static (a
 * {@code group.instance.id}).
 *
 * <p>A conductor changes the membership every 3-6 s, each change once per round in a seeded order: two
 * joins; a clean leave (close, leaving the group); a crash; a stall (a member stops polling between a poll and
 * its commit for longer than its {@code max.poll.interval.ms}: the client leaves the group itself; when the member
 * resumes, its commit fails and its next poll runs onPartitionsLost: a fenced zombie that kept its records); and a restart
 * of the static member (close with {@code REMAIN_IN_GROUP}, a static leave, and a new instance with the same id
 * within the session timeout, which takes its assignment back).
 *
 * <p>A crash is modelled as what a kill -9 of a consumer process looks like to the broker: the member stops
 * acting at once (nothing more recorded, no commit) and its consumer is closed with {@code REMAIN_IN_GROUP}
 * (a dynamic member then sends no leave heartbeat); its connections close, and the coordinator holds its
 * partitions until its session (6 s) expires. Abandoning a consumer without closing it would not do: the
 * consumer's background thread keeps heartbeating, so the session never expires, and after
 * {@code max.poll.interval.ms} the client leaves cleanly: that is the stall above. A member is stopped (left,
 * crashed, restarted) only right after one of its commits succeeded, that is while the coordinator certainly
 * held it a member of the current epoch, so a stop never ends the ownership of a zombie that did not know it.
 *
 * <p>At the heal the membership changes and the producer stop; {@link #finish} waits until the group is Stable,
 * every partition owned by exactly one member whose callbacks agree, and the committed offsets are the end
 * offsets; then every member leaves and the committed offsets are read once more with Admin.
 */
final class GroupWorkload {
    static final int PARTITIONS = 12;
    /** The static member and one member per subscription kind. */
    static final int INITIAL_MEMBERS = 4;
    private static final int MAX_MEMBERS = 6;
    /** Also the rebalance timeout of a KIP-848 member. */
    private static final int MAX_POLL_INTERVAL_MS = 8_000;
    private static final int STALL_MS = MAX_POLL_INTERVAL_MS + 2_500;
    private static final int SENDS_PER_SECOND = 100;
    private static final String STATIC_ID = "chaos-grp-static";
    private static final String REGEX = "chaos-grou.*";

    /**
     * The brokers' KIP-848 timing for the run (group.consumer.*): heartbeats every 500 ms, sessions of 6 s, so that
     * a crashed member's partitions move within seconds (Kafka's defaults are 5 s and 45 s).
     */
    static final Map<String, String> BROKER_SETTINGS = Map.of(
            "group.consumer.heartbeat.interval.ms", "500",
            "group.consumer.min.heartbeat.interval.ms", "500",
            "group.consumer.session.timeout.ms", "6000",
            "group.consumer.min.session.timeout.ms", "6000");

    /** What the conductor does to the membership. */
    enum Action {
        JOIN, LEAVE, CRASH, STALL, BOUNCE, END
    }

    private final TestCluster cluster;
    private final long seed;
    /** The classic rebalance protocol (JoinGroup/SyncGroup) instead of KIP-848's. */
    private final boolean classic;
    private final String assignor;
    /**
     * Whether members subscribe by a broker-side regex too ({@code -Dvarve.chaos.group.regex=false} leaves them out;
     * a classic group has none).
     */
    private final boolean regex;
    private final GroupHistory history = new GroupHistory();
    private final AtomicBoolean churning = new AtomicBoolean(true);
    private final AtomicBoolean producing = new AtomicBoolean(true);
    private final List<Member> members = new CopyOnWriteArrayList<>();
    private final AtomicInteger names = new AtomicInteger();
    private final List<String> actions = Collections.synchronizedList(new ArrayList<>());
    private final long t0 = System.nanoTime();
    private Thread conductor;
    private Thread producer;

    GroupWorkload(TestCluster cluster, long seed) {
        this.cluster = cluster;
        this.seed = seed;
        this.classic = classic(seed);
        this.assignor = classic ? "cooperative-sticky (classic protocol)" : (seed & 1) == 0 ? "uniform" : "range";
        this.regex = regex(seed);
    }

    /** Whether the run with {@code seed} uses the classic protocol: one seed in four, or {@code -Dvarve.chaos.group.protocol}. */
    static boolean classic(long seed) {
        String protocol = System.getProperty("varve.chaos.group.protocol", Math.floorMod(seed >> 1, 4) == 0 ? "classic" : "consumer");
        if (!protocol.equals("classic") && !protocol.equals("consumer")) {
            throw new IllegalArgumentException("varve.chaos.group.protocol is classic or consumer, not " + protocol);
        }
        return protocol.equals("classic");
    }

    /** Whether the run with {@code seed} has members with a broker-side regex (KIP-848 only). */
    static boolean regex(long seed) {
        return !classic(seed) && Boolean.parseBoolean(System.getProperty("varve.chaos.group.regex", "true"));
    }

    GroupHistory history() {
        return history;
    }

    /** What the conductor did, with times since the workload was created. */
    List<String> actions() {
        synchronized (actions) {
            return List.copyOf(actions);
        }
    }

    String assignor() {
        return assignor;
    }

    static void createTopic(Admin admin) throws Exception {
        admin.createTopics(List.of(new NewTopic(GroupHistory.TOPIC, PARTITIONS, (short) 3).configs(Map.of(
                "min.insync.replicas", "2", "retention.ms", "-1", "segment.bytes", "65536"))))
                .all().get(60, TimeUnit.SECONDS);
    }

    boolean regex() {
        return regex;
    }

    void start() {
        startMember(Subscription.NAME, STATIC_ID);
        startMember(Subscription.NAME, null);
        startMember(regex ? Subscription.REGEX : Subscription.PATTERN, null);
        startMember(Subscription.PATTERN, null);
        producer = thread("chaos-group-producer", this::produce);
        conductor = thread("chaos-group-conductor", this::conduct);
    }

    /** The faults healed: no more membership changes, no more records. */
    void heal(long nanoTime) {
        history.add(new GroupHistory.Heal(nanoTime));
        churning.set(false);
        producing.set(false);
    }

    /**
     * Waits (up to 90 s) until the group settled and consumed everything, records its description, stops every
     * member (leaving the group) and records the final committed offsets.
     */
    void finish() throws Exception {
        churning.set(false);
        producing.set(false);
        conductor.join(60_000);
        producer.join(150_000);
        try (Admin admin = cluster.admin()) {
            settle(admin, 90_000);
            for (Member m : members) {
                m.command.set(Action.END);
            }
            for (Member m : members) {
                m.thread.join(30_000);
            }
            finalOffsets(admin);
        }
    }

    private Thread thread(String name, Runnable body) {
        Thread t = new Thread(body, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    private void note(String what) {
        actions.add(String.format("%7.1fs %s", (System.nanoTime() - t0) / 1e9, what));
    }

    // ------------------------------------------------------------------ the producer

    private void produce() {
        Random random = new Random(seed * 19 + 3);
        long pauseNanos = 1_000_000_000L / SENDS_PER_SECOND;
        try (KafkaProducer<String, String> p = cluster.producer(Map.of(ProducerConfig.LINGER_MS_CONFIG, 2))) {
            long seq = 0;
            while (producing.get()) {
                int partition = random.nextInt(PARTITIONS);
                String value = "g-" + seq++;
                p.send(new ProducerRecord<>(GroupHistory.TOPIC, partition, null, value), (md, e) -> {
                    if (e == null) {
                        history.add(new GroupHistory.Acked(partition, md.offset(), value, System.nanoTime()));
                    }
                });
                LockSupport.parkNanos(pauseNanos);
            }
            p.flush();
        } catch (RuntimeException e) {
            // a send that failed is simply not acknowledged
        }
    }

    // ------------------------------------------------------------------ the conductor

    private void conduct() {
        Random random = new Random(seed * 13 + 7);
        List<Action> round = new ArrayList<>();
        while (churning.get()) {
            long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(3_000 + random.nextInt(3_000));
            while (churning.get() && System.nanoTime() < until) {
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(100));
            }
            if (!churning.get()) {
                break;
            }
            if (round.isEmpty()) {
                round.addAll(List.of(Action.JOIN, Action.JOIN, Action.LEAVE, Action.CRASH, Action.STALL, Action.BOUNCE));
                Collections.shuffle(round, random);
            }
            act(round.remove(0), random);
            keepStatic();
        }
    }

    private List<Member> live() {
        return members.stream().filter(m -> !m.done && m.command.get() == null).toList();
    }

    private void act(Action action, Random random) {
        List<Member> dynamic = live().stream().filter(m -> m.instanceId == null).toList();
        switch (action) {
            case JOIN -> {
                if (members.stream().filter(m -> !m.done).count() >= MAX_MEMBERS) {
                    note("join skipped: " + MAX_MEMBERS + " members");
                    return;
                }
                List<Subscription> kinds = regex ? List.of(Subscription.values())
                        : List.of(Subscription.NAME, Subscription.PATTERN);
                Subscription kind = kinds.get(random.nextInt(kinds.size()));
                Member m = startMember(kind, null);
                note("join " + m.name + " (" + kind + ")");
            }
            case LEAVE, CRASH, STALL -> {
                if (dynamic.size() < (action == Action.STALL ? 1 : 2)) {
                    note(action + " skipped: " + dynamic.size() + " dynamic members");
                    return;
                }
                Member m = dynamic.get(random.nextInt(dynamic.size()));
                m.command.set(action);
                note(action.name().toLowerCase(java.util.Locale.ROOT) + " " + m.name);
            }
            case BOUNCE -> {
                Member s = live().stream().filter(m -> m.instanceId != null).findFirst().orElse(null);
                if (s == null) {
                    note("bounce skipped: no static member");
                    return;
                }
                note("bounce " + s.name + " (static)");
                s.command.set(Action.BOUNCE);
                try {
                    s.thread.join(30_000);
                    if (!s.done) {
                        note(s.name + " has not stopped yet: restarted once it has");
                        return; // keepStatic starts the next instance once this one is gone
                    }
                    Thread.sleep(1_000 + random.nextInt(2_000)); // back within the 6 s session
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                }
                Member next = startMember(Subscription.NAME, STATIC_ID);
                note("restart static as " + next.name);
            }
            default -> throw new IllegalArgumentException(action.name());
        }
    }

    /** Starts a static member if none runs (its last instance may have failed, e.g. UNRELEASED_INSTANCE_ID). */
    private void keepStatic() {
        boolean running = members.stream().anyMatch(m -> m.instanceId != null && !m.done);
        if (!running) {
            Member m = startMember(Subscription.NAME, STATIC_ID);
            note("static member gone: start " + m.name);
        }
    }

    private Member startMember(Subscription subscription, String instanceId) {
        String name = (instanceId == null ? "member-" : "static-") + names.incrementAndGet();
        Member m = new Member(name, subscription, instanceId);
        members.add(m);
        m.thread.start();
        return m;
    }

    // ------------------------------------------------------------------ the end

    private void settle(Admin admin, long timeoutMs) {
        long deadline = System.currentTimeMillis() + timeoutMs;
        GroupHistory.Settled last = null;
        ConsumerGroupDescription lastDescription = null;
        long staticGoneSince = 0;
        while (System.currentTimeMillis() < deadline) {
            boolean staticRunning = members.stream().anyMatch(m -> m.instanceId != null && !m.done);
            if (staticRunning) {
                staticGoneSince = 0;
            } else if (staticGoneSince == 0) {
                staticGoneSince = System.currentTimeMillis();
            } else if (System.currentTimeMillis() - staticGoneSince > 2_000) {
                keepStatic();
                staticGoneSince = 0;
            }
            try {
                ConsumerGroupDescription d = admin.describeConsumerGroups(List.of(GroupHistory.GROUP)).describedGroups()
                        .get(GroupHistory.GROUP).get(10, TimeUnit.SECONDS);
                lastDescription = d;
                long at = System.nanoTime();
                // a static member by the instance running under its id: a classic coordinator that replaces a static
                // member keeps the client id it first joined with (as Kafka's ClassicGroup.replaceStaticMember does)
                Map<String, String> byInstance = new HashMap<>();
                for (Member m : members) {
                    if (m.instanceId != null && !m.done) {
                        byInstance.put(m.instanceId, m.name);
                    }
                }
                Map<String, Set<Integer>> described = new TreeMap<>();
                for (MemberDescription m : d.members()) {
                    String name = m.groupInstanceId().map(byInstance::get).orElse(m.clientId());
                    described.put(name == null ? m.clientId() : name, partitions(m.assignment().topicPartitions()));
                }
                Map<String, Set<Integer>> mine = new TreeMap<>();
                for (Member m : members) {
                    if (!m.done) {
                        mine.put(m.name, new TreeSet<>(m.owned));
                    }
                }
                last = new GroupHistory.Settled(String.valueOf(d.groupState()), described, PARTITIONS, at);
                List<Integer> owners = new ArrayList<>();
                described.values().forEach(owners::addAll);
                boolean stable = "Stable".equals(last.state()) && owners.size() == PARTITIONS
                        && new TreeSet<>(owners).size() == PARTITIONS && described.equals(mine);
                if (stable && caughtUp(admin)) {
                    history.add(last);
                    note("settled: " + described);
                    return;
                }
            } catch (Exception e) {
                // the group or offsets not readable right now: try again
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(500));
        }
        if (last != null) {
            history.add(last);
        }
        note("did not settle within " + timeoutMs + " ms; last seen " + last);
        if (lastDescription != null) {
            note("  group epoch " + lastDescription.groupEpoch().orElse(-1) + ", target assignment epoch "
                    + lastDescription.targetAssignmentEpoch().orElse(-1));
            for (MemberDescription m : lastDescription.members()) {
                note("  described " + m.clientId() + ": id " + m.consumerId() + " epoch " + m.memberEpoch().orElse(-1)
                        + " assignment " + partitions(m.assignment().topicPartitions()) + " target "
                        + m.targetAssignment().map(t -> partitions(t.topicPartitions()).toString()).orElse("?"));
            }
        }
        for (Member m : members) {
            if (!m.done) {
                long idleMs = (System.nanoTime() - m.lastPollNanos) / 1_000_000;
                note("  member " + m.name + ": callbacks " + new TreeSet<>(m.owned) + ", consumer " + m.view
                        + ", last poll " + idleMs + " ms ago" + (idleMs > 3_000 ? ", thread at "
                        + java.util.Arrays.toString(java.util.Arrays.copyOf(m.thread.getStackTrace(), 8)) : ""));
            }
        }
    }

    private static Set<Integer> partitions(Collection<TopicPartition> tps) {
        Set<Integer> out = new TreeSet<>();
        for (TopicPartition tp : tps) {
            if (tp.topic().equals(GroupHistory.TOPIC)) {
                out.add(tp.partition());
            }
        }
        return out;
    }

    private boolean caughtUp(Admin admin) throws Exception {
        Map<Integer, Long> committed = committed(admin);
        Map<Integer, Long> ends = endOffsets(admin);
        return ends.entrySet().stream().allMatch(e -> e.getValue() == 0 || e.getValue().equals(committed.get(e.getKey())));
    }

    private static Map<Integer, Long> committed(Admin admin) throws Exception {
        Map<Integer, Long> out = new HashMap<>();
        admin.listConsumerGroupOffsets(GroupHistory.GROUP).partitionsToOffsetAndMetadata().get(10, TimeUnit.SECONDS)
                .forEach((tp, at) -> {
                    if (tp.topic().equals(GroupHistory.TOPIC) && at != null) {
                        out.put(tp.partition(), at.offset());
                    }
                });
        return out;
    }

    private static Map<Integer, Long> endOffsets(Admin admin) throws Exception {
        Map<TopicPartition, OffsetSpec> specs = new HashMap<>();
        for (int p = 0; p < PARTITIONS; p++) {
            specs.put(new TopicPartition(GroupHistory.TOPIC, p), OffsetSpec.latest());
        }
        Map<Integer, Long> out = new HashMap<>();
        admin.listOffsets(specs).all().get(10, TimeUnit.SECONDS).forEach((tp, info) -> out.put(tp.partition(), info.offset()));
        return out;
    }

    private void finalOffsets(Admin admin) {
        long deadline = System.currentTimeMillis() + 60_000;
        while (System.currentTimeMillis() < deadline) {
            try {
                long start = System.nanoTime();
                Map<Integer, Long> committed = committed(admin);
                Map<Integer, Long> ends = endOffsets(admin);
                history.add(new GroupHistory.FinalOffsets(committed, ends, start, System.nanoTime()));
                return;
            } catch (Exception e) {
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(500));
            }
        }
    }

    // ------------------------------------------------------------------ a member

    /**
     * One consumer instance, polled by its own thread (the KafkaConsumer is touched by that thread only); the
     * conductor talks to it through {@link #command}.
     */
    private final class Member {
        final String name;
        final Subscription subscription;
        final String instanceId;
        final Thread thread;
        final AtomicReference<Action> command = new AtomicReference<>();
        /** What its callbacks say it owns (read by {@link #settle}). */
        final Set<Integer> owned = ConcurrentHashMap.newKeySet();
        /** Per owned partition, the next offset to commit (its thread only). */
        private final Map<Integer, Long> next = new HashMap<>();
        /** After a crash or once stopped: callbacks are no longer recorded. */
        private boolean muted;
        volatile boolean done;
        /** The consumer's own view after its last poll (member id, epoch, assignment), for a report of a group that did not settle. */
        volatile String view = "not polled yet";
        volatile long lastPollNanos = System.nanoTime();

        Member(String name, Subscription subscription, String instanceId) {
            this.name = name;
            this.subscription = subscription;
            this.instanceId = instanceId;
            this.thread = new Thread(this::run, "chaos-group-" + name);
            this.thread.setDaemon(true);
        }

        private KafkaConsumer<String, String> consumer() {
            Map<String, Object> cfg = new HashMap<>(cluster.clientSecurity());
            cfg.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.allBootstrap());
            cfg.put(ConsumerConfig.GROUP_ID_CONFIG, GroupHistory.GROUP);
            if (classic) {
                cfg.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic");
                cfg.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
                        org.apache.kafka.clients.consumer.CooperativeStickyAssignor.class.getName());
                // as the brokers' KIP-848 settings below: a crashed member's partitions move within seconds
                cfg.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 6_000);
                cfg.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 500);
            } else {
                cfg.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
                cfg.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, assignor);
            }
            cfg.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
            if (instanceId != null) {
                cfg.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instanceId);
            }
            cfg.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
            cfg.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            cfg.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 100);
            cfg.put(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, MAX_POLL_INTERVAL_MS);
            // a coordinator that froze is given up on well within the 6 s session
            cfg.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, 5_000);
            cfg.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 10_000);
            return new KafkaConsumer<>(cfg, new StringDeserializer(), new StringDeserializer());
        }

        private void run() {
            try {
                loop();
            } finally {
                done = true;
            }
        }

        private void loop() {
            KafkaConsumer<String, String> consumer;
            try {
                consumer = consumer();
            } catch (RuntimeException e) {
                history.add(new GroupHistory.Started(name, subscription, instanceId, System.nanoTime()));
                history.add(new GroupHistory.Stopped(name, Stop.ERROR, e.toString(), System.nanoTime()));
                return;
            }
            history.add(new GroupHistory.Started(name, subscription, instanceId, System.nanoTime()));
            ConsumerRebalanceListener listener = new Listener();
            try {
                switch (subscription) {
                    case NAME -> consumer.subscribe(List.of(GroupHistory.TOPIC), listener);
                    case REGEX -> consumer.subscribe(new SubscriptionPattern(REGEX), listener);
                    case PATTERN -> consumer.subscribe(Pattern.compile(REGEX), listener);
                    default -> throw new IllegalArgumentException(subscription.name());
                }
            } catch (RuntimeException e) {
                failed(consumer, e);
                return;
            }
            boolean dirty = false;
            while (true) {
                Action cmd = command.get();
                if (cmd == Action.END) {
                    leave(consumer, Stop.END);
                    return;
                }
                if (stop(cmd) && owned.isEmpty()) {
                    stopNow(consumer, cmd); // owns nothing: no ownership to vouch for
                    return;
                }
                ConsumerRecords<String, String> records;
                try {
                    records = consumer.poll(Duration.ofMillis(200));
                } catch (WakeupException e) {
                    continue;
                } catch (RuntimeException e) {
                    failed(consumer, e);
                    return;
                }
                lastPollNanos = System.nanoTime();
                view = "id " + consumer.groupMetadata().memberId() + " epoch " + consumer.groupMetadata().generationId()
                        + " assignment " + partitions(consumer.assignment());
                for (ConsumerRecord<String, String> r : records) {
                    history.add(new GroupHistory.Delivered(name, r.partition(), r.offset(), r.value(), System.nanoTime()));
                    next.put(r.partition(), r.offset() + 1);
                    dirty = true;
                }
                if (command.compareAndSet(Action.STALL, null)) {
                    // a zombie: stops between its poll and its commit, past its poll interval
                    long from = System.nanoTime();
                    LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(STALL_MS));
                    history.add(new GroupHistory.Stalled(name, from, System.nanoTime()));
                }
                cmd = command.get();
                if (dirty || stop(cmd)) {
                    Map<Integer, Long> offsets = toCommit(consumer, stop(cmd));
                    boolean ok = offsets.isEmpty() ? !stop(cmd) || owned.isEmpty() : commit(consumer, offsets);
                    if (ok) {
                        dirty = false;
                        if (stop(cmd)) {
                            stopNow(consumer, cmd); // right after a successful commit: a member of the current epoch
                            return;
                        }
                    }
                }
            }
        }

        private boolean stop(Action cmd) {
            return cmd == Action.LEAVE || cmd == Action.CRASH || cmd == Action.BOUNCE;
        }

        /**
         * The offsets to commit: the next offset of every owned partition it was delivered records of; when it is
         * about to stop, the position of the other owned partitions too (so that the commit vouches for all).
         */
        private Map<Integer, Long> toCommit(KafkaConsumer<String, String> consumer, boolean all) {
            Map<Integer, Long> offsets = new TreeMap<>();
            for (int p : owned) {
                Long at = next.get(p);
                if (at != null) {
                    offsets.put(p, at);
                } else if (all) {
                    try {
                        offsets.put(p, consumer.position(new TopicPartition(GroupHistory.TOPIC, p), Duration.ofSeconds(2)));
                    } catch (RuntimeException e) {
                        return Map.of(); // not now: try again after the next poll
                    }
                }
            }
            return offsets;
        }

        private boolean commit(KafkaConsumer<String, String> consumer, Map<Integer, Long> offsets) {
            Map<TopicPartition, OffsetAndMetadata> request = new HashMap<>();
            offsets.forEach((p, at) -> request.put(new TopicPartition(GroupHistory.TOPIC, p), new OffsetAndMetadata(at)));
            long start = System.nanoTime();
            try {
                consumer.commitSync(request, Duration.ofSeconds(5));
                history.add(new GroupHistory.Commit(name, offsets, true, null, start, System.nanoTime()));
                return true;
            } catch (RuntimeException e) {
                history.add(new GroupHistory.Commit(name, offsets, false, e.getClass().getSimpleName(), start,
                        System.nanoTime()));
                return false;
            }
        }

        private void stopNow(KafkaConsumer<String, String> consumer, Action cmd) {
            switch (cmd) {
                case LEAVE -> leave(consumer, Stop.LEAVE);
                case CRASH -> crash(consumer, Stop.CRASH, Duration.ZERO);
                case BOUNCE -> crash(consumer, Stop.BOUNCE, Duration.ofSeconds(3)); // time for the static leave (epoch -2)
                default -> throw new IllegalArgumentException(cmd.name());
            }
        }

        /** close() leaving the group: the callbacks it runs are recorded, then the stop. */
        private void leave(KafkaConsumer<String, String> consumer, Stop how) {
            String detail = "";
            try {
                consumer.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
                        .withTimeout(Duration.ofSeconds(10)));
            } catch (RuntimeException e) {
                detail = e.toString();
            }
            muted = true;
            history.add(new GroupHistory.Stopped(name, how, detail, System.nanoTime()));
        }

        /** Stops acting now (recorded first, callbacks muted), then closes without leaving the group. */
        private void crash(KafkaConsumer<String, String> consumer, Stop how, Duration closeTimeout) {
            muted = true;
            history.add(new GroupHistory.Stopped(name, how, "", System.nanoTime()));
            try {
                consumer.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.REMAIN_IN_GROUP)
                        .withTimeout(closeTimeout));
            } catch (RuntimeException e) {
                // a crashed process does not care
            }
        }

        /** The consumer threw: close it (its callbacks recorded), then the stop. */
        private void failed(KafkaConsumer<String, String> consumer, RuntimeException error) {
            try {
                consumer.close(Duration.ofSeconds(5));
            } catch (RuntimeException e) {
                // closing a failed consumer
            }
            muted = true;
            history.add(new GroupHistory.Stopped(name, Stop.ERROR, error.toString(), System.nanoTime()));
            note(name + " failed: " + error);
        }

        /** Records the callbacks as they run (in the member's thread, inside poll or close). */
        private final class Listener implements ConsumerRebalanceListener {
            @Override
            public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                long now = System.nanoTime();
                Set<Integer> ps = partitions(partitions);
                if (!muted && !ps.isEmpty()) {
                    history.add(new GroupHistory.Assigned(name, ps, now));
                    owned.addAll(ps);
                }
            }

            @Override
            public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                long now = System.nanoTime();
                Set<Integer> ps = partitions(partitions);
                if (!muted && !ps.isEmpty()) {
                    history.add(new GroupHistory.Revoked(name, ps, now));
                    owned.removeAll(ps);
                    next.keySet().removeAll(ps);
                }
            }

            @Override
            public void onPartitionsLost(Collection<TopicPartition> partitions) {
                long now = System.nanoTime();
                Set<Integer> ps = partitions(partitions);
                if (!muted && !ps.isEmpty()) {
                    history.add(new GroupHistory.Lost(name, ps, now));
                    owned.removeAll(ps);
                    next.keySet().removeAll(ps);
                }
            }
        }
    }
}
