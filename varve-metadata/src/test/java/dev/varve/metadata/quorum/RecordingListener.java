package dev.varve.metadata.quorum;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Test listener: keeps the state as the list of entries (as strings) applied so far, snapshots it as
 * newline-separated text, and records every callback and any contract violation.
 */
final class RecordingListener implements MetadataListener, SnapshotSource {
    private final List<String> state = new ArrayList<>();          // apply thread only, copied under lock
    final List<Long> committedIndexes = new CopyOnWriteArrayList<>();
    final List<Long> snapshotsLoaded = new CopyOnWriteArrayList<>();
    final List<Long> snapshotsTaken = new CopyOnWriteArrayList<>();
    final List<String> violations = new CopyOnWriteArrayList<>();
    final List<String> leadershipEvents = new CopyOnWriteArrayList<>();
    final Set<String> threads = ConcurrentHashMap.newKeySet();
    private long lastIndex = -1;
    volatile boolean leads;
    volatile boolean everLed;
    volatile long leaderSinceNanos;
    volatile RuntimeException failOnEntry;
    /** Each entry takes this long to apply (a slow owner). */
    volatile long applyDelayMs;

    @Override
    public void onCommitted(long index, long term, byte[] entry) {
        threads.add(Thread.currentThread().getName());
        if (index <= lastIndex) {
            violations.add("index " + index + " delivered after " + lastIndex);
        }
        lastIndex = index;
        if (applyDelayMs > 0) {
            try {
                Thread.sleep(applyDelayMs);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        String text = new String(entry, StandardCharsets.UTF_8);
        if (failOnEntry != null && text.equals("boom")) {
            throw failOnEntry;
        }
        synchronized (this) {
            state.add(text);
        }
        committedIndexes.add(index);
    }

    @Override
    public void onSnapshotLoaded(long index, byte[] snapshot) {
        threads.add(Thread.currentThread().getName());
        if (index <= lastIndex) {
            violations.add("snapshot " + index + " loaded after entry " + lastIndex);
        }
        lastIndex = index;
        String text = new String(snapshot, StandardCharsets.UTF_8);
        synchronized (this) {
            state.clear();
            if (!text.isEmpty()) {
                state.addAll(Arrays.asList(text.split("\n")));
            }
        }
        snapshotsLoaded.add(index);
    }

    @Override
    public void onLeadershipChange(OptionalInt leaderId, boolean thisNodeLeads, long term) {
        threads.add(Thread.currentThread().getName());
        leadershipEvents.add(leaderId + "/" + thisNodeLeads + "/" + term);
        if (thisNodeLeads && !leads) {
            leaderSinceNanos = System.nanoTime();
        }
        leads = thisNodeLeads;
        everLed |= thisNodeLeads;
    }

    @Override
    public byte[] snapshotAt(long appliedIndex) {
        threads.add(Thread.currentThread().getName());
        snapshotsTaken.add(appliedIndex);
        return String.join("\n", state()).getBytes(StandardCharsets.UTF_8);
    }

    synchronized List<String> state() {
        return List.copyOf(state);
    }
}
