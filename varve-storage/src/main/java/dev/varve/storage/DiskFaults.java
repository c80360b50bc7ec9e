package dev.varve.storage;

import java.io.IOException;
import java.nio.file.Path;

/**
 * The fault-injection points of every disk mutation the storage engine makes: segment writes,
 * truncations and fsyncs, file creations and renames, checkpoint and producer-snapshot writes,
 * directory fsyncs. Production runs with {@link #NONE} (one volatile read per mutation); tests
 * install an {@link Injector} that fails chosen operations the way a real disk does (ENOSPC, EIO,
 * inode exhaustion, a write that stops part-way) to prove that each failure leaves the log
 * consistent and reaches the log directory's failure channel ({@link PartitionLog#onStorageFailure}).
 *
 * <p>One injector for the whole JVM: the tests that install one run alone (storage tests run
 * sequentially) and remove it with the {@link Installed} handle.
 */
public final class DiskFaults {
    /** What is about to happen to a file. */
    public enum Op {
        /** A segment append ({@code write(2)} of record bytes). */
        SEGMENT_WRITE,
        /** {@code ftruncate(2)} of a segment or an index. */
        TRUNCATE,
        /** {@code fsync(2)} of a segment, an index, a checkpoint or a snapshot. */
        FSYNC,
        /** {@code fsync(2)} of a directory (making creations and renames durable). */
        DIRECTORY_FSYNC,
        /** Creation of a new file (a segment, an index, a checkpoint's {@code .tmp}, a snapshot). */
        CREATE,
        /** A rename ({@code .tmp} over a checkpoint, {@code .deleted}, {@code .swap}...). */
        RENAME
    }

    /** Decides, before each operation, whether it fails. */
    public interface Injector {
        /** Throws to fail {@code op} on {@code file} before anything happens. */
        void before(Op op, Path file) throws IOException;

        /**
         * For a {@link Op#SEGMENT_WRITE} of {@code bytes} that {@link #before} let through: how many of
         * them reach the file before the write fails with EIO, or -1 for the whole write succeeding.
         */
        default int failAfter(Path file, int bytes) {
            return -1;
        }
    }

    public static final Injector NONE = (op, file) -> { };

    private static volatile Injector injector = NONE;

    private DiskFaults() {
    }

    /** Installs {@code i} until the returned handle is closed. */
    public static Installed install(Injector i) {
        injector = i;
        return () -> injector = NONE;
    }

    /** Removes the injector (closing never throws). */
    public interface Installed extends AutoCloseable {
        @Override
        void close();
    }

    /** Called by the storage engine before {@code op} on {@code file}. */
    public static void check(Op op, Path file) throws IOException {
        Injector i = injector;
        if (i != NONE) {
            i.before(op, file);
        }
    }

    /** See {@link Injector#failAfter}; -1 when no injector is installed. */
    static int failAfter(Path file, int bytes) {
        Injector i = injector;
        return i == NONE ? -1 : i.failAfter(file, bytes);
    }
}
