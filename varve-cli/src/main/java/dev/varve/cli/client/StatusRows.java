package dev.varve.cli.client;

import org.apache.kafka.common.KafkaFuture;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;

/**
 * The answer of a command that acts on several things at once (topics, groups, partitions): one row per
 * thing with its fields and a {@code status} (OK, or why it failed, explained), printed as a table or
 * as data; exit status 1 when any failed.
 */
final class StatusRows {
    private final List<Map<String, Object>> rows = new ArrayList<>();
    private int failed;

    /** A row with one field. */
    static Map<String, Object> row(String key, Object value) {
        Map<String, Object> row = new LinkedHashMap<>();
        row.put(key, value);
        return row;
    }

    /** Waits for {@code outcome} and adds {@code row} with its status; returns whether it succeeded. */
    boolean add(Map<String, Object> row, KafkaFuture<?> outcome) throws InterruptedException {
        boolean ok;
        try {
            outcome.get();
            row.put("status", "OK");
            ok = true;
        } catch (ExecutionException e) {
            failed++;
            row.put("status", CliErrors.explain(CliErrors.unwrap(e), null));
            ok = false;
        }
        rows.add(row);
        return ok;
    }

    /** Prints the rows under {@code headers} (text) or whole (JSON, YAML); the exit status. */
    int emit(Output output, PrintWriter out, List<String> headers) {
        output.emit(out, rows, o -> Output.table(o, headers, rows));
        return failed == 0 ? 0 : 1;
    }
}
