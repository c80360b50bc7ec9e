package dev.varve.storage;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class KeyOffsetMapTest {
    private static ByteBuffer key(String s) {
        return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void remembersTheLatestOffsetPerKey() {
        KeyOffsetMap map = new KeyOffsetMap(24 * 100, 0.9);
        map.put(key("a"), 1);
        map.put(key("b"), 2);
        map.put(key("a"), 7);
        assertThat(map.get(key("a"))).isEqualTo(7);
        assertThat(map.get(key("b"))).isEqualTo(2);
        assertThat(map.get(key("c"))).isEqualTo(-1);
        assertThat(map.size()).isEqualTo(2);
        assertThat(map.latestOffset()).isEqualTo(7);
    }

    @Test
    void offsetZeroAndAnEmptyKeyAreOrdinary() {
        KeyOffsetMap map = new KeyOffsetMap(24 * 10, 0.9);
        map.put(key(""), 0);
        assertThat(map.get(key(""))).isEqualTo(0);
        assertThat(map.size()).isEqualTo(1);
    }

    @Test
    void clearEmptiesTheMap() {
        KeyOffsetMap map = new KeyOffsetMap(24 * 10, 0.9);
        map.put(key("a"), 3);
        map.clear();
        assertThat(map.get(key("a"))).isEqualTo(-1);
        assertThat(map.size()).isZero();
        assertThat(map.latestOffset()).isEqualTo(-1);
    }

    @Test
    void holdsItsCapacityWithProbingAndAgreesWithAHashMap() {
        KeyOffsetMap map = new KeyOffsetMap(24 * 1000, 0.9);
        assertThat(map.slotCount()).isEqualTo(1000);
        assertThat(map.maxEntries()).isEqualTo(900);
        Map<String, Long> model = new HashMap<>();
        Random random = new Random(42);
        for (long offset = 0; offset < 5000; offset++) {
            String k = "key-" + random.nextInt(900);
            map.put(key(k), offset);
            model.put(k, offset);
        }
        assertThat(map.size()).isEqualTo(model.size());
        model.forEach((k, v) -> assertThat(map.get(key(k))).as(k).isEqualTo(v));
        assertThat(map.get(key("absent"))).isEqualTo(-1);
        assertThat(map.averageProbes()).isLessThan(20);
    }

    @Test
    void refusesToOverfillAndTooSmallSizes() {
        KeyOffsetMap map = new KeyOffsetMap(24 * 3, 0.9);
        map.put(key("a"), 1);
        map.put(key("b"), 2);
        assertThatThrownBy(() -> map.put(key("c"), 3)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> new KeyOffsetMap(24, 0.9)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new KeyOffsetMap(2400, 1.0)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> map.put(key("a"), -1)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void theKeysBufferPositionIsLeftAlone() {
        KeyOffsetMap map = new KeyOffsetMap(24 * 10, 0.9);
        ByteBuffer k = key("abc");
        map.put(k, 5);
        assertThat(k.remaining()).isEqualTo(3);
        assertThat(map.get(k)).isEqualTo(5);
    }
}
