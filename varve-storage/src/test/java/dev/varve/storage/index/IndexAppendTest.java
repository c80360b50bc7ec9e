package dev.varve.storage.index;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Index entries are appended with positional writes while lookups read the mapping: every entry is
 * visible to a lookup as soon as it is appended (also through a mapping made before the append),
 * survives a trim, a close and a reopen byte for byte, and a truncation is followed by appends at
 * the right slots.
 */
class IndexAppendTest {
    @TempDir
    File dir;

    @Test
    void offsetIndexEntriesAreSeenByLookupsAtOnceAndSurviveTrimAndReopen() throws IOException {
        File file = new File(dir, "00000000000000001000.index");
        OffsetIndex index = new OffsetIndex(file, 1000, 8 * 1024);
        assertThat(index.lookup(5000)).isEqualTo(new OffsetPosition(1000, 0)); // maps the empty index first
        for (int i = 0; i < 600; i++) {
            index.append(1010 + 10L * i, 4096 * (i + 1));
            // the mapping made before (or after) the growth sees the entry just written
            assertThat(index.lastEntry()).isEqualTo(new OffsetPosition(1010 + 10L * i, 4096 * (i + 1)));
            assertThat(index.lookup(1010 + 10L * i + 5)).isEqualTo(new OffsetPosition(1010 + 10L * i, 4096 * (i + 1)));
        }
        index.truncateToEntries(400);
        index.append(1010 + 10L * 400 + 3, 4096 * 401 + 7);
        assertThat(index.entries()).isEqualTo(401);
        assertThat(index.lookup(Long.MAX_VALUE)).isEqualTo(new OffsetPosition(1010 + 10L * 400 + 3, 4096 * 401 + 7));
        index.close();
        assertThat(Files.size(file.toPath())).isEqualTo(401L * OffsetIndex.ENTRY_SIZE);

        OffsetIndex reopened = new OffsetIndex(file, 1000, 8 * 1024);
        assertThat(reopened.entries()).isEqualTo(401);
        reopened.fullCheck();
        for (int i = 0; i < 400; i++) {
            assertThat(reopened.entry(i)).isEqualTo(new OffsetPosition(1010 + 10L * i, 4096 * (i + 1)));
        }
        reopened.append(1010 + 10L * 401, 4096 * 402); // appends go on after a reopen
        assertThat(reopened.lastEntry()).isEqualTo(new OffsetPosition(1010 + 10L * 401, 4096 * 402));
        reopened.close();
        assertThat(Files.size(file.toPath())).isEqualTo(402L * OffsetIndex.ENTRY_SIZE);
    }

    @Test
    void timeIndexEntriesAreSeenAtOnceAndSurviveFlushAndReopen() throws IOException {
        File file = new File(dir, "00000000000000000000.timeindex");
        TimeIndex index = new TimeIndex(file, 0, 12 * 1024);
        for (int i = 0; i < 300; i++) {
            index.maybeAppend(1_700_000_000_000L + i, 3L * i, false);
            assertThat(index.lastEntry()).isEqualTo(new TimestampOffset(1_700_000_000_000L + i, 3L * i));
        }
        assertThat(index.lookup(1_700_000_000_000L + 150)).isEqualTo(new TimestampOffset(1_700_000_000_000L + 150, 450));
        index.flush();
        index.close();
        TimeIndex reopened = new TimeIndex(file, 0, 12 * 1024);
        assertThat(reopened.entries()).isEqualTo(300);
        reopened.fullCheck();
        assertThat(reopened.entry(299)).isEqualTo(new TimestampOffset(1_700_000_000_000L + 299, 897));
        reopened.close();
    }
}
