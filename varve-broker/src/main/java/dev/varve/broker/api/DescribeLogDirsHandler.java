package dev.varve.broker.api;

import dev.varve.broker.BrokerContext;
import dev.varve.storage.LogFileNames;
import dev.varve.storage.PartitionLog;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.message.DescribeLogDirsRequestData;
import org.apache.kafka.common.message.DescribeLogDirsRequestData.DescribableLogDirTopic;
import org.apache.kafka.common.message.DescribeLogDirsResponseData;
import org.apache.kafka.common.message.DescribeLogDirsResponseData.DescribeLogDirsPartition;
import org.apache.kafka.common.message.DescribeLogDirsResponseData.DescribeLogDirsResult;
import org.apache.kafka.common.message.DescribeLogDirsResponseData.DescribeLogDirsTopic;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.DescribeLogDirsRequest;
import org.apache.kafka.common.requests.DescribeLogDirsResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.io.File;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;

/**
 * DescribeLogDirs: every configured log directory (absolute path) with its partitions — size of
 * all segment files, offset lag 0 (Kafka's max(high watermark - log end, 0), which is 0 on a leader
 * and a follower alike) — and (v4+) the total and usable bytes of the volume it is on. A replica
 * moving to another directory (AlterReplicaLogDirs) is also listed there as a future replica
 * ({@code isFuture}) with its copy's size and how many offsets the copy is behind the replica, as
 * Kafka does; {@code Admin.describeReplicaLogDirs} is built from this. Only partitions of topics that
 * still exist are listed; with a topic filter only the partitions asked for.
 *
 * <p>A directory gets KAFKA_STORAGE_ERROR when it is missing or not a writable directory, when a
 * write to it failed since start-up (the log manager's failed directories), or when it holds a
 * partition the log manager could not load (offline); its healthy partitions are still listed, so
 * an operator sees both. Cordoning (v5) does not exist in Varve: never cordoned.
 */
public final class DescribeLogDirsHandler extends AllVersionsHandler {
    private final BrokerContext broker;

    public DescribeLogDirsHandler(BrokerContext broker) {
        super(ApiKeys.DESCRIBE_LOG_DIRS);
        this.broker = broker;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        DescribeLogDirsRequestData data = ((DescribeLogDirsRequest) request).data();
        Set<TopicPartition> wanted = null;
        if (data.topics() != null) {
            wanted = new HashSet<>();
            for (DescribableLogDirTopic t : data.topics()) {
                for (int p : t.partitions()) {
                    wanted.add(new TopicPartition(t.topic(), p));
                }
            }
        }
        dev.varve.storage.LogManager logManager = broker.replicaManager().logManager();
        Set<TopicPartition> offline = logManager.offlinePartitions();
        Iterable<PartitionLog> logs = logManager.allLogs();
        List<dev.varve.storage.LogManager.FutureReplica> futures = logManager.futureReplicas();
        Set<String> failed = logManager.failedLogDirs();
        DescribeLogDirsResponseData response = new DescribeLogDirsResponseData().setErrorCode(Errors.NONE.code());
        for (File dir : broker.config().logDirs()) {
            response.results().add(describe(dir, logs, futures, failed, offline, wanted));
        }
        return CompletableFuture.completedFuture(new DescribeLogDirsResponse(response));
    }

    private DescribeLogDirsResult describe(File dir, Iterable<PartitionLog> logs,
                                           List<dev.varve.storage.LogManager.FutureReplica> futures, Set<String> failed,
                                           Set<TopicPartition> offline, Set<TopicPartition> wanted) {
        Path path = dir.toPath().toAbsolutePath().normalize();
        File absolute = path.toFile();
        boolean healthy = absolute.isDirectory() && absolute.canWrite() && !failed.contains(dir.getAbsolutePath());
        for (TopicPartition tp : offline) {
            if (new File(absolute, LogFileNames.dirName(tp)).exists()) {
                healthy = false;
            }
        }
        // Topic name -> partition index -> its entries (the replica, a future replica), sorted for a stable answer.
        Map<String, Map<Integer, List<DescribeLogDirsPartition>>> entries = new TreeMap<>();
        for (PartitionLog log : logs) {
            TopicPartition tp = log.topicPartition();
            if (!log.dir().getParentFile().toPath().toAbsolutePath().normalize().equals(path)
                    || (wanted != null && !wanted.contains(tp))
                    || !exists(tp)) {
                continue;
            }
            long size;
            try {
                size = log.size();
            } catch (RuntimeException e) {
                // Deleted or closed meanwhile.
                continue;
            }
            entries.computeIfAbsent(tp.topic(), t -> new TreeMap<>()).computeIfAbsent(tp.partition(), p -> new ArrayList<>())
                    .add(new DescribeLogDirsPartition().setPartitionIndex(tp.partition()).setPartitionSize(size)
                            .setOffsetLag(0).setIsFutureKey(false));
        }
        for (dev.varve.storage.LogManager.FutureReplica f : futures) {
            TopicPartition tp = f.topicPartition();
            if (!f.logDir().toPath().toAbsolutePath().normalize().equals(path)
                    || (wanted != null && !wanted.contains(tp))
                    || !exists(tp)) {
                continue;
            }
            entries.computeIfAbsent(tp.topic(), t -> new TreeMap<>()).computeIfAbsent(tp.partition(), p -> new ArrayList<>())
                    .add(new DescribeLogDirsPartition().setPartitionIndex(tp.partition()).setPartitionSize(f.sizeInBytes())
                            .setOffsetLag(f.offsetLag()).setIsFutureKey(true));
        }
        DescribeLogDirsResult result = new DescribeLogDirsResult()
                .setLogDir(absolute.getPath())
                .setErrorCode(healthy ? Errors.NONE.code() : Errors.KAFKA_STORAGE_ERROR.code())
                .setTotalBytes(absolute.exists() ? absolute.getTotalSpace() : DescribeLogDirsResponse.UNKNOWN_VOLUME_BYTES)
                .setUsableBytes(absolute.exists() ? absolute.getUsableSpace() : DescribeLogDirsResponse.UNKNOWN_VOLUME_BYTES)
                .setIsCordoned(false);
        entries.forEach((topic, partitions) -> {
            List<DescribeLogDirsPartition> ps = new ArrayList<>();
            partitions.values().forEach(ps::addAll);
            result.topics().add(new DescribeLogDirsTopic().setName(topic).setPartitions(ps));
        });
        return result;
    }

    private boolean exists(TopicPartition tp) {
        return broker.topics().get(tp.topic()).map(t -> tp.partition() < t.partitions()).orElse(false);
    }
}
