package dev.varve.storage;

import java.io.IOException;
import java.util.List;

/**
 * The crash-safe replacement of a group of segments by the one compacted segment the cleaner wrote
 * for it (Kafka's protocol). Every step is a rename, so a crash leaves each file either under its old
 * or its new name; which names exist tells start-up what to do ({@link LogLoader#completeInterruptedSwaps}).
 *
 * <pre>
 *   step                                  files of base B after it           a crash here ends with
 *   0 written + fsynced (by the cleaner)  B.log.cleaned  B.log  C.log          old segments (.cleaned deleted)
 *   1 .cleaned -> .swap, indexes first,   B.log.swap     B.log  C.log          new segment (swap completed:
 *     the .log last (the commit point)                                          B.log, C.log deleted)
 *   2 old segments -> .deleted            B.log.swap     B.log.deleted ...     new segment
 *   3 .swap -> regular name, log first    B.log                                 new segment
 *   4 segment map updated in memory; old segments' files removed after file.delete.delay.ms
 * </pre>
 *
 * <p>A crash between the index renames of step 1 and its {@code .log} rename leaves {@code .swap}
 * indexes without a {@code .swap} log: start-up deletes them with the {@code .cleaned} log (old
 * segments win). Completing a swap deletes every regular segment whose base offset is in
 * [B, end of the swap); the swap covers its whole group because the cleaner always keeps the group's
 * last batch (empty if all its records went), so its end is the next group's base offset.
 *
 * <p>The cleaner fsyncs the cleaned files before step 1 and the directory after step 3, and relies on
 * the file system keeping the order of renames in one directory (journaling file systems do; Kafka
 * relies on the same) rather than fsyncing the directory between steps under the log's lock.
 *
 * <p>Thread-safety: {@link #swap} must run under the owning log's lock (the log's writers and the
 * segment map); readers are never blocked: a reader holding an old segment keeps reading its open
 * file, and the map replaces the group's first segment before it drops the others, so a lookup always
 * finds either the old or the new copy of an offset.
 */
final class SegmentSwap {
    /** The steps at which a test may inject a crash. */
    enum Step {
        /** Before anything is renamed (cleaned files complete and fsynced). */
        BEFORE_SWAP,
        /** Before one rename of a cleaned file from {@code .cleaned} to {@code .swap}. */
        CLEANED_TO_SWAP,
        /** Before one rename of an old segment's file to {@code .deleted}. */
        OLD_TO_DELETED,
        /** Before one rename of a {@code .swap} file to its regular name. */
        SWAP_TO_FINAL,
        /** Before the in-memory segment map changes (all files renamed). */
        UPDATE_SEGMENT_MAP
    }

    /** Called before each step; a test throws from it to simulate a crash at that point. */
    @FunctionalInterface
    interface Hook {
        Hook NONE = step -> { };

        void before(Step step);
    }

    private SegmentSwap() {
    }

    /**
     * Replaces {@code replaced} (consecutive segments, the first with the cleaned segment's base offset)
     * by {@code cleaned}, whose files carry the {@code .cleaned} suffix. Caller holds the log's lock and
     * has checked that the replaced segments are still the log's.
     */
    static void swap(LogSegments segments, LogSegment cleaned, List<LogSegment> replaced, Hook hook) throws IOException {
        if (replaced.isEmpty() || replaced.get(0).baseOffset() != cleaned.baseOffset()) {
            throw new IllegalArgumentException("a cleaned segment must replace a group starting at its base offset "
                    + cleaned.baseOffset() + ", not " + replaced);
        }
        hook.before(Step.BEFORE_SWAP);
        cleaned.changeFileSuffixes(LogFileNames.CLEANED_SUFFIX, LogFileNames.SWAP_SUFFIX, true,
                () -> hook.before(Step.CLEANED_TO_SWAP));
        for (LogSegment old : replaced) {
            old.changeFileSuffixes("", LogFileNames.DELETED_SUFFIX, false, () -> hook.before(Step.OLD_TO_DELETED));
        }
        cleaned.changeFileSuffixes(LogFileNames.SWAP_SUFFIX, "", false, () -> hook.before(Step.SWAP_TO_FINAL));
        hook.before(Step.UPDATE_SEGMENT_MAP);
        segments.add(cleaned); // replaces the group's first segment (same base offset) in one step
        for (LogSegment old : replaced) {
            if (old.baseOffset() != cleaned.baseOffset()) {
                segments.remove(old.baseOffset());
            }
        }
    }
}
