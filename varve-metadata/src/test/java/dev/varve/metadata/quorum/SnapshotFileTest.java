package dev.varve.metadata.quorum;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

class SnapshotFileTest {

    private static byte[] encoded(long term, long index, byte[] payload) {
        ByteBuffer buf = SnapshotFile.encode(term, index, payload);
        byte[] out = new byte[buf.remaining()];
        buf.get(out);
        return out;
    }

    @Property(tries = 200)
    void roundTrips(@ForAll @Size(max = 300) byte[] payload, @ForAll @IntRange(min = 0) int term,
                    @ForAll @IntRange(min = 0) int index) throws IOException {
        SnapshotFile.Contents c = SnapshotFile.decode(encoded(term, index, payload), "test");
        assertThat(c.term()).isEqualTo(term);
        assertThat(c.index()).isEqualTo(index);
        assertThat(c.payload()).isEqualTo(payload);
    }

    @Property(tries = 300)
    void anySingleByteFlipOrTruncationIsDetected(@ForAll @Size(min = 1, max = 100) byte[] payload,
                                                 @ForAll @IntRange(min = 0, max = 10_000) int position,
                                                 @ForAll @IntRange(min = 1, max = 255) int flip) {
        byte[] bytes = encoded(3, 42, payload);
        int at = position % bytes.length;
        bytes[at] ^= (byte) flip;
        assertThatThrownBy(() -> SnapshotFile.decode(bytes, "test")).isInstanceOf(IOException.class);
        byte[] whole = encoded(3, 42, payload);
        byte[] cut = java.util.Arrays.copyOf(whole, at % whole.length);
        assertThatThrownBy(() -> SnapshotFile.decode(cut, "test")).isInstanceOf(IOException.class);
    }

    @Property(tries = 5)
    void writesAtomicallyWithoutLeavingTmpFiles(@ForAll @Size(max = 50) byte[] payload) throws IOException {
        Path dir = Files.createTempDirectory("snap");
        try {
            Path file = dir.resolve("snapshot.2_9");
            SnapshotFile.write(file, 2, 9, payload);
            SnapshotFile.write(file, 2, 9, payload); // overwrite is fine
            assertThat(SnapshotFile.read(file).payload()).isEqualTo(payload);
            try (var s = Files.list(dir)) {
                assertThat(s.map(p -> p.getFileName().toString())).containsExactly("snapshot.2_9");
            }
        } finally {
            try (var s = Files.list(dir)) {
                for (Path p : (Iterable<Path>) s::iterator) {
                    Files.delete(p);
                }
            }
            Files.delete(dir);
        }
    }
}
