package dev.varve.broker.group;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatRequestData;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatResponseData;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * Thousands of random histories of a KIP-848 group through the real protocol code
 * ({@link ConsumerGroupLogic}) and its records ({@link ConsumerGroupRecords}), with clients that
 * behave as Kafka's consumer does: they reconcile what they are told (revoke, then assign) some time after
 * they are told, report what they have reconciled only when it changed (so it may lag behind the
 * assignment they were sent), rejoin when fenced, resend everything after a lost response. Members join, leave, leave as
 * static members and come back under a new id, crash (their session expires), change subscriptions;
 * topics grow partitions. After every step:
 * <ul>
 *   <li>no partition is owned by two live clients at once;</li>
 *   <li>replaying every record written so far rebuilds exactly the coordinator's state.</li>
 * </ul>
 * When the chaos stops and everyone heartbeats, the group settles: every member Stable at the
 * target's epoch, every subscribed partition owned by exactly one client.
 */
class ConsumerGroupSimulationTest {
    private static final String GROUP = "g";

    @Test
    void randomHistoriesNeverShareAPartitionAndReplayToTheSameState() {
        int histories = Integer.getInteger("varve.sim.histories", 400);
        for (int seed = 0; seed < histories; seed++) {
            try {
                new History(seed).run(250);
            } catch (AssertionError | RuntimeException e) {
                fail("history with seed " + seed + " failed: " + e.getMessage(), e);
            }
        }
    }

    /** Topics that can grow, as the coordinator reads them. */
    static final class Topics implements GroupTopics {
        final Map<String, Uuid> ids = new LinkedHashMap<>();
        final Map<Uuid, Integer> partitions = new HashMap<>();
        long version;

        void create(String name, int n) {
            Uuid id = new Uuid(name.hashCode(), 42);
            ids.put(name, id);
            partitions.put(id, n);
            version++;
        }

        void grow(String name) {
            partitions.merge(ids.get(name), 1, Integer::sum);
            version++;
        }

        @Override
        public Uuid idOf(String name) {
            return ids.get(name);
        }

        @Override
        public String nameOf(Uuid id) {
            return ids.entrySet().stream().filter(e -> e.getValue().equals(id)).map(Map.Entry::getKey).findFirst().orElse(null);
        }

        @Override
        public int partitions(Uuid id) {
            return partitions.getOrDefault(id, 0);
        }

        @Override
        public Collection<String> names() {
            return ids.keySet();
        }

        @Override
        public long version() {
            return version;
        }
    }

    /** A consumer as Kafka's client behaves towards the coordinator. */
    static final class Client {
        final String name;
        final String instanceId;
        String memberId;
        int epoch;
        List<String> topics;
        String regex;
        /** What the client has reconciled: its callbacks ran, it consumes these partitions. */
        final Map<Uuid, Set<Integer>> owned = new HashMap<>();
        /**
         * The latest assignment received, and its local epoch (bumped when a different one arrives): the
         * client reconciles towards it some time later. As the Java client, it reports what it owns after
         * each reconciliation (a new local epoch) and not otherwise.
         */
        Map<Uuid, Set<Integer>> target = new HashMap<>();
        int targetEpoch;
        int ownedEpoch;
        /** The local epoch of the owned partitions the last heartbeat carried; -1 forces the next one to carry them. */
        int sentEpoch = -1;
        /** The next heartbeat carries every field (a join, or after an error or a lost response). */
        boolean full = true;
        boolean subscriptionChanged = true;

        Client(String name, String instanceId, List<String> topics, String regex) {
            this.name = name;
            this.instanceId = instanceId;
            this.memberId = Uuid.randomUuid().toString();
            this.topics = topics;
            this.regex = regex;
        }

        ConsumerGroupHeartbeatRequestData request() {
            ConsumerGroupHeartbeatRequestData r = new ConsumerGroupHeartbeatRequestData().setGroupId(GROUP)
                    .setMemberId(memberId).setMemberEpoch(epoch).setInstanceId(instanceId).setRebalanceTimeoutMs(-1)
                    .setSubscribedTopicNames(null).setTopicPartitions(null);
            if (full || epoch == 0) {
                r.setRebalanceTimeoutMs(30_000).setSubscribedTopicNames(topics).setSubscribedTopicRegex(regex == null ? "" : regex)
                        .setTopicPartitions(ownedList());
                sentEpoch = ownedEpoch;
            } else {
                if (subscriptionChanged) {
                    r.setSubscribedTopicNames(topics);
                }
                // as the Java client: the owned partitions only when they changed since the last heartbeat, and
                // they are what it has reconciled, which may lag behind what it was last told
                if (ownedEpoch != sentEpoch) {
                    r.setTopicPartitions(ownedList());
                    sentEpoch = ownedEpoch;
                }
            }
            return r;
        }

        List<ConsumerGroupHeartbeatRequestData.TopicPartitions> ownedList() {
            if (epoch == 0) {
                return List.of();
            }
            List<ConsumerGroupHeartbeatRequestData.TopicPartitions> out = new ArrayList<>();
            owned.forEach((t, ps) -> out.add(new ConsumerGroupHeartbeatRequestData.TopicPartitions().setTopicId(t)
                    .setPartitions(new ArrayList<>(ps))));
            return out;
        }

        void onResponse(ConsumerGroupHeartbeatResponseData r) {
            full = false;
            subscriptionChanged = false;
            epoch = r.memberEpoch();
            if (r.assignment() != null) {
                Map<Uuid, Set<Integer>> received = new HashMap<>();
                for (ConsumerGroupHeartbeatResponseData.TopicPartitions tp : r.assignment().topicPartitions()) {
                    if (!tp.partitions().isEmpty()) {
                        received.put(tp.topicId(), new HashSet<>(tp.partitions()));
                    }
                }
                if (!received.equals(target)) {
                    target = received;
                    targetEpoch++;
                }
            }
        }

        /** The reconciliation of the latest assignment received ends: revoke what is gone, take what is new. */
        void reconcile() {
            if (ownedEpoch != targetEpoch) {
                owned.clear();
                target.forEach((t, ps) -> owned.put(t, new HashSet<>(ps)));
                ownedEpoch = targetEpoch;
            }
        }

        /** Everything dropped (fenced, left, restarted). */
        void reset() {
            owned.clear();
            target = new HashMap<>();
            targetEpoch++;
            ownedEpoch = targetEpoch;
            sentEpoch = -1;
        }

        /** FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID: drop everything and rejoin with the same id (KIP-1082). */
        void fenced() {
            reset();
            epoch = 0;
            full = true;
        }
    }

    final class History {
        final Random random;
        final Topics topics = new Topics();
        final ConsumerGroupLogic logic = new ConsumerGroupLogic(
                new ConsumerGroupLogic.Config(45_000, 5_000, 1000, List.of("uniform", "range")));
        ConsumerGroupState state = ConsumerGroupState.EMPTY;
        final List<SimpleRecord> log = new ArrayList<>();
        /** Replays the log as a coordinator taking over would, record by record as it grows. */
        final ConsumerGroupRecords.Loader loader = new ConsumerGroupRecords.Loader();
        int replayed;
        final List<Client> live = new ArrayList<>();
        /** Static clients that left for a while (epoch -2) and may come back under a new member id. */
        final List<Client> away = new ArrayList<>();
        int next;

        History(long seed) {
            this.random = new Random(seed);
            topics.create("a", 1 + random.nextInt(6));
            topics.create("b", 1 + random.nextInt(6));
            topics.create("c", 1 + random.nextInt(3));
        }

        void run(int steps) {
            for (int i = 0; i < steps; i++) {
                step();
                check();
            }
            for (Client c : away) { // a static member away keeps its partitions until its session expires
                install(logic.remove(state, c.memberId));
            }
            away.clear();
            check();
            for (int round = 0; round < 30; round++) { // calm: everyone heartbeats until the group settles
                for (Client c : List.copyOf(live)) {
                    heartbeat(c, false);
                    c.reconcile();
                }
                check();
            }
            assertSettled();
        }

        void step() {
            int dice = random.nextInt(100);
            if (dice < 8 || live.isEmpty()) {
                join();
            } else if (dice < 12) {
                Client c = pick();
                leave(c, c.instanceId != null && random.nextBoolean());
            } else if (dice < 15 && !away.isEmpty()) {
                Client c = away.remove(random.nextInt(away.size()));
                c.memberId = Uuid.randomUuid().toString(); // back after a restart: a new member id
                c.epoch = 0;
                c.full = true;
                c.reset();
                live.add(c);
                heartbeat(c, false);
            } else if (dice < 18) {
                Client c = pick(); // crash: the client is gone; its session expires
                live.remove(c);
                install(logic.remove(state, c.memberId));
            } else if (dice < 21) {
                Client c = pick();
                c.topics = randomTopics();
                c.subscriptionChanged = true;
                heartbeat(c, false);
            } else if (dice < 23) {
                topics.grow(List.of("a", "b", "c").get(random.nextInt(3)));
            } else if (dice < 25 && !away.isEmpty()) {
                Client c = away.remove(random.nextInt(away.size())); // its session expired while away
                install(logic.remove(state, c.memberId));
            } else if (dice < 50) {
                pick().reconcile(); // a client's callbacks ran: it now owns what it was last told
            } else {
                heartbeat(pick(), random.nextInt(10) == 0);
            }
        }

        Client pick() {
            return live.get(random.nextInt(live.size()));
        }

        List<String> randomTopics() {
            List<String> out = new ArrayList<>();
            for (String t : List.of("a", "b", "c")) {
                if (random.nextBoolean()) {
                    out.add(t);
                }
            }
            return out;
        }

        void join() {
            String name = "m" + next++;
            boolean regex = random.nextInt(5) == 0;
            Client c = new Client(name, random.nextInt(3) == 0 ? "i-" + name : null,
                    regex ? List.of() : randomTopics(), regex ? "[ab]" : null);
            live.add(c);
            heartbeat(c, false);
        }

        void leave(Client c, boolean temporarily) {
            ConsumerGroupHeartbeatRequestData r = new ConsumerGroupHeartbeatRequestData().setGroupId(GROUP)
                    .setMemberId(c.memberId).setInstanceId(c.instanceId)
                    .setMemberEpoch(temporarily ? ConsumerGroupMember.LEAVE_STATIC : ConsumerGroupMember.LEAVE);
            live.remove(c);
            c.reset();
            try {
                ConsumerGroupLogic.Step s = logic.heartbeat(state, r, (short) 1, c.name, "/h", topics, null);
                install(s.next());
                if (temporarily) {
                    away.add(c);
                }
            } catch (ApiException e) {
                // it was not a member any more (fenced meanwhile): nothing to leave
            }
        }

        void heartbeat(Client c, boolean loseResponse) {
            ConsumerGroupLogic.Step s;
            try {
                s = logic.heartbeat(state, c.request(), (short) 1, c.name, "/h", topics, null);
            } catch (org.apache.kafka.common.errors.FencedMemberEpochException
                     | org.apache.kafka.common.errors.UnknownMemberIdException e) {
                c.fenced();
                return;
            }
            install(s.next());
            // a member is never told epoch 0 (a client takes that as "join again" and a static one that came
            // back would be refused next time)
            assertThat(s.response().memberEpoch()).as("%s's epoch after a heartbeat", c.name).isPositive();
            if (loseResponse) {
                c.full = true; // the client timed out: it resends everything
                c.sentEpoch = -1;
            } else {
                c.onResponse(s.response());
            }
        }

        void install(ConsumerGroupState nextState) {
            log.addAll(ConsumerGroupRecords.changes(GROUP, state, nextState, 0));
            state = nextState;
        }

        void check() {
            // no partition is owned by two live clients
            Map<String, String> owner = new HashMap<>();
            for (Client c : live) {
                c.owned.forEach((t, ps) -> ps.forEach(p -> {
                    String prev = owner.put(t + "-" + p, c.name);
                    if (prev != null) {
                        fail(t + "-" + p + " is owned by both " + prev + " and " + c.name + "; state " + describe());
                    }
                }));
            }
            // what a client owns, the coordinator counts as its (assigned or pending revocation)
            for (Client c : live) {
                ConsumerGroupMember m = state.members().get(c.memberId);
                if (m == null) {
                    assertThat(c.owned.values().stream().allMatch(Set::isEmpty))
                            .as("%s is not a member but owns %s", c.name, c.owned).isTrue();
                    continue;
                }
                c.owned.forEach((t, ps) -> ps.forEach(p -> assertThat(c.memberId).as("owner of %s-%d", t, p)
                        .isEqualTo(state.ownerOf(t, p))));
            }
            // replay rebuilds the state
            for (; replayed < log.size(); replayed++) {
                SimpleRecord r = log.get(replayed);
                loader.replay(r.key(), r.value() == null ? null : r.value().duplicate());
            }
            ConsumerGroupState rebuilt = loader.states().getOrDefault(GROUP, ConsumerGroupState.EMPTY);
            assertThat(rebuilt.groupEpoch()).as("group epoch").isEqualTo(state.groupEpoch());
            assertThat(rebuilt.assignmentEpoch()).as("assignment epoch").isEqualTo(state.assignmentEpoch());
            assertThat(rebuilt.metadataHash()).as("metadata hash").isEqualTo(state.metadataHash());
            // what each member has acknowledged is kept in memory only: a coordinator loading the group starts
            // with every partition acknowledged
            Map<String, ConsumerGroupMember> loaded = new LinkedHashMap<>();
            state.members().forEach((id, m) -> loaded.put(id, m.acknowledging(null, true)));
            assertThat(rebuilt.members()).as("members").isEqualTo(loaded);
            assertThat(rebuilt.target()).as("target").isEqualTo(state.target());
        }

        void assertSettled() {
            if (live.isEmpty()) {
                return;
            }
            assertThat(state.stateName()).as("group state after the calm: %s", describe()).isEqualTo("Stable");
            Map<Uuid, Set<Integer>> expected = new HashMap<>();
            Set<String> subscribed = new HashSet<>();
            for (ConsumerGroupMember m : state.members().values()) {
                subscribed.addAll(logic.subscribedTopics(m, topics));
            }
            assertThat(state.members().keySet()).as("the members are the live clients")
                    .containsExactlyInAnyOrderElementsOf(live.stream().map(c -> c.memberId).toList());
            for (String t : subscribed) {
                Uuid id = topics.idOf(t);
                for (int p = 0; p < topics.partitions(id); p++) {
                    expected.computeIfAbsent(id, k -> new HashSet<>()).add(p);
                }
            }
            Map<Uuid, Set<Integer>> ownedByLive = new HashMap<>();
            for (Client c : live) {
                ConsumerGroupMember m = state.members().get(c.memberId);
                assertThat(m).as("%s is a member after the calm", c.name).isNotNull();
                assertThat(c.owned).as("%s owns its target", c.name).isEqualTo(new HashMap<>(state.targetOf(c.memberId)));
                c.owned.forEach((t, ps) -> ownedByLive.computeIfAbsent(t, k -> new HashSet<>()).addAll(ps));
            }
            ownedByLive.values().removeIf(Set::isEmpty);
            assertThat(ownedByLive).as("every subscribed partition is owned once the group is stable").isEqualTo(expected);
        }

        String describe() {
            Map<String, String> out = new TreeMap<>();
            state.members().values().forEach(m -> out.put(m.memberId().substring(0, 4),
                    m.state() + "@" + m.memberEpoch() + " " + m.assigned() + " pending " + m.pendingRevocation()));
            return "epoch " + state.groupEpoch() + "/" + state.assignmentEpoch() + " " + out;
        }
    }
}
