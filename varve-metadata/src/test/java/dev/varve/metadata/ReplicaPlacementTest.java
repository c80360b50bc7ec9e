package dev.varve.metadata;

import dev.varve.metadata.ReplicaPlacement.UsableBroker;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.apache.kafka.common.errors.InvalidReplicationFactorException;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ReplicaPlacementTest {

    private static List<UsableBroker> brokers(int n, int racks) {
        List<UsableBroker> out = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            out.add(new UsableBroker(i, racks == 0 ? null : "rack" + (i % racks)));
        }
        return out;
    }

    @Property(tries = 200)
    void replicasSpanAsManyRacksAsPossibleAndLeadersBalance(@ForAll @IntRange(min = 1, max = 12) int brokers,
                                                           @ForAll @IntRange(min = 0, max = 4) int racks,
                                                           @ForAll @IntRange(min = 1, max = 60) int partitions,
                                                           @ForAll @IntRange(min = 1, max = 4) int rf) {
        if (rf > brokers) {
            return;
        }
        List<UsableBroker> usable = brokers(brokers, racks);
        List<List<Integer>> placed = new ReplicaPlacement(usable, Map.of(), Map.of()).place(partitions, rf);
        assertThat(placed).hasSize(partitions);
        int distinctRacks = racks == 0 ? 1 : Math.min(racks, brokers);
        Map<Integer, Integer> leaders = new HashMap<>();
        Map<Integer, Integer> replicas = new HashMap<>();
        for (List<Integer> p : placed) {
            assertThat(p).hasSize(rf).doesNotHaveDuplicates();
            Set<String> racksUsed = new HashSet<>();
            p.forEach(b -> racksUsed.add(usable.get(b).rack()));
            assertThat(racksUsed).hasSize(Math.min(rf, distinctRacks));
            leaders.merge(p.get(0), 1, Integer::sum);
            p.forEach(b -> replicas.merge(b, 1, Integer::sum));
        }
        // leaders differ by at most one between any two brokers
        int minLeaders = partitions >= brokers ? leaders.values().stream().min(Integer::compare).orElse(0) : 0;
        int maxLeaders = leaders.values().stream().max(Integer::compare).orElse(0);
        assertThat(maxLeaders - minLeaders).isLessThanOrEqualTo(1);
        if (racks == 0 || brokers % racks == 0) {
            // balanced racks: replica counts within one (two when RF exceeds the racks, which forces doubling up)
            int min = brokers <= replicas.size() ? replicas.values().stream().min(Integer::compare).orElse(0) : 0;
            int max = replicas.values().stream().max(Integer::compare).orElse(0);
            assertThat(max - min).isLessThanOrEqualTo(racks > 0 && rf > racks ? 2 : 1);
        }
    }

    @Test
    void threeRacksSixBrokersRfThree() {
        List<List<Integer>> placed = new ReplicaPlacement(brokers(6, 3), Map.of(), Map.of()).place(6, 3);
        for (List<Integer> p : placed) {
            assertThat(p.stream().map(b -> b % 3).distinct()).hasSize(3);
        }
        assertThat(placed.stream().map(p -> p.get(0)).distinct()).hasSize(6);
    }

    @Test
    void existingLoadSteersNewTopics() {
        // brokers 0 and 1 already lead 10 partitions each; broker 2 none
        List<List<Integer>> placed = new ReplicaPlacement(brokers(3, 0), Map.of(0, 10, 1, 10), Map.of(0, 10, 1, 10)).place(3, 1);
        assertThat(placed).containsOnly(List.of(2));
    }

    @Test
    void successiveTopicsStayBalancedThroughTheImage() {
        TestCluster c = new TestCluster(ControllerConfig.defaults()).withBrokers(4, 2);
        for (int i = 0; i < 8; i++) {
            c.createTopic("t" + i, 1, 2);
        }
        Map<Integer, Integer> leaders = new HashMap<>();
        c.image.topicsById().values().forEach(t -> leaders.merge(t.partition(0).leader(), 1, Integer::sum));
        assertThat(leaders.values()).containsOnly(2);
    }

    @Test
    void replicationFactorAboveUsableBrokersIsRefused() {
        assertThatThrownBy(() -> new ReplicaPlacement(brokers(2, 0), Map.of(), Map.of()).place(1, 3))
                .isInstanceOf(InvalidReplicationFactorException.class).hasMessageContaining("only 2 broker(s)");
        assertThatThrownBy(() -> new ReplicaPlacement(brokers(2, 0), Map.of(), Map.of()).place(1, 0))
                .isInstanceOf(InvalidReplicationFactorException.class);
    }
}
