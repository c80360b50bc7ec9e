package dev.varve.storage;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;

import static org.assertj.core.api.Assertions.assertThat;

class LeaderEpochCacheTest {
    @TempDir
    File dir;

    @Test
    void endOffsetForFollowsOffsetForLeaderEpochSemantics() throws IOException {
        LeaderEpochCache cache = LeaderEpochCache.load(dir);
        cache.assign(2, 10);
        cache.assign(4, 30);
        cache.assign(5, 50);
        long leo = 70;
        assertThat(cache.endOffsetFor(5, leo)).isEqualTo(new LeaderEpochCache.EpochEndOffset(5, 70));
        assertThat(cache.endOffsetFor(4, leo)).isEqualTo(new LeaderEpochCache.EpochEndOffset(4, 50));
        assertThat(cache.endOffsetFor(3, leo)).isEqualTo(new LeaderEpochCache.EpochEndOffset(2, 30));
        assertThat(cache.endOffsetFor(1, leo)).isEqualTo(new LeaderEpochCache.EpochEndOffset(1, 10));
        assertThat(cache.endOffsetFor(6, leo)).isEqualTo(new LeaderEpochCache.EpochEndOffset(-1, -1));
        assertThat(cache.endOffsetFor(-1, leo)).isEqualTo(new LeaderEpochCache.EpochEndOffset(-1, -1));
    }

    @Test
    void olderOrEqualEpochsAreIgnoredAndStateSurvivesReload() throws IOException {
        LeaderEpochCache cache = LeaderEpochCache.load(dir);
        cache.assign(1, 0);
        cache.assign(1, 5);
        cache.assign(0, 9);
        cache.assign(3, 20);
        // a new epoch is written by the next flush (or truncation, or close), not by assign itself
        assertThat(LeaderEpochCache.load(dir).entries()).isEmpty();
        cache.flush();
        assertThat(LeaderEpochCache.load(dir).entries()).containsExactly(new EpochEntry(1, 0), new EpochEntry(3, 20));
        cache.assign(4, 30);
        cache.writeIfUnwritten();
        assertThat(LeaderEpochCache.load(dir).entries()).containsExactly(new EpochEntry(1, 0), new EpochEntry(3, 20),
                new EpochEntry(4, 30));
    }

    @Test
    void truncationFromBothEnds() throws IOException {
        LeaderEpochCache cache = LeaderEpochCache.load(dir);
        cache.assign(1, 0);
        cache.assign(2, 10);
        cache.assign(3, 20);
        cache.truncateFromEnd(20);
        assertThat(cache.entries()).containsExactly(new EpochEntry(1, 0), new EpochEntry(2, 10));
        cache.truncateFromStart(15);
        assertThat(cache.entries()).containsExactly(new EpochEntry(2, 15));
        assertThat(LeaderEpochCache.load(dir).entries()).containsExactly(new EpochEntry(2, 15));
    }

    @Test
    void aNewerEpochStartingBeforeOlderEntriesReplacesThem() throws IOException {
        LeaderEpochCache cache = LeaderEpochCache.load(dir);
        cache.assign(1, 0);
        cache.assign(2, 10);
        cache.assign(3, 5);
        assertThat(cache.entries()).containsExactly(new EpochEntry(1, 0), new EpochEntry(3, 5));
    }
}
