package dev.varve.tests;

import dev.varve.bench.RebalanceProbe;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Duration;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The rebalance benchmark's probe ({@code bench/rebalance-side-by-side.sh}, {@link RebalanceProbe}) at CI size:
 * 10 stock consumers join a 100-partition group at once, 3 leave, 3 others join, with the classic protocol (range,
 * eager; cooperative-sticky) and with KIP-848 (server-side uniform). Correctness only, never timing: after each
 * phase every partition is held by exactly one live member, the shares are balanced, and the broker reports the
 * group stable with those members and those partitions (the probe's own settle condition, checked again here on
 * what it returns).
 *
 * <p>The group timing is the tests' fast one ({@link TestBroker#FAST_GROUPS}: KIP-848 heartbeats every 500 ms), and
 * the classic members heartbeat every 500 ms too, so that a phase takes about a second, not a heartbeat of 3-5 s.
 */
@Timeout(120)
class RebalanceProbeTest {
    private static final int MEMBERS = 10;
    private static final int PARTITIONS = 100;
    private static final int CHANGE = 3;
    private static final String TOPIC = TestBroker.unique("rebalance-probe");

    @RegisterExtension
    static final SharedTestBroker BROKER = new SharedTestBroker();

    @BeforeAll
    static void topic() throws Exception {
        RebalanceProbe.createTopic(BROKER.bootstrap(), TOPIC, PARTITIONS);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"classic", "classic-cooperative", "consumer"})
    void everyPartitionOnceAfterJoinLeaveAndJoin(String mode) throws Exception {
        Map<String, Object> overrides = mode.startsWith("classic")
                ? Map.of(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 500, ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 6_000)
                : Map.of();
        RebalanceProbe.Result r = RebalanceProbe.run(BROKER.bootstrap(), TOPIC, TestBroker.unique("rebalance-" + mode),
                mode, MEMBERS, CHANGE, overrides, Duration.ofSeconds(30));

        Set<String> first = names(0, MEMBERS);
        assertPartitionedOnce(r.join(), first);
        // the leavers are spread over the group: m-0, m-3, m-6
        Set<String> afterLeave = new HashSet<>(first);
        afterLeave.removeAll(Set.of("m-0", "m-3", "m-6"));
        assertPartitionedOnce(r.leave(), afterLeave);
        Set<String> afterJoin = new HashSet<>(afterLeave);
        afterJoin.addAll(names(MEMBERS, MEMBERS + CHANGE));
        assertPartitionedOnce(r.rejoin(), afterJoin);
    }

    private static Set<String> names(int from, int to) {
        return IntStream.range(from, to).mapToObj(i -> "m-" + i).collect(Collectors.toSet());
    }

    private static void assertPartitionedOnce(RebalanceProbe.Phase phase, Set<String> members) {
        assertThat(phase.assignment().keySet()).as("the members after %s", phase.name()).isEqualTo(members);
        Set<TopicPartition> union = new HashSet<>();
        int sum = 0;
        for (Set<TopicPartition> owned : phase.assignment().values()) {
            union.addAll(owned);
            sum += owned.size();
            // balanced: PARTITIONS / members, rounded down or up
            assertThat(owned.size()).as("a member's share after %s", phase.name())
                    .isBetween(PARTITIONS / members.size(), (PARTITIONS + members.size() - 1) / members.size());
        }
        assertThat(sum).as("partitions held after %s, counted with repeats", phase.name()).isEqualTo(PARTITIONS);
        assertThat(union).as("distinct partitions held after %s", phase.name())
                .hasSize(PARTITIONS)
                .allSatisfy(tp -> assertThat(tp.topic()).isEqualTo(TOPIC));
        assertThat(phase.seconds()).as("time of %s", phase.name()).isPositive();
    }
}
