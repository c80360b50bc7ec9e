package dev.varve.broker.api;

import dev.varve.broker.BrokerContext;
import dev.varve.storage.LogFileNames;
import dev.varve.storage.LogManager;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.errors.KafkaStorageException;
import org.apache.kafka.common.message.AlterReplicaLogDirsRequestData;
import org.apache.kafka.common.message.AlterReplicaLogDirsRequestData.AlterReplicaLogDir;
import org.apache.kafka.common.message.AlterReplicaLogDirsRequestData.AlterReplicaLogDirTopic;
import org.apache.kafka.common.message.AlterReplicaLogDirsResponseData;
import org.apache.kafka.common.message.AlterReplicaLogDirsResponseData.AlterReplicaLogDirPartitionResult;
import org.apache.kafka.common.message.AlterReplicaLogDirsResponseData.AlterReplicaLogDirTopicResult;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.AlterReplicaLogDirsRequest;
import org.apache.kafka.common.requests.AlterReplicaLogDirsResponse;
import org.apache.kafka.common.requests.RequestContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.File;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * AlterReplicaLogDirs (KIP-113): moves this broker's replica of each named partition to the named log
 * directory while it keeps serving ({@link LogManager#alterLogDir}; the copy runs on the storage
 * scheduler, never on a request thread). Answered once each move has started; DescribeLogDirs shows
 * the copy as a future replica until it is swapped in. Kafka's checks and error codes, per partition,
 * in Kafka's order:
 *
 * <ul>
 *   <li>INVALID_TOPIC_EXCEPTION: the copy's directory name ({@code <topic>-<partition>.<32 hex>-future})
 *       would pass 255 bytes;</li>
 *   <li>LOG_DIR_NOT_FOUND: the path is not one of {@code log.dirs} (as an absolute path, exactly as
 *       DescribeLogDirs reports it);</li>
 *   <li>KAFKA_STORAGE_ERROR: that directory failed, or the partition is offline, or the copy cannot be
 *       created there;</li>
 *   <li>UNKNOWN_TOPIC_OR_PARTITION: no such topic, or no such partition of it;</li>
 *   <li>REPLICA_NOT_AVAILABLE (cluster): the partition has no replica on this broker yet; the directory is
 *       remembered, and the replica is created there if it is assigned here later (what
 *       {@code kafka-reassign-partitions} relies on when a reassignment adds this broker).</li>
 * </ul>
 *
 * A single node creates a partition's log where it is asked to if it does not exist yet. A partition
 * named twice takes the last directory named, and is answered once. Moving a replica to the directory
 * it is in succeeds and stops a move to elsewhere.
 */
public final class AlterReplicaLogDirsHandler extends AllVersionsHandler {
    private static final Logger LOG = LoggerFactory.getLogger(AlterReplicaLogDirsHandler.class);
    /** The longest file name most file systems take (Kafka's limit for the future directory, KAFKA-4893). */
    private static final int MAX_DIR_NAME_BYTES = 255;
    /** ".<32 hex digits>-future" after {@code <topic>-<partition>}. */
    private static final int FUTURE_SUFFIX_BYTES = 1 + 32 + LogFileNames.FUTURE_DIR_SUFFIX.length();

    private final BrokerContext broker;

    public AlterReplicaLogDirsHandler(BrokerContext broker) {
        super(ApiKeys.ALTER_REPLICA_LOG_DIRS);
        this.broker = broker;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        AlterReplicaLogDirsRequestData data = ((AlterReplicaLogDirsRequest) request).data();
        Map<TopicPartition, String> wanted = new LinkedHashMap<>();
        for (AlterReplicaLogDir dir : data.dirs()) {
            for (AlterReplicaLogDirTopic topic : dir.topics()) {
                for (int partition : topic.partitions()) {
                    TopicPartition tp = new TopicPartition(topic.name(), partition);
                    wanted.remove(tp); // the last directory named wins, in the answer's order too
                    wanted.put(tp, dir.path());
                }
            }
        }
        Map<String, AlterReplicaLogDirTopicResult> results = new LinkedHashMap<>();
        wanted.forEach((tp, path) -> results.computeIfAbsent(tp.topic(), t -> new AlterReplicaLogDirTopicResult().setTopicName(t))
                .partitions().add(new AlterReplicaLogDirPartitionResult().setPartitionIndex(tp.partition())
                        .setErrorCode(alter(tp, path).code())));
        return CompletableFuture.completedFuture(new AlterReplicaLogDirsResponse(
                new AlterReplicaLogDirsResponseData().setResults(new ArrayList<>(results.values()))));
    }

    private Errors alter(TopicPartition tp, String path) {
        LogManager logs = broker.replicaManager().logManager();
        try {
            if (LogFileNames.dirName(tp).getBytes(java.nio.charset.StandardCharsets.UTF_8).length + FUTURE_SUFFIX_BYTES
                    > MAX_DIR_NAME_BYTES) {
                return Errors.INVALID_TOPIC_EXCEPTION;
            }
            Optional<File> dir = logs.logDir(path);
            if (dir.isEmpty()) {
                return Errors.LOG_DIR_NOT_FOUND;
            }
            if (logs.failedLogDirs().contains(dir.get().getAbsolutePath()) || !dir.get().isDirectory()) {
                return Errors.KAFKA_STORAGE_ERROR;
            }
            if (!exists(tp)) {
                return Errors.UNKNOWN_TOPIC_OR_PARTITION;
            }
            LogManager.AlterLogDirResult result = logs.alterLogDir(tp, dir.get());
            if (result != LogManager.AlterLogDirResult.NO_LOG) {
                return Errors.NONE;
            }
            if (broker.replicaManager().cluster() != null) {
                return Errors.REPLICA_NOT_AVAILABLE; // created in that directory if it is assigned here
            }
            broker.replicaManager().log(tp); // a single node holds every partition: create it there now
            return Errors.NONE;
        } catch (KafkaStorageException e) {
            LOG.warn("Cannot move {} to {}: {}", tp, path, e.getMessage());
            return Errors.KAFKA_STORAGE_ERROR;
        } catch (ApiException e) {
            return Errors.forException(e);
        } catch (RuntimeException e) {
            LOG.error("Moving {} to {} failed", tp, path, e);
            return Errors.forException(e);
        }
    }

    private boolean exists(TopicPartition tp) {
        return tp.partition() >= 0
                && broker.topics().get(tp.topic()).map(t -> tp.partition() < t.partitions()).orElse(false);
    }
}
