package dev.varve.storage;

import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.protocol.Errors;

import java.util.List;

/**
 * A produced batch refused because of some of its records (KIP-467): which ones, by their index in the
 * batch, and why, so the Produce answer can name them ({@code record_errors}) and a client fail only
 * those records with the error and the others as collateral, as Kafka's LogValidator reports them: one
 * error per record (a missing key before its timestamp), and INVALID_TIMESTAMP when any record's
 * timestamp is at fault, INVALID_RECORD otherwise. It is an {@link InvalidRecordException}, so code
 * that maps exceptions by class sees INVALID_RECORD: use {@link #error()} for the code.
 */
public final class RecordsRejectedException extends InvalidRecordException {
    /** One rejected record: its index in the batch and why. */
    public record RecordError(int batchIndex, String message) {
        @Override
        public String toString() {
            return "RecordError(batchIndex=" + batchIndex + ", message='" + message + "')";
        }
    }

    private final transient List<RecordError> recordErrors;
    private final Errors error;

    RecordsRejectedException(List<RecordError> recordErrors, boolean anyTimestamp) {
        super(anyTimestamp ? "One or more records have been rejected due to invalid timestamp" : summary(recordErrors));
        this.recordErrors = List.copyOf(recordErrors);
        this.error = anyTimestamp ? Errors.INVALID_TIMESTAMP : Errors.INVALID_RECORD;
    }

    private static String summary(List<RecordError> errors) {
        return "One or more records have been rejected due to " + errors.size() + " record errors in total, and only showing"
                + " the first three errors at most: " + errors.subList(0, Math.min(3, errors.size()));
    }

    public List<RecordError> recordErrors() {
        return recordErrors;
    }

    /** INVALID_RECORD or INVALID_TIMESTAMP. */
    public Errors error() {
        return error;
    }

}
