package dev.varve.metadata;

import java.util.List;

/**
 * A controller decision: the records to commit (one Raft entry, possibly empty) and the response to
 * send once they are committed. When {@code records} is empty the response may be sent at once.
 */
public record ControllerResult<T>(List<MetadataRecord> records, T response) {
    public ControllerResult {
        records = List.copyOf(records);
    }

    public static <T> ControllerResult<T> of(T response) {
        return new ControllerResult<>(List.of(), response);
    }
}
