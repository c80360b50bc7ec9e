package dev.varve.broker.replication;

import dev.varve.storage.EpochEntry;
import dev.varve.storage.LeaderEpochCache;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Properties of epoch-based truncation over generated pairs of logs that obey the one rule the
 * algorithm relies on: one leader per epoch, so two records with the same epoch at the same offset
 * are the same record.
 */
class FollowerTruncationProperties {

    /** Two replicas' histories: a common prefix, then tails in disjoint sets of newer epochs. */
    record Pair(EpochTruncationTest.Log leader, EpochTruncationTest.Log follower, long commonPrefix) {
    }

    @Provide
    Arbitrary<Pair> pairs() {
        Arbitrary<List<Integer>> prefix = Arbitraries.integers().between(0, 3).list().ofMaxSize(12);
        Arbitrary<List<Integer>> tail = Arbitraries.integers().between(0, 4).list().ofMaxSize(4);
        Arbitrary<List<Boolean>> owners = Arbitraries.of(true, false).list().ofMaxSize(6);
        return Combinators.combine(prefix, tail.list().ofMaxSize(6), owners, Arbitraries.integers().between(0, 3),
                Arbitraries.integers().between(0, 3), Arbitraries.of(true, false)).as(FollowerTruncationProperties::build);
    }

    /**
     * Builds logs whose prefix (epochs from {@code prefixSteps}) is shared; then each later epoch is
     * led by one of the two (per {@code owners}) and appended to that one's log only (possibly with no
     * records at all: an epoch led without appending). The last prefix epoch may continue on both by
     * different amounts (the same leader's records, one replica having fetched more).
     */
    static Pair build(List<Integer> prefixSteps, List<List<Integer>> tails, List<Boolean> owners, int extraLeader,
                      int extraFollower, boolean leaderEndsWithEmptyEpoch) {
        EpochTruncationTest.Log l = new EpochTruncationTest.Log();
        EpochTruncationTest.Log f = new EpochTruncationTest.Log();
        int epoch = 0;
        int n = 0;
        for (int step : prefixSteps) {
            epoch += step == 0 ? 1 : 0; // sometimes a new epoch
            String v = "c" + n++;
            l.append(epoch, v);
            f.append(epoch, v);
        }
        long common = l.leo();
        int lastCommonEpoch = epoch;
        // The last common epoch continues on both: same records, one replica got more of them.
        int shared = Math.min(extraLeader, extraFollower);
        for (int i = 0; i < Math.max(extraLeader, extraFollower); i++) {
            String v = "s" + i;
            if (i < extraLeader) {
                l.append(lastCommonEpoch, v);
            }
            if (i < extraFollower) {
                f.append(lastCommonEpoch, v);
            }
        }
        common += shared;
        for (int i = 0; i < tails.size(); i++) {
            epoch++;
            boolean toLeader = i < owners.size() ? owners.get(i) : (i % 2 == 0);
            EpochTruncationTest.Log target = toLeader ? l : f;
            target.assign(epoch, target.leo());
            for (int j = 0; j < tails.get(i).size(); j++) {
                target.append(epoch, "e" + epoch + "-" + j);
            }
        }
        if (leaderEndsWithEmptyEpoch) {
            epoch++;
            l.assign(epoch, l.leo()); // the leader's own epoch starts at its log end
        }
        return new Pair(l, f, common);
    }

    @Property(tries = 500)
    void theLoopStopsExactlyAtTheFirstDivergence(@ForAll("pairs") Pair pair) {
        EpochTruncationTest.Log follower = pair.follower();
        EpochTruncationTest.Log leader = pair.leader();
        int epochsBefore = follower.epochs.size();
        long expected = firstDifference(follower, leader);
        follower.highWatermark = Math.min(pair.commonPrefix(), follower.leo());

        int rounds = EpochTruncationTest.truncateByEpoch(follower, leader);

        assertThat(follower.leo()).as("truncated to the first divergence").isEqualTo(expected);
        assertThat(follower.leo()).as("never below a HW the two share").isGreaterThanOrEqualTo(follower.highWatermark);
        assertThat(rounds).isLessThanOrEqualTo(Math.max(1, epochsBefore));
        follower.fetchFrom(leader);
        assertThat(follower.values).isEqualTo(leader.values);
    }

    @Property(tries = 200)
    void leaderAnswersMatchTheStorageEpochCache(@ForAll("pairs") Pair pair, @ForAll("requested") int requested) throws IOException {
        Path dir = Files.createTempDirectory("epochs");
        try {
            LeaderEpochCache cache = LeaderEpochCache.empty(dir.toFile());
            for (EpochEntry e : pair.leader().epochs) {
                cache.assign(e.epoch(), e.startOffset());
            }
            assertThat(cache.entries()).isEqualTo(pair.leader().epochs);
            assertThat(EpochEndOffsets.endOffsetFor(pair.leader().epochs, requested, pair.leader().leo()))
                    .isEqualTo(cache.endOffsetFor(requested, pair.leader().leo()));
        } finally {
            try (Stream<Path> files = Files.walk(dir)) {
                for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                    Files.deleteIfExists(p);
                }
            }
        }
    }

    @Provide
    Arbitrary<Integer> requested() {
        return Arbitraries.integers().between(-1, 12);
    }

    private static long firstDifference(EpochTruncationTest.Log a, EpochTruncationTest.Log b) {
        long n = Math.min(a.leo(), b.leo());
        for (int i = 0; i < n; i++) {
            if (!a.values.get(i).equals(b.values.get(i)) || !a.recordEpochs.get(i).equals(b.recordEpochs.get(i))) {
                return i;
            }
        }
        return n;
    }
}
