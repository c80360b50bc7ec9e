package dev.varve.storage.index;

/** An index file is structurally invalid; the segment's indexes are rebuilt from its log file. */
public class CorruptIndexException extends RuntimeException {
    public CorruptIndexException(String message) {
        super(message);
    }
}
