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
 * all segment files, offset lag 0 (on a single node the high watermark is the log end), never a
 * future replica — and (v4+) the total and usable bytes of the volume it is on. Only partitions of
 * topics that still exist are listed; with a topic filter only the partitions asked for.
 *
 * <p>A directory gets KAFKA_STORAGE_ERROR when it is missing or not a writable directory, or when
 * it holds a partition the log manager could not load (offline); its healthy partitions are still
 * listed, so an operator sees both. Cordoning (v5) does not exist in Varve: never cordoned.
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
        Set<TopicPartition> offline = broker.replicaManager().logManager().offlinePartitions();
        Iterable<PartitionLog> logs = broker.replicaManager().logManager().allLogs();
        DescribeLogDirsResponseData response = new DescribeLogDirsResponseData().setErrorCode(Errors.NONE.code());
        for (File dir : broker.config().logDirs()) {
            response.results().add(describe(dir, logs, offline, wanted));
        }
        return CompletableFuture.completedFuture(new DescribeLogDirsResponse(response));
    }

    private DescribeLogDirsResult describe(File dir, Iterable<PartitionLog> logs, Set<TopicPartition> offline,
                                           Set<TopicPartition> wanted) {
        Path path = dir.toPath().toAbsolutePath().normalize();
        File absolute = path.toFile();
        boolean healthy = absolute.isDirectory() && absolute.canWrite();
        for (TopicPartition tp : offline) {
            if (new File(absolute, LogFileNames.dirName(tp)).exists()) {
                healthy = false;
            }
        }
        // Topic name -> partition index -> size, sorted for a stable answer.
        Map<String, Map<Integer, Long>> sizes = new TreeMap<>();
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
            sizes.computeIfAbsent(tp.topic(), t -> new TreeMap<>()).put(tp.partition(), size);
        }
        DescribeLogDirsResult result = new DescribeLogDirsResult()
                .setLogDir(absolute.getPath())
                .setErrorCode(healthy ? Errors.NONE.code() : Errors.KAFKA_STORAGE_ERROR.code())
                .setTotalBytes(absolute.exists() ? absolute.getTotalSpace() : DescribeLogDirsResponse.UNKNOWN_VOLUME_BYTES)
                .setUsableBytes(absolute.exists() ? absolute.getUsableSpace() : DescribeLogDirsResponse.UNKNOWN_VOLUME_BYTES)
                .setIsCordoned(false);
        sizes.forEach((topic, partitions) -> {
            List<DescribeLogDirsPartition> ps = new ArrayList<>();
            partitions.forEach((p, size) -> ps.add(new DescribeLogDirsPartition()
                    .setPartitionIndex(p).setPartitionSize(size).setOffsetLag(0).setIsFutureKey(false)));
            result.topics().add(new DescribeLogDirsTopic().setName(topic).setPartitions(ps));
        });
        return result;
    }

    private boolean exists(TopicPartition tp) {
        return broker.topics().get(tp.topic()).map(t -> tp.partition() < t.partitions()).orElse(false);
    }
}
