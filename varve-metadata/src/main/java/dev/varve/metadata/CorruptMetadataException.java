package dev.varve.metadata;

/** Serialized metadata (a Raft entry or a snapshot) that cannot be read: truncated, corrupt or of an unknown version. */
public final class CorruptMetadataException extends RuntimeException {
    public CorruptMetadataException(String message) {
        super(message);
    }
}
