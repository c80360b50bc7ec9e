package dev.varve.storage.index;

/** An offset is too far from a segment's base offset to be stored as a 4-byte relative offset. */
public class IndexOffsetOverflowException extends RuntimeException {
    public IndexOffsetOverflowException(String message) {
        super(message);
    }
}
