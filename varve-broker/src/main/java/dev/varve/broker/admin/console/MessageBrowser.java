package dev.varve.broker.admin.console;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import static dev.varve.broker.admin.console.Console.JSON;

/**
 * The message browser: one partition read with a stock consumer (no group, nothing committed) from an offset,
 * a timestamp, the beginning or the newest records, keys, values and headers decoded as text, JSON or hex and
 * optionally filtered by a substring. Bounded: at most {@value #MAX_LIMIT} records answered, at most
 * {@value #MAX_SCAN} read while filtering, {@value #MAX_SHOWN_BYTES} bytes of each key or value shown, about
 * {@value #MAX_RESPONSE_BYTES} bytes in all, and {@value #DEADLINE_MS} ms of reading.
 */
final class MessageBrowser {
    static final int MAX_LIMIT = 500;
    static final int MAX_SCAN = 20_000;
    static final int MAX_SHOWN_BYTES = 64 * 1024;
    static final int MAX_RESPONSE_BYTES = 8 * 1024 * 1024;
    static final int MAX_FILTER_CHARS = 1000;
    static final long DEADLINE_MS = 5_000;
    private static final AtomicLong CLIENTS = new AtomicLong();
    /** JSON only if the whole value is one JSON document ("12 monkeys" is text, not 12). */
    private static final com.fasterxml.jackson.databind.ObjectReader STRICT =
            JSON.reader().with(com.fasterxml.jackson.databind.DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
    /** Indented, {@code "name": value} as JavaScript's JSON.stringify(v, null, 2) writes it. */
    private static final com.fasterxml.jackson.databind.ObjectWriter PRETTY = JSON.writer(
            new com.fasterxml.jackson.core.util.DefaultPrettyPrinter().withSeparators(
                    com.fasterxml.jackson.core.util.Separators.createDefaultInstance()
                            .withObjectFieldValueSpacing(com.fasterxml.jackson.core.util.Separators.Spacing.AFTER)));

    private final String bootstrap;

    MessageBrowser(String bootstrap) {
        this.bootstrap = bootstrap;
    }

    JsonNode browse(String topic, List<TopicPartitionInfo> partitions, Console.Request r) {
        int partition = r.intParam("partition", 0, 0, Integer.MAX_VALUE);
        if (partition >= partitions.size()) {
            throw ApiException.badRequest(topic + " has partitions 0.." + (partitions.size() - 1) + ", not " + partition);
        }
        Long offset = r.longParam("offset", 0, Long.MAX_VALUE);
        Long timestamp = r.longParam("timestamp", 0, Long.MAX_VALUE);
        String from = r.choice("from", "earliest", "earliest", "newest");
        if (offset != null && timestamp != null) {
            throw ApiException.badRequest("give offset or timestamp, not both");
        }
        int limit = r.intParam("limit", 50, 1, MAX_LIMIT);
        String decode = r.choice("decode", "text", "text", "json", "hex");
        String filter = r.query.getOrDefault("filter", "");
        if (filter.length() > MAX_FILTER_CHARS) {
            throw ApiException.badRequest("the filter has more than " + MAX_FILTER_CHARS + " characters");
        }
        String needle = filter.toLowerCase(Locale.ROOT);

        TopicPartition tp = new TopicPartition(topic, partition);
        Map<String, Object> cfg = new HashMap<>();
        cfg.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cfg.put(ConsumerConfig.CLIENT_ID_CONFIG, "varve-console-browser-" + CLIENTS.incrementAndGet());
        cfg.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        cfg.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, MAX_LIMIT);
        cfg.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, 4 * 1024 * 1024);
        cfg.put(ConsumerConfig.FETCH_MAX_BYTES_CONFIG, 8 * 1024 * 1024);
        cfg.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, ConsoleApi.TIMEOUT_MS);
        cfg.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, ConsoleApi.TIMEOUT_MS);
        cfg.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none");
        cfg.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 100);
        Duration timeout = Duration.ofMillis(ConsoleApi.TIMEOUT_MS);
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(cfg, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.assign(List.of(tp));
            long begin = consumer.beginningOffsets(List.of(tp), timeout).get(tp);
            long end = consumer.endOffsets(List.of(tp), timeout).get(tp);
            long start;
            if (offset != null) {
                start = Math.max(begin, Math.min(end, offset));
            } else if (timestamp != null) {
                OffsetAndTimestamp found = consumer.offsetsForTimes(Map.of(tp, timestamp), timeout).get(tp);
                start = found == null ? end : found.offset();
            } else if ("newest".equals(from)) {
                start = Math.max(begin, end - limit);
            } else {
                start = begin;
            }
            ObjectNode out = JSON.createObjectNode();
            out.put("topic", topic);
            out.put("partition", partition);
            out.put("startOffset", begin);
            out.put("endOffset", end);
            out.put("from", start);
            out.put("decode", decode);
            ArrayNode messages = out.putArray("messages");
            long next = start;
            long scanned = 0;
            long bytes = 0;
            boolean stoppedEarly = false;
            consumer.seek(tp, start);
            long deadline = System.currentTimeMillis() + DEADLINE_MS;
            read:
            while (next < end && messages.size() < limit) {
                if (System.currentTimeMillis() >= deadline || scanned >= MAX_SCAN || bytes >= MAX_RESPONSE_BYTES) {
                    stoppedEarly = true;
                    break;
                }
                for (ConsumerRecord<byte[], byte[]> rec : consumer.poll(Duration.ofMillis(250))) {
                    if (messages.size() >= limit || rec.offset() >= end || scanned >= MAX_SCAN || bytes >= MAX_RESPONSE_BYTES) {
                        break read;
                    }
                    scanned++;
                    next = rec.offset() + 1;
                    ObjectNode m = message(rec, decode);
                    if (!needle.isEmpty() && !matches(m, needle)) {
                        continue;
                    }
                    bytes += 200 + m.path("key").asText("").length() + m.path("value").asText("").length();
                    for (JsonNode h : m.path("headers")) { // headers count too: a record may carry many large ones
                        bytes += 20 + h.path("key").asText("").length() + h.path("value").asText("").length();
                    }
                    messages.add(m);
                }
                if (consumer.position(tp) > next) {
                    next = consumer.position(tp); // past transaction markers or aborted records
                }
            }
            out.put("nextOffset", Math.min(next, end));
            out.put("scanned", scanned);
            out.put("more", next < end);
            out.put("stoppedEarly", stoppedEarly);
            return out;
        } catch (KafkaException e) {
            throw ConsoleApi.kafkaError(e, "read " + tp);
        }
    }

    private static ObjectNode message(ConsumerRecord<byte[], byte[]> rec, String decode) {
        ObjectNode m = JSON.createObjectNode();
        m.put("partition", rec.partition());
        m.put("offset", rec.offset());
        m.put("timestamp", rec.timestamp());
        m.put("timestampType", rec.timestampType().name);
        put(m, "key", rec.key(), decode);
        put(m, "value", rec.value(), decode);
        ArrayNode headers = m.putArray("headers");
        for (Header h : rec.headers()) {
            ObjectNode o = headers.addObject();
            o.put("key", h.key());
            Decoded d = decode(h.value(), "json".equals(decode) ? "text" : decode);
            o.put("value", d == null ? null : d.text);
        }
        return m;
    }

    /** {@code name}: the decoded text (null for a null key or value), {@code nameAs}: how it was decoded, {@code nameSize}: its bytes. */
    private static void put(ObjectNode m, String name, byte[] bytes, String decode) {
        Decoded d = decode(bytes, decode);
        m.put(name, d == null ? null : d.text);
        m.put(name + "As", d == null ? null : d.as);
        m.put(name + "Size", bytes == null ? -1 : bytes.length);
        if (d != null && d.truncated) {
            m.put(name + "Truncated", true);
        }
    }

    record Decoded(String text, String as, boolean truncated) {
    }

    /**
     * text: UTF-8 (malformed bytes replaced); json: pretty-printed when the bytes are JSON, else as text; hex:
     * two lower-case digits a byte. At most {@value #MAX_SHOWN_BYTES} bytes are decoded.
     */
    static Decoded decode(byte[] bytes, String how) {
        if (bytes == null) {
            return null;
        }
        boolean truncated = bytes.length > MAX_SHOWN_BYTES;
        byte[] shown = truncated ? java.util.Arrays.copyOf(bytes, MAX_SHOWN_BYTES) : bytes;
        switch (how) {
            case "hex":
                return new Decoded(HexFormat.of().formatHex(shown), "hex", truncated);
            case "json":
                if (!truncated) {
                    try {
                        JsonNode tree = STRICT.readTree(shown);
                        if (tree != null && !tree.isMissingNode()) {
                            return new Decoded(PRETTY.writeValueAsString(tree), "json", false);
                        }
                    } catch (java.io.IOException e) {
                        // not JSON: shown as text
                    }
                }
                return new Decoded(text(shown), "text", truncated);
            default:
                return new Decoded(text(shown), "text", truncated);
        }
    }

    private static String text(byte[] bytes) {
        return StandardCharsets.UTF_8.decode(ByteBuffer.wrap(bytes)).toString();
    }

    /** Whether the key, value or a header (name or value) contains {@code needle} (lower case), ignoring case. */
    private static boolean matches(ObjectNode m, String needle) {
        if (contains(m.get("key"), needle) || contains(m.get("value"), needle)) {
            return true;
        }
        for (JsonNode h : m.get("headers")) {
            if (contains(h.get("key"), needle) || contains(h.get("value"), needle)) {
                return true;
            }
        }
        return false;
    }

    private static boolean contains(JsonNode v, String needle) {
        return v != null && !v.isNull() && v.asText().toLowerCase(Locale.ROOT).contains(needle);
    }
}
