package dev.varve.broker.security;

import dev.varve.metadata.ControllerResult;
import dev.varve.metadata.MetadataRecord;
import dev.varve.storage.checkpoint.CheckpointFile;
import org.apache.kafka.common.errors.KafkaStorageException;

import java.io.File;
import java.io.IOException;
import java.util.List;
import java.util.function.BiFunction;
import java.util.function.Function;

/**
 * Security state a single-node broker keeps on disk where a cluster keeps it in its metadata log
 * (SCRAM credentials, ACLs): the records that rebuild it, one per line in Kafka's checkpoint layout,
 * replaced atomically and fsynced before a change is answered.
 *
 * <p>Thread-safe: changes are serialized; readers see the immutable state {@code S}.
 *
 * @param <S> the immutable state
 * @param <R> the kind of record a line holds
 */
final class LocalRecordFile<S, R extends MetadataRecord> {
    private final CheckpointFile<R> file;
    private final BiFunction<S, MetadataRecord, S> apply;
    private final Function<S, List<R>> toRecords;
    private volatile S current;

    LocalRecordFile(File file, CheckpointFile.Formatter<R> format, S empty, BiFunction<S, MetadataRecord, S> apply,
                    Function<S, List<R>> toRecords) throws IOException {
        this.file = new CheckpointFile<>(file, format);
        this.apply = apply;
        this.toRecords = toRecords;
        S loaded = empty;
        for (R r : this.file.read()) {
            loaded = apply.apply(loaded, r);
        }
        this.current = loaded;
    }

    S current() {
        return current;
    }

    /** Decides a change over the current state and applies it; the file holds the result before this returns. */
    synchronized <T> T change(Function<S, ControllerResult<T>> decide) {
        ControllerResult<T> decided = decide.apply(current);
        if (decided.records().isEmpty()) {
            return decided.response();
        }
        S next = current;
        for (MetadataRecord r : decided.records()) {
            next = apply.apply(next, r);
        }
        try {
            file.write(toRecords.apply(next));
        } catch (IOException e) {
            throw new KafkaStorageException("cannot write " + file.file() + ": " + e.getMessage(), e);
        }
        current = next;
        return decided.response();
    }
}
