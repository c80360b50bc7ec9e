package dev.varve.cli.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;

/**
 * {@code varve produce TOPIC}: one record per line of stdin (or {@code --file}), as the value, a
 * key-value pair or a JSON object. Empty lines are skipped unless {@code --allow-empty}.
 */
@Command(name = "produce", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Produce records to a topic: one per line of stdin (or --file).",
                "Formats: value (the line is the value), key-value (KEY<separator>VALUE), json (one object a line:"
                        + " {\"key\":..,\"value\":..,\"headers\":{..},\"partition\":..,\"timestamp\":..})."
                        + " Empty lines are skipped unless --allow-empty."})
public final class ProduceCommand implements java.util.concurrent.Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    ClientOptions client;

    @Parameters(index = "0", paramLabel = "TOPIC")
    String topic;

    @Option(names = {"-f", "--format"}, paramLabel = "FORMAT", converter = FormatConverter.class, defaultValue = "value",
            description = "value (default), key-value or json.")
    Format format = Format.VALUE;

    @Option(names = "--file", paramLabel = "FILE", description = "Read the records from FILE, not stdin.")
    Path file;

    @Option(names = "--delimiter", paramLabel = "SEP", defaultValue = "\\n",
            description = "What separates records (default \\n); escapes \\n \\r \\t \\0 \\\\ \\xNN, e.g. '\\0' or '|||'.")
    String delimiter;

    @Option(names = "--key-separator", paramLabel = "SEP", defaultValue = "\\t",
            description = "With --format key-value: what separates key from value (default \\t, the first one counts).")
    String keySeparator;

    @Option(names = {"-k", "--key"}, paramLabel = "KEY", description = "The key of every record (json records may set their own).")
    String key;

    @Option(names = {"-H", "--header"}, paramLabel = "KEY=VALUE", description = "A header on every record (repeatable).")
    List<String> headers = new ArrayList<>();

    @Option(names = {"-p", "--partition"}, paramLabel = "N",
            description = "Produce to this partition (default: by key, as Kafka's producer does).")
    Integer partition;

    @Option(names = "--acks", paramLabel = "all|1|0", converter = AcksConverter.class, defaultValue = "all",
            description = "Wait for all in-sync replicas (default), the leader only, or nothing (offsets are then unknown).")
    String acks = "all";

    @Option(names = {"-z", "--compression"}, paramLabel = "CODEC", converter = CompressionConverter.class, defaultValue = "none",
            description = "none (default), gzip, snappy, lz4 or zstd.")
    String compression = "none";

    @Option(names = "--value-encoding", paramLabel = "ENC", converter = Bytes.Converter.class, defaultValue = "text",
            description = "How values are written in the input: text (default, UTF-8), base64 or hex.")
    Bytes valueEncoding = Bytes.TEXT;

    @Option(names = "--key-encoding", paramLabel = "ENC", converter = Bytes.Converter.class, defaultValue = "text",
            description = "How keys are written in the input: text (default, UTF-8), base64 or hex.")
    Bytes keyEncoding = Bytes.TEXT;

    @Option(names = "--allow-empty", description = "Produce empty lines as records with an empty value (default: skip them).")
    boolean allowEmpty;

    @Option(names = {"-q", "--quiet"}, description = "Print only a summary, not a line per record.")
    boolean quiet;

    enum Format { VALUE, KEY_VALUE, JSON }

    static final class FormatConverter implements CommandLine.ITypeConverter<Format> {
        @Override
        public Format convert(String v) {
            return switch (v.toLowerCase(Locale.ROOT)) {
                case "value" -> Format.VALUE;
                case "key-value", "kv" -> Format.KEY_VALUE;
                case "json" -> Format.JSON;
                default -> throw new CommandLine.TypeConversionException("unknown format '" + v + "': use value, key-value or json");
            };
        }
    }

    static final class AcksConverter implements CommandLine.ITypeConverter<String> {
        @Override
        public String convert(String v) {
            return switch (v.toLowerCase(Locale.ROOT)) {
                case "all", "-1" -> "all";
                case "1", "0" -> v;
                default -> throw new CommandLine.TypeConversionException("use --acks all, 1 or 0, not '" + v + "'");
            };
        }
    }

    static final class CompressionConverter implements CommandLine.ITypeConverter<String> {
        private static final Set<String> CODECS = Set.of("none", "gzip", "snappy", "lz4", "zstd");

        @Override
        public String convert(String v) {
            String c = v.toLowerCase(Locale.ROOT);
            if (!CODECS.contains(c)) {
                throw new CommandLine.TypeConversionException("unknown compression '" + v + "': use none, gzip, snappy, lz4 or zstd");
            }
            return c;
        }
    }

    private static final ObjectMapper JSON = new ObjectMapper();
    private static final Set<String> JSON_FIELDS = Set.of("key", "value", "headers", "partition", "timestamp");
    /** Fields of {@code varve consume -o json} that produce ignores, so its output can be produced again. */
    private static final Set<String> IGNORED_JSON_FIELDS = Set.of("topic", "offset");

    /** A record given to the producer: its input line and how its send ended. */
    private record Pending(long line, Integer partition, Future<RecordMetadata> result) {
    }

    private final List<Map<String, Object>> results = new ArrayList<>();
    private byte[] keySep;
    private Integer maxMessageBytes;
    private static final int DEFAULT_BATCH_SIZE = 16384;
    private long produced;
    private long failed;
    private String firstFailure;

    @Override
    public Integer call() throws Exception {
        if (format == Format.KEY_VALUE && key != null) {
            throw new CommandLine.ParameterException(spec.commandLine(),
                    "--key and --format key-value both set the key: use one of them");
        }
        byte[] delim = separator(delimiter, "--delimiter");
        keySep = separator(keySeparator, "--key-separator");
        RecordHeaders fixedHeaders = new RecordHeaders();
        for (String h : headers) {
            int eq = h.indexOf('=');
            if (eq <= 0) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--header needs KEY=VALUE, not '" + h + "'");
            }
            fixedHeaders.add(h.substring(0, eq), h.substring(eq + 1).getBytes(StandardCharsets.UTF_8));
        }
        byte[] fixedKey = null;
        if (key != null) {
            try {
                fixedKey = keyEncoding.decode(key);
            } catch (IllegalArgumentException e) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--key: " + e.getMessage());
            }
        }
        String where = file == null ? "stdin" : file.toString();
        String unit = Arrays.equals(delim, new byte[] {'\n'}) ? "line" : "record";

        InputStream in = open();
        int partitions = partitionCount();
        if (partition != null && (partition < 0 || partition >= partitions)) {
            throw new CliErrors.Failure("topic '" + topic + "' has no partition " + partition + ": it has " + partitions
                    + " (0-" + (partitions - 1) + ")");
        }
        PrintWriter out = spec.commandLine().getOut();
        PrintWriter err = spec.commandLine().getErr();
        String inputError = null;
        long sent = 0;
        try (in; KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerProperties())) {
            ArrayDeque<Pending> pending = new ArrayDeque<>();
            // typed at a terminal: confirm each line before waiting for the next one
            Splitter records = new Splitter(in, delim, () -> {
                if (!pending.isEmpty()) {
                    producer.flush();
                    drain(pending, true, out, err, unit);
                }
            });
            long line = 0;
            byte[] chunk;
            while ((chunk = records.next()) != null) {
                line++;
                if (chunk.length == 0 && (!allowEmpty || format == Format.JSON)) {
                    continue;
                }
                ProducerRecord<byte[], byte[]> record;
                try {
                    record = record(chunk, fixedKey, fixedHeaders, partitions);
                } catch (IllegalArgumentException e) {
                    inputError = unit + " " + line + " of " + where + ": " + e.getMessage();
                    break;
                }
                Future<RecordMetadata> f;
                try {
                    f = producer.send(record);
                } catch (RuntimeException e) {
                    f = CompletableFuture.failedFuture(e);
                }
                sent++;
                pending.add(new Pending(line, record.partition(), f));
                drain(pending, false, out, err, unit);
            }
            producer.flush();
            drain(pending, true, out, err, unit);
            producer.close(Duration.ofMillis(client.timeoutMs()));
        }
        report(out);
        if (inputError != null) {
            throw new CliErrors.Failure(inputError + (sent == 0 ? "; nothing was produced"
                    : "; stopped there (the " + sent + " records before it were " + (failed == 0 ? "produced" : "sent") + ")"));
        }
        if (failed > 0) {
            throw new CliErrors.Failure(failed + " of " + sent + " records were not produced (the first: " + firstFailure + ")");
        }
        return 0;
    }

    private byte[] separator(String typed, String option) {
        try {
            return Bytes.unescape(typed);
        } catch (IllegalArgumentException e) {
            throw new CommandLine.ParameterException(spec.commandLine(), option + ": " + e.getMessage());
        }
    }

    private InputStream open() {
        if (file == null) {
            return new java.io.FilterInputStream(System.in) {
                @Override
                public void close() {
                    // stdin is not ours to close
                }
            };
        }
        try {
            return Files.newInputStream(file);
        } catch (NoSuchFileException e) {
            throw new CliErrors.Failure("cannot read --file " + file + ": no such file");
        } catch (IOException e) {
            throw new CliErrors.Failure("cannot read --file " + file + ": " + e.getMessage());
        }
    }

    /** The topic's partition count; a clear error when there is no such topic (produce never creates one). */
    private int partitionCount() throws Exception {
        try (Admin admin = client.admin()) {
            TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
            maxMessageBytes = maxMessageBytes(admin);
            return d.partitions().size();
        } catch (ExecutionException e) {
            if (CliErrors.unwrap(e) instanceof UnknownTopicOrPartitionException) {
                throw new CliErrors.Failure("topic '" + topic + "' does not exist: create it with `varve topic create "
                        + topic + "` (list topics with `varve topic list`)");
            }
            throw e;
        }
    }

    /** The topic's max.message.bytes, or null when it cannot be read (e.g. no DescribeConfigs permission). */
    private Integer maxMessageBytes(Admin admin) {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        try {
            ConfigEntry e = admin.describeConfigs(List.of(resource)).all().get().get(resource).get(TopicConfig.MAX_MESSAGE_BYTES_CONFIG);
            return e == null || e.value() == null ? null : Integer.valueOf(e.value());
        } catch (Exception e) {
            if (e instanceof InterruptedException) {
                Thread.currentThread().interrupt();
            }
            return null;
        }
    }

    private java.util.Properties producerProperties() {
        long timeout = client.timeoutMs();
        Map<String, Object> p = new LinkedHashMap<>();
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.CLIENT_ID_CONFIG, "varve-cli");
        p.put(ProducerConfig.ACKS_CONFIG, acks);
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, compression);
        if (!"all".equals(acks)) {
            p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false"); // idempotence needs acks=all
        }
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, Long.toString(timeout));
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, Long.toString(Math.min(Integer.MAX_VALUE, timeout)));
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, Long.toString(Math.min(Integer.MAX_VALUE, timeout + 5)));
        if (maxMessageBytes != null && maxMessageBytes < DEFAULT_BATCH_SIZE) {
            // Kafka's producer splits a batch the broker finds too large into batches of batch.size and retries: when
            // that is above the topic's max.message.bytes it splits the same batch for ever (until delivery.timeout.ms)
            p.put(ProducerConfig.BATCH_SIZE_CONFIG, Integer.toString(Math.max(1, maxMessageBytes)));
        }
        java.util.Properties props = client.clientProperties(p);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        return props;
    }

    /** One input record as a ProducerRecord; an IllegalArgumentException says what is wrong with it. */
    private ProducerRecord<byte[], byte[]> record(byte[] chunk, byte[] fixedKey, RecordHeaders fixedHeaders, int partitions) {
        RecordHeaders h = new RecordHeaders(fixedHeaders.toArray());
        switch (format) {
            case VALUE:
                return new ProducerRecord<>(topic, partition, null, fixedKey, valueEncoding.decode(chunk), h);
            case KEY_VALUE: {
                byte[] sep = keySep;
                int at = indexOf(chunk, sep);
                if (at < 0) {
                    throw new IllegalArgumentException("no key separator '" + keySeparator
                            + "' in it (--format key-value reads KEY<separator>VALUE; set the separator with --key-separator)");
                }
                byte[] k = keyEncoding.decode(Arrays.copyOfRange(chunk, 0, at));
                byte[] v = valueEncoding.decode(Arrays.copyOfRange(chunk, at + sep.length, chunk.length));
                return new ProducerRecord<>(topic, partition, null, k, v, h);
            }
            default:
                return jsonRecord(chunk, fixedKey, h, partitions);
        }
    }

    private ProducerRecord<byte[], byte[]> jsonRecord(byte[] chunk, byte[] fixedKey, RecordHeaders h, int partitions) {
        JsonNode node;
        try {
            node = JSON.readTree(chunk);
        } catch (IOException e) {
            String why = e instanceof com.fasterxml.jackson.core.JsonProcessingException j ? j.getOriginalMessage() : e.getMessage();
            throw new IllegalArgumentException("invalid JSON: " + why);
        }
        if (node == null || !node.isObject()) {
            throw new IllegalArgumentException("not a JSON object (--format json reads one {\"key\":..,\"value\":..} a line)");
        }
        for (Iterator<String> names = node.fieldNames(); names.hasNext(); ) {
            String n = names.next();
            if (!JSON_FIELDS.contains(n) && !IGNORED_JSON_FIELDS.contains(n)) {
                throw new IllegalArgumentException("unknown field \"" + n + "\" (a record has key, value, headers, partition, timestamp)");
            }
        }
        if (!node.has("value")) {
            throw new IllegalArgumentException("no \"value\" field (write \"value\": null for a tombstone)");
        }
        byte[] k = node.has("key") ? bytes(node.get("key"), keyEncoding, "key") : fixedKey;
        byte[] v = bytes(node.get("value"), valueEncoding, "value");
        JsonNode hs = node.get("headers");
        if (hs != null && !hs.isNull()) {
            if (hs.isObject()) {
                hs.fields().forEachRemaining(e -> h.add(e.getKey(), headerValue(e.getValue())));
            } else if (hs.isArray()) {
                for (JsonNode one : hs) {
                    if (!one.isObject() || !one.has("key") || !one.get("key").isTextual()) {
                        throw new IllegalArgumentException("\"headers\" as a list holds {\"key\":..,\"value\":..} objects");
                    }
                    h.add(one.get("key").asText(), headerValue(one.get("value")));
                }
            } else {
                throw new IllegalArgumentException("\"headers\" must be an object {\"name\":\"value\",..} or a list of {\"key\":..,\"value\":..}");
            }
        }
        Integer p = partition;
        JsonNode pn = node.get("partition");
        if (pn != null && !pn.isNull()) {
            if (!pn.canConvertToInt() || !pn.isIntegralNumber()) {
                throw new IllegalArgumentException("\"partition\" must be a whole number");
            }
            p = pn.intValue();
            if (p < 0 || p >= partitions) {
                throw new IllegalArgumentException("topic '" + topic + "' has no partition " + p + ": it has " + partitions);
            }
        }
        Long ts = null;
        JsonNode tn = node.get("timestamp");
        if (tn != null && !tn.isNull()) {
            if (!tn.isIntegralNumber() || tn.longValue() < 0) {
                throw new IllegalArgumentException("\"timestamp\" must be milliseconds since the epoch");
            }
            ts = tn.longValue();
        }
        return new ProducerRecord<>(topic, p, ts, k, v, h);
    }

    /** A JSON key or value as bytes: strings through the encoding, null as null, other JSON as its text. */
    private static byte[] bytes(JsonNode n, Bytes encoding, String field) {
        if (n == null || n.isNull()) {
            return null;
        }
        if (n.isTextual()) {
            try {
                return encoding.decode(n.asText());
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("\"" + field + "\" is " + e.getMessage());
            }
        }
        return n.toString().getBytes(StandardCharsets.UTF_8);
    }

    private static byte[] headerValue(JsonNode n) {
        if (n == null || n.isNull()) {
            return null;
        }
        return (n.isTextual() ? n.asText() : n.toString()).getBytes(StandardCharsets.UTF_8);
    }

    static int indexOf(byte[] haystack, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= haystack.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (haystack[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    /** Reports the sends at the head of the queue that have ended (all of them when {@code all}), in input order. */
    private void drain(ArrayDeque<Pending> pending, boolean all, PrintWriter out, PrintWriter err, String unit)
            throws InterruptedException {
        while (!pending.isEmpty() && (all || pending.peek().result().isDone())) {
            Pending p = pending.poll();
            Map<String, Object> row = new LinkedHashMap<>();
            row.put("line", p.line());
            try {
                RecordMetadata m = p.result().get();
                produced++;
                row.put("partition", m.partition());
                row.put("offset", m.hasOffset() ? m.offset() : null);
                row.put("timestamp", m.hasTimestamp() ? m.timestamp() : null);
                if (client.output == Output.TEXT && !quiet) {
                    out.println("Produced to partition " + m.partition()
                            + (m.hasOffset() ? " at offset " + m.offset() : " (offset unknown with --acks 0)"));
                }
            } catch (ExecutionException e) {
                failed++;
                String why = unit + " " + p.line() + ": " + CliErrors.explain(CliErrors.unwrap(e), client.bootstrapServers());
                if (firstFailure == null) {
                    firstFailure = why;
                }
                row.put("partition", p.partition());
                row.put("error", CliErrors.explain(CliErrors.unwrap(e), null));
                if (client.output == Output.TEXT && !quiet) {
                    err.println("error: not produced: " + why);
                    err.flush();
                }
            }
            results.add(row);
        }
        out.flush();
    }

    private void report(PrintWriter out) {
        if (quiet) {
            Map<String, Object> summary = new LinkedHashMap<>();
            summary.put("topic", topic);
            summary.put("produced", produced);
            summary.put("failed", failed);
            client.output.emit(out, summary, o -> o.println("Produced " + produced + (produced == 1 ? " record" : " records")
                    + " to " + topic + (failed > 0 ? " (" + failed + " failed)" : "")));
        } else if (client.output != Output.TEXT) {
            client.output.emit(out, results, o -> { });
        }
    }

    /** Cuts a stream into records at each occurrence of the delimiter; the last record needs none after it. */
    static final class Splitter {
        private final InputStream in;
        private final byte[] delim;
        private final byte[] buf = new byte[64 * 1024];
        private int pos;
        private int limit;
        private boolean eof;
        private byte[] record = new byte[256];

        private final Idle idle;

        /** What to do before a read that would wait for more input. */
        interface Idle {
            void run() throws InterruptedException;
        }

        Splitter(InputStream in, byte[] delim, Idle idle) {
            this.in = in;
            this.delim = delim;
            this.idle = idle;
        }

        /** The next record, or null at the end of the input. */
        byte[] next() throws IOException, InterruptedException {
            int size = 0;
            byte last = delim[delim.length - 1];
            while (true) {
                if (pos == limit) {
                    if (eof) {
                        return size == 0 ? null : Arrays.copyOf(record, size);
                    }
                    if (in.available() == 0) {
                        idle.run();
                    }
                    limit = Math.max(0, in.read(buf));
                    pos = 0;
                    eof = limit == 0;
                    continue;
                }
                byte b = buf[pos++];
                if (size == record.length) {
                    record = Arrays.copyOf(record, size * 2);
                }
                record[size++] = b;
                if (b == last && size >= delim.length
                        && Arrays.equals(record, size - delim.length, size, delim, 0, delim.length)) {
                    return Arrays.copyOf(record, size - delim.length);
                }
            }
        }
    }
}
