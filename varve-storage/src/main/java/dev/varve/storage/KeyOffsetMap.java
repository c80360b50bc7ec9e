package dev.varve.storage;

import java.nio.ByteBuffer;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;

/**
 * The cleaner's fixed-size map from a key's hash to the offset of the key's latest record (Kafka's
 * {@code SkimpyOffsetMap} idea): one heap array allocated once, open addressing with linear probing, no
 * per-entry objects and no resizing, so a cleaning round's memory is exactly the configured
 * {@code log.cleaner.dedupe.buffer.size} share.
 *
 * <pre>
 *   slot i:  [ MD5(key) : 16 bytes ][ offset + 1 : int64 ]      24 bytes per slot
 *            offset field 0 = empty slot (a zeroed array is an empty map)
 * </pre>
 *
 * <p>Keys are identified by their 128-bit MD5 digest alone: two keys with the same digest would be
 * treated as one (the older one's records dropped). With a 128-bit hash the chance of that is
 * negligible at any map size Java can hold (Kafka makes the same trade). Callers stop adding keys once
 * {@link #size()} reaches {@link #maxEntries()} (the load factor), which keeps probe sequences short.
 *
 * <p>Thread-safety: none. One cleaner worker owns a map and uses it for one round at a time.
 */
final class KeyOffsetMap {
    static final int HASH_BYTES = 16;
    static final int SLOT_BYTES = HASH_BYTES + 8;

    private final ByteBuffer slots;
    private final byte[] array;
    private final int slotCount;
    private final int maxEntries;
    private final MessageDigest digest;
    private final byte[] hash = new byte[HASH_BYTES];
    private int size;
    private long latestOffset = -1;
    private long lookups;
    private long probes;

    /**
     * @param memoryBytes bytes of the slot array (rounded down to whole slots); at least two slots
     * @param loadFactor  the share of slots that may be used, in (0, 1)
     */
    KeyOffsetMap(int memoryBytes, double loadFactor) {
        if (memoryBytes < 2 * SLOT_BYTES) {
            throw new IllegalArgumentException("an offset map needs at least " + 2 * SLOT_BYTES + " bytes, not " + memoryBytes);
        }
        if (!(loadFactor > 0 && loadFactor < 1)) {
            throw new IllegalArgumentException("load factor must be in (0, 1), not " + loadFactor);
        }
        this.slotCount = memoryBytes / SLOT_BYTES;
        this.maxEntries = Math.max(1, (int) (slotCount * loadFactor));
        this.array = new byte[slotCount * SLOT_BYTES];
        this.slots = ByteBuffer.wrap(array);
        try {
            this.digest = MessageDigest.getInstance("MD5");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JVM has no MD5 digest", e);
        }
    }

    /** Records that {@code key}'s latest record (so far) is at {@code offset}. */
    void put(ByteBuffer key, long offset) {
        if (offset < 0) {
            throw new IllegalArgumentException("negative offset " + offset);
        }
        hashInto(key);
        int slot = findSlot();
        int at = slot * SLOT_BYTES;
        if (slots.getLong(at + HASH_BYTES) == 0) {
            if (size >= slotCount - 1) {
                throw new IllegalStateException("offset map is full (" + size + " of " + slotCount + " slots)");
            }
            slots.put(at, hash);
            size++;
        }
        slots.putLong(at + HASH_BYTES, offset + 1);
        latestOffset = Math.max(latestOffset, offset);
    }

    /** The offset last put for {@code key}, or -1 when the key is not in the map. */
    long get(ByteBuffer key) {
        hashInto(key);
        int at = findSlot() * SLOT_BYTES;
        return slots.getLong(at + HASH_BYTES) - 1;
    }

    /** The slot holding the current hash, or the empty slot where it would go. */
    private int findSlot() {
        lookups++;
        long h = ((long) (hash[0] & 0xff) << 56) | ((long) (hash[1] & 0xff) << 48) | ((long) (hash[2] & 0xff) << 40)
                | ((long) (hash[3] & 0xff) << 32) | ((long) (hash[4] & 0xff) << 24) | ((hash[5] & 0xff) << 16)
                | ((hash[6] & 0xff) << 8) | (hash[7] & 0xff);
        int slot = (int) Long.remainderUnsigned(h, slotCount);
        while (true) {
            probes++;
            int at = slot * SLOT_BYTES;
            if (slots.getLong(at + HASH_BYTES) == 0 || Arrays.equals(array, at, at + HASH_BYTES, hash, 0, HASH_BYTES)) {
                return slot;
            }
            slot = slot + 1 == slotCount ? 0 : slot + 1;
        }
    }

    private void hashInto(ByteBuffer key) {
        digest.reset();
        digest.update(key.duplicate());
        try {
            digest.digest(hash, 0, HASH_BYTES);
        } catch (java.security.DigestException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Empties the map (zeroes the array) for the next round. */
    void clear() {
        Arrays.fill(array, (byte) 0);
        size = 0;
        latestOffset = -1;
        lookups = 0;
        probes = 0;
    }

    /** Distinct keys in the map. */
    int size() {
        return size;
    }

    /** How many distinct keys a round may add before it must stop (slots times the load factor). */
    int maxEntries() {
        return maxEntries;
    }

    int slotCount() {
        return slotCount;
    }

    /** The largest offset put since the last clear, or -1. */
    long latestOffset() {
        return latestOffset;
    }

    /** Slots inspected per lookup since the last clear (1.0 is perfect hashing). */
    double averageProbes() {
        return lookups == 0 ? 0 : (double) probes / lookups;
    }

    @Override
    public String toString() {
        return "KeyOffsetMap(" + size + " of " + slotCount + " slots, latest offset " + latestOffset + ")";
    }
}
