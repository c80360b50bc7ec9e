package dev.varve.cli.client;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLGenerator;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Consumer;

/**
 * How a client command prints its result: {@code text} (aligned columns for people), {@code json} or
 * {@code yaml} (the same data, whole, for scripts). A command builds its result as plain data (maps in
 * a stable order, lists, strings, numbers, booleans) and says how to show it as text; the structured
 * formats print that data as it is, so a script never parses a table.
 */
public enum Output {
    TEXT, JSON, YAML;

    private static final ObjectMapper JSON_MAPPER = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    private static final ObjectMapper YAML_MAPPER = new ObjectMapper(new YAMLFactory()
            .disable(YAMLGenerator.Feature.WRITE_DOC_START_MARKER)
            .enable(YAMLGenerator.Feature.MINIMIZE_QUOTES)
            .enable(YAMLGenerator.Feature.ALWAYS_QUOTE_NUMBERS_AS_STRINGS));

    /** Parses {@code text|json|yaml} (any case), for picocli. */
    public static Output parse(String value) {
        try {
            return valueOf(value.toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("unknown output format '" + value + "': use text, json or yaml"
                    + " (-o is --output; where to start consuming is -O/--offset)");
        }
    }

    /** Prints {@code data}: through {@code text} in the text format, as a document otherwise. */
    public void emit(PrintWriter out, Object data, Consumer<PrintWriter> text) {
        if (this == TEXT) {
            text.accept(out);
        } else {
            out.print(serialize(data));
            if (this == JSON) {
                out.println();
            }
        }
        out.flush();
    }

    /** {@code data} as a JSON or YAML document. */
    public String serialize(Object data) {
        try {
            return (this == YAML ? YAML_MAPPER : JSON_MAPPER).writeValueAsString(data);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot serialise the command's result", e);
        }
    }

    /** Reads a JSON or YAML document (both parse as YAML) into plain data. */
    static Object parseDocument(String text) {
        try {
            return YAML_MAPPER.readValue(text, Object.class);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException(e.getOriginalMessage());
        }
    }

    /**
     * Prints rows as columns aligned under upper-case headers, two spaces apart, as rpk and kubectl do;
     * {@code rows} are maps keyed by the headers' lower-case names (missing cells print as "-").
     */
    public static void table(PrintWriter out, List<String> headers, List<? extends Map<String, ?>> rows) {
        List<String[]> cells = new ArrayList<>();
        int[] width = new int[headers.size()];
        String[] head = new String[headers.size()];
        for (int i = 0; i < headers.size(); i++) {
            head[i] = headers.get(i).toUpperCase(Locale.ROOT);
            width[i] = head[i].length();
        }
        cells.add(head);
        for (Map<String, ?> row : rows) {
            String[] line = new String[headers.size()];
            for (int i = 0; i < headers.size(); i++) {
                Object v = row.get(headers.get(i));
                line[i] = cell(v);
                width[i] = Math.max(width[i], line[i].length());
            }
            cells.add(line);
        }
        StringBuilder sb = new StringBuilder();
        for (String[] line : cells) {
            sb.setLength(0);
            for (int i = 0; i < line.length; i++) {
                sb.append(line[i]);
                if (i < line.length - 1) {
                    sb.append(" ".repeat(width[i] - line[i].length() + 2));
                }
            }
            out.println(sb.toString().stripTrailing());
        }
    }

    /** A value as one table cell: lists joined with commas, nothing as "-". */
    public static String cell(Object v) {
        if (v == null) {
            return "-";
        }
        if (v instanceof java.util.Collection<?> c) {
            StringBuilder sb = new StringBuilder();
            for (Object o : c) {
                if (sb.length() > 0) {
                    sb.append(',');
                }
                sb.append(o);
            }
            return sb.length() == 0 ? "-" : sb.toString();
        }
        return v.toString();
    }

    /** Prints {@code key: value} lines, the keys padded to one width. */
    public static void fields(PrintWriter out, Map<String, ?> fields) {
        int w = 0;
        for (String k : fields.keySet()) {
            w = Math.max(w, k.length());
        }
        for (Map.Entry<String, ?> e : fields.entrySet()) {
            out.println(e.getKey().toUpperCase(Locale.ROOT) + " ".repeat(w - e.getKey().length() + 2) + cell(e.getValue()));
        }
    }
}
