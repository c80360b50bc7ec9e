package dev.varve.cli.client;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLFactory;
import com.fasterxml.jackson.dataformat.yaml.YAMLGenerator;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InterruptException;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * {@code varve consume TOPIC...}: prints records from where {@code -O/--offset} says up to the partitions'
 * end offsets as they were when it started, or on and on with {@code --follow}; as a member of a group
 * with {@code -g}, committing what it printed. Ctrl-C (or interrupting the thread that runs it) stops it
 * cleanly: what was printed is committed and the consumer leaves its group.
 */
@Command(name = "consume", mixinStandardHelpOptions = true, sortOptions = false,
        description = {"Print records from topics: from -O/--offset (default: the start) to the end offsets the"
                + " partitions had when it started, or on and on with --follow.",
                "With -g GROUP it consumes as a member of that group, commits what it printed, and -O applies only"
                        + " to partitions the group has no offset for.",
                "-o/--output json prints one JSON object a line {topic, partition, offset, timestamp, key, value, headers};"
                        + " yaml, one document each."})
public final class ConsumeCommand implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    ClientOptions client;

    @Parameters(arity = "1..*", paramLabel = "TOPIC")
    List<String> topics;

    @Option(names = {"-O", "--offset"}, paramLabel = "WHERE", converter = StartConverter.class, defaultValue = "start",
            description = "Where to start: start (default), end, N (that offset), +N (N after the start), -N (N before the"
                    + " end), @TIMESTAMP_MS (the first record at or after that time). Per partition.")
    Start offset;

    @Option(names = {"-p", "--partition"}, paramLabel = "N", split = ",",
            description = "Only these partitions (repeatable or comma-separated; not with --group).")
    List<Integer> partitions = new ArrayList<>();

    @Option(names = {"-n", "--num"}, paramLabel = "N", description = "Stop after N records.")
    Long num;

    @Option(names = {"-f", "--follow"}, description = "Keep waiting for new records (until Ctrl-C or --num) instead of stopping at the end.")
    boolean follow;

    @Option(names = {"-g", "--group"}, paramLabel = "GROUP",
            description = "Consume as a member of this consumer group, committing the offsets of what was printed.")
    String group;

    @Option(names = "--isolation", paramLabel = "LEVEL", converter = IsolationConverter.class, defaultValue = "read_uncommitted",
            description = "read_uncommitted (default) or read_committed (skip aborted transactions; stop at the last stable offset).")
    String isolation;

    @Option(names = "--print", paramLabel = "FIELD[,FIELD...]", split = ",", hideParamSyntax = true, converter = FieldConverter.class,
            description = "In text output, the fields to print, tab-separated: topic, key, value (default), headers,"
                    + " partition, offset, timestamp.")
    List<Field> print = new ArrayList<>();

    @Option(names = "--decode", paramLabel = "ENC", converter = Bytes.Converter.class, defaultValue = "text",
            description = "How keys and values are shown: text (default, UTF-8; bytes that are not UTF-8 as \\xNN), base64 or hex.")
    Bytes decode = Bytes.TEXT;

    /** Where a partition's reading starts. */
    record Start(Kind kind, long n) {
        enum Kind { START, END, AT, AFTER_START, BEFORE_END, TIME }
    }

    enum Field { TOPIC, KEY, VALUE, HEADERS, PARTITION, OFFSET, TIMESTAMP }

    static final class StartConverter implements CommandLine.ITypeConverter<Start> {
        @Override
        public Start convert(String v) {
            String s = v.strip().toLowerCase(Locale.ROOT);
            switch (s) {
                case "start", "beginning", "earliest", "oldest":
                    return new Start(Start.Kind.START, 0);
                case "end", "latest", "newest":
                    return new Start(Start.Kind.END, 0);
                default:
                    break;
            }
            try {
                if (s.startsWith("@")) {
                    return new Start(Start.Kind.TIME, nonNegative(s.substring(1)));
                }
                if (s.startsWith("+")) {
                    return new Start(Start.Kind.AFTER_START, nonNegative(s.substring(1)));
                }
                if (s.startsWith("-")) {
                    return new Start(Start.Kind.BEFORE_END, nonNegative(s.substring(1)));
                }
                return new Start(Start.Kind.AT, nonNegative(s));
            } catch (NumberFormatException e) {
                throw new CommandLine.TypeConversionException("'" + v + "' is not an offset: use start, end, N, +N, -N or @TIMESTAMP_MS");
            }
        }

        private static long nonNegative(String s) {
            if (s.isEmpty() || !s.chars().allMatch(Character::isDigit)) {
                throw new NumberFormatException(s);
            }
            return Long.parseLong(s);
        }
    }

    static final class IsolationConverter implements CommandLine.ITypeConverter<String> {
        @Override
        public String convert(String v) {
            String s = v.toLowerCase(Locale.ROOT).replace('-', '_');
            if (!s.equals("read_committed") && !s.equals("read_uncommitted")) {
                throw new CommandLine.TypeConversionException("use --isolation read_committed or read_uncommitted, not '" + v + "'");
            }
            return s;
        }
    }

    static final class FieldConverter implements CommandLine.ITypeConverter<Field> {
        @Override
        public Field convert(String v) {
            try {
                return Field.valueOf(v.strip().toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                throw new CommandLine.TypeConversionException("unknown field '" + v
                        + "': use topic, key, value, headers, partition, offset or timestamp");
            }
        }
    }

    private static final ObjectMapper JSON_LINE = new ObjectMapper();
    private static final ObjectMapper YAML_DOC = new ObjectMapper(new YAMLFactory()
            .enable(YAMLGenerator.Feature.MINIMIZE_QUOTES)
            .enable(YAMLGenerator.Feature.ALWAYS_QUOTE_NUMBERS_AS_STRINGS));

    private volatile boolean stopRequested;
    private volatile KafkaConsumer<byte[], byte[]> consumer;
    /** Per partition, the offset after the last record printed and not yet committed (group mode). */
    private final Map<TopicPartition, OffsetAndMetadata> toCommit = new HashMap<>();
    private long printed;

    @Override
    public Integer call() throws Exception {
        if (group != null && !partitions.isEmpty()) {
            throw new CommandLine.ParameterException(spec.commandLine(),
                    "--partition and --group do not go together: a group assigns partitions to its members");
        }
        if (num != null && num < 1) {
            throw new CommandLine.ParameterException(spec.commandLine(), "--num must be at least 1");
        }
        if (print.isEmpty()) {
            print = List.of(Field.VALUE);
        }
        List<TopicPartition> all = topicPartitions();
        PrintWriter out = spec.commandLine().getOut();
        CountDownLatch closed = new CountDownLatch(1);
        Thread hook = new Thread(() -> {
            stopRequested = true;
            KafkaConsumer<byte[], byte[]> c = consumer;
            if (c != null) {
                c.wakeup();
            }
            try {
                closed.await(client.timeoutMs() + 5_000, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }, "varve-consume-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        boolean interrupted = false;
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(consumerProperties())) {
            consumer = c;
            try {
                consume(c, all, out);
            } catch (WakeupException | InterruptException e) {
                // Ctrl-C or an interrupted thread: stop cleanly below
                interrupted = e instanceof InterruptException;
            }
            out.flush();
            // the consumer cannot commit or leave its group while the thread is interrupted: clear it, restore it after
            interrupted |= Thread.interrupted();
            commit(c, true);
            c.close(CloseOptions.timeout(Duration.ofMillis(client.timeoutMs())));
        } finally {
            consumer = null;
            out.flush();
            closed.countDown();
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException shuttingDown) {
                // the hook is running: it waits for the latch above
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
        return 0;
    }

    /** The partitions asked for; a clear error for a topic or partition that does not exist. */
    private List<TopicPartition> topicPartitions() throws Exception {
        Map<String, TopicDescription> described;
        try (Admin admin = client.admin()) {
            Map<String, TopicDescription> d = new LinkedHashMap<>();
            var futures = admin.describeTopics(topics).topicNameValues();
            List<String> missing = new ArrayList<>();
            for (String t : new java.util.LinkedHashSet<>(topics)) {
                try {
                    d.put(t, futures.get(t).get());
                } catch (ExecutionException e) {
                    if (CliErrors.unwrap(e) instanceof UnknownTopicOrPartitionException) {
                        missing.add(t);
                    } else {
                        throw e;
                    }
                }
            }
            if (!missing.isEmpty()) {
                throw new CliErrors.Failure((missing.size() == 1 ? "topic '" + missing.get(0) + "' does not exist"
                        : "topics " + missing + " do not exist") + " (list topics with `varve topic list`)");
            }
            described = d;
        }
        List<TopicPartition> result = new ArrayList<>();
        for (TopicDescription td : described.values()) {
            int count = td.partitions().size();
            if (partitions.isEmpty()) {
                for (int p = 0; p < count; p++) {
                    result.add(new TopicPartition(td.name(), p));
                }
            } else {
                for (int p : new java.util.TreeSet<>(partitions)) {
                    if (p < 0 || p >= count) {
                        throw new CliErrors.Failure("topic '" + td.name() + "' has no partition " + p + ": it has " + count
                                + " (0-" + (count - 1) + ")");
                    }
                    result.add(new TopicPartition(td.name(), p));
                }
            }
        }
        return result;
    }

    private java.util.Properties consumerProperties() {
        long timeout = Math.min(Integer.MAX_VALUE, client.timeoutMs());
        Map<String, Object> p = new LinkedHashMap<>();
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, "varve-cli");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        p.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, "false");
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, offset.kind() == Start.Kind.END ? "latest" : "earliest");
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, Long.toString(timeout));
        p.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, Long.toString(timeout));
        if (group != null) {
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        java.util.Properties props = client.clientProperties(p);
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        if (group == null) {
            props.remove(ConsumerConfig.GROUP_ID_CONFIG); // a profile's group.id would make assign() commit nothing anyway
        }
        return props;
    }

    private void consume(KafkaConsumer<byte[], byte[]> c, List<TopicPartition> all, PrintWriter out) {
        Map<TopicPartition, Long> endAtStart = c.endOffsets(all);
        Set<TopicPartition> assigned = new HashSet<>();
        boolean[] everAssigned = {false};
        if (group == null) {
            c.assign(all);
            startPositions(c, all).forEach(c::seek);
            assigned.addAll(all);
            everAssigned[0] = true;
        } else {
            c.subscribe(new java.util.LinkedHashSet<>(topics), new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> revoked) {
                    commit(c, false);
                    assigned.removeAll(revoked);
                }

                @Override
                public void onPartitionsLost(Collection<TopicPartition> lost) {
                    lost.forEach(toCommit::remove);
                    assigned.removeAll(lost);
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> parts) {
                    everAssigned[0] = true;
                    assigned.addAll(parts);
                    if (parts.isEmpty()) {
                        return;
                    }
                    Map<TopicPartition, OffsetAndMetadata> committed = c.committed(new HashSet<>(parts));
                    List<TopicPartition> fresh = new ArrayList<>();
                    for (TopicPartition tp : parts) {
                        if (committed.get(tp) == null) {
                            fresh.add(tp);
                        }
                    }
                    if (!fresh.isEmpty()) {
                        startPositions(c, fresh).forEach(c::seek);
                    }
                }
            });
        }
        long lastProgress = System.nanoTime();
        Map<TopicPartition, Long> lastPositions = new HashMap<>();
        while (!stopRequested && !Thread.currentThread().isInterrupted()) {
            if (!follow && everAssigned[0] && reachedEnd(c, assigned, endAtStart, lastPositions)) {
                return;
            }
            ConsumerRecords<byte[], byte[]> records = c.poll(Duration.ofMillis(200));
            for (ConsumerRecord<byte[], byte[]> r : records) {
                print(out, r);
                printed++;
                lastProgress = System.nanoTime();
                if (group != null) {
                    toCommit.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                }
                if (num != null && printed >= num) {
                    return;
                }
            }
            out.flush();
            commit(c, false);
            if (!records.isEmpty() || progressed(c, assigned, lastPositions)) {
                lastProgress = System.nanoTime();
            } else if (!follow && System.nanoTime() - lastProgress > TimeUnit.MILLISECONDS.toNanos(client.timeoutMs())) {
                throw new CliErrors.Failure("no records arrived for " + client.timeoutSeconds() + " s although "
                        + (everAssigned[0] ? "the partitions had not reached the end offsets they had at the start"
                        : "the group had not given this consumer its partitions") + "; --timeout waits longer, --follow waits for ever");
            }
        }
    }

    /** Whether every partition this consumer reads has reached the end offset it had when the command started. */
    private static boolean reachedEnd(KafkaConsumer<byte[], byte[]> c, Set<TopicPartition> assigned,
                                      Map<TopicPartition, Long> endAtStart, Map<TopicPartition, Long> positions) {
        for (TopicPartition tp : assigned) {
            long pos = c.position(tp);
            positions.put(tp, pos);
            if (pos < endAtStart.getOrDefault(tp, 0L)) {
                return false;
            }
        }
        return true;
    }

    private static boolean progressed(KafkaConsumer<byte[], byte[]> c, Set<TopicPartition> assigned, Map<TopicPartition, Long> positions) {
        boolean moved = false;
        for (TopicPartition tp : assigned) {
            long pos = c.position(tp);
            Long before = positions.put(tp, pos);
            moved |= before == null || before != pos;
        }
        return moved;
    }

    /** Where each partition starts, by {@code -O}; offsets outside the partition's range are clamped into it. */
    private Map<TopicPartition, Long> startPositions(KafkaConsumer<byte[], byte[]> c, Collection<TopicPartition> tps) {
        Map<TopicPartition, Long> begin = c.beginningOffsets(tps);
        Map<TopicPartition, Long> end = c.endOffsets(tps);
        Map<TopicPartition, Long> result = new HashMap<>();
        Map<TopicPartition, OffsetAndTimestamp> byTime = null;
        if (offset.kind() == Start.Kind.TIME) {
            Map<TopicPartition, Long> query = new HashMap<>();
            tps.forEach(tp -> query.put(tp, offset.n()));
            byTime = c.offsetsForTimes(query);
        }
        for (TopicPartition tp : tps) {
            long b = begin.get(tp);
            long e = end.get(tp);
            long at = switch (offset.kind()) {
                case START -> b;
                case END -> e;
                case AT -> offset.n();
                case AFTER_START -> b + offset.n();
                case BEFORE_END -> e - offset.n();
                case TIME -> {
                    OffsetAndTimestamp found = byTime.get(tp);
                    yield found == null ? e : found.offset();
                }
            };
            result.put(tp, Math.max(b, Math.min(e, at)));
        }
        return result;
    }

    /** Commits what was printed (group mode); on the way out, a failure to commit is reported, not thrown. */
    private void commit(KafkaConsumer<byte[], byte[]> c, boolean last) {
        if (group == null || toCommit.isEmpty()) {
            return;
        }
        try {
            c.commitSync(new HashMap<>(toCommit));
            toCommit.clear();
        } catch (WakeupException e) {
            if (last) {
                c.commitSync(new HashMap<>(toCommit));
                toCommit.clear();
            } else {
                throw e;
            }
        } catch (RebalanceInProgressException e) {
            if (last) {
                spec.commandLine().getErr().println("error: could not commit the offsets of the last records printed:"
                        + " the group was rebalancing (" + e.getMessage() + ")");
            }
            // otherwise kept for the next commit, after the rebalance
        } catch (CommitFailedException e) {
            // the partitions went to another member, which starts from the group's last commit
            spec.commandLine().getErr().println("error: the offsets of some records printed were not committed: "
                    + CliErrors.explain(e, null));
            toCommit.clear();
        } catch (RuntimeException e) {
            if (!last) {
                throw e;
            }
            spec.commandLine().getErr().println("error: could not commit the offsets of the last records printed: "
                    + CliErrors.explain(e, null));
        }
    }

    private void print(PrintWriter out, ConsumerRecord<byte[], byte[]> r) {
        if (client.output == Output.TEXT) {
            StringBuilder sb = new StringBuilder();
            for (Field f : print) {
                if (sb.length() > 0) {
                    sb.append('\t');
                }
                switch (f) {
                    case TOPIC -> sb.append(r.topic());
                    case KEY -> sb.append(r.key() == null ? "" : decode.encode(r.key()));
                    case VALUE -> sb.append(r.value() == null ? "" : decode.encode(r.value()));
                    case PARTITION -> sb.append(r.partition());
                    case OFFSET -> sb.append(r.offset());
                    case TIMESTAMP -> sb.append(r.timestamp());
                    case HEADERS -> {
                        StringBuilder hs = new StringBuilder();
                        for (Header h : r.headers()) {
                            if (hs.length() > 0) {
                                hs.append(',');
                            }
                            hs.append(h.key()).append('=').append(h.value() == null ? "" : Bytes.utf8(h.value()));
                        }
                        sb.append(hs);
                    }
                }
            }
            out.println(sb);
            return;
        }
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("topic", r.topic());
        doc.put("partition", r.partition());
        doc.put("offset", r.offset());
        doc.put("timestamp", r.timestamp());
        doc.put("key", r.key() == null ? null : decode.encode(r.key()));
        doc.put("value", r.value() == null ? null : decode.encode(r.value()));
        List<Map<String, Object>> headers = new ArrayList<>();
        for (Header h : r.headers()) {
            Map<String, Object> one = new LinkedHashMap<>();
            one.put("key", h.key());
            one.put("value", h.value() == null ? null : Bytes.utf8(h.value()));
            headers.add(one);
        }
        doc.put("headers", headers);
        try {
            if (client.output == Output.JSON) {
                out.println(JSON_LINE.writeValueAsString(doc));
            } else {
                out.print(YAML_DOC.writeValueAsString(doc));
            }
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot serialise a record", e);
        }
    }
}
