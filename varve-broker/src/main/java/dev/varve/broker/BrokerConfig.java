package dev.varve.broker;

import dev.varve.storage.LogConfig;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.TopicConfig;

import java.io.File;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;

import static org.apache.kafka.common.config.ConfigDef.Importance.HIGH;
import static org.apache.kafka.common.config.ConfigDef.Importance.LOW;
import static org.apache.kafka.common.config.ConfigDef.Importance.MEDIUM;
import static org.apache.kafka.common.config.ConfigDef.Range.atLeast;
import static org.apache.kafka.common.config.ConfigDef.Type.BOOLEAN;
import static org.apache.kafka.common.config.ConfigDef.Type.INT;
import static org.apache.kafka.common.config.ConfigDef.Type.LIST;
import static org.apache.kafka.common.config.ConfigDef.Type.LONG;
import static org.apache.kafka.common.config.ConfigDef.Type.STRING;

/**
 * The broker's settings, read from a {@code server.properties}-style file under Kafka's key names.
 * Values are validated by Kafka's {@link ConfigDef} (an invalid value is refused with a message naming
 * the key); keys Varve does not know are reported so the caller can warn about them.
 *
 * <p>Broker-wide topic defaults use Kafka's {@code log.*} names ({@code log.segment.bytes},
 * {@code log.retention.ms}...) and become the {@link LogConfig} every topic starts from.
 */
public final class BrokerConfig {
    public static final String NODE_ID = "node.id";
    public static final String LISTENERS = "listeners";
    public static final String ADVERTISED_LISTENERS = "advertised.listeners";
    public static final String LOG_DIRS = "log.dirs";
    public static final String LOG_DIR = "log.dir";
    public static final String NUM_PARTITIONS = "num.partitions";
    public static final String DEFAULT_REPLICATION_FACTOR = "default.replication.factor";
    public static final String AUTO_CREATE_TOPICS = "auto.create.topics.enable";
    public static final String SOCKET_REQUEST_MAX_BYTES = "socket.request.max.bytes";
    public static final String QUEUED_MAX_REQUEST_BYTES = "queued.max.request.bytes";
    public static final String NUM_IO_THREADS = "num.io.threads";
    public static final String NUM_NETWORK_THREADS = "num.network.threads";
    public static final String MAX_CONNECTIONS = "max.connections";
    public static final String MAX_CONNECTIONS_PER_IP = "max.connections.per.ip";
    public static final String MAX_CONNECTIONS_PER_IP_OVERRIDES = "max.connections.per.ip.overrides";
    public static final String BROKER_RACK = "broker.rack";
    public static final String REPLICA_SELECTOR_CLASS = "replica.selector.class";
    public static final String MAX_CONNECTION_CREATION_RATE = "max.connection.creation.rate";
    public static final String QUOTA_WINDOW_NUM = "quota.window.num";
    public static final String MAX_REQUEST_PARTITION_SIZE_LIMIT = "max.request.partition.size.limit";
    public static final String ADMIN_LISTENER = "varve.admin.listener";
    public static final String ADMIN_CONSOLE_WRITES = "varve.admin.console.writes";
    public static final String QUOTA_WINDOW_SIZE_SECONDS = "quota.window.size.seconds";
    public static final String MIN_INSYNC_REPLICAS = "min.insync.replicas";
    public static final String DELETE_TOPIC_ENABLE = "delete.topic.enable";
    public static final String RETENTION_CHECK_INTERVAL_MS = "log.retention.check.interval.ms";
    public static final String FLUSH_SCHEDULER_INTERVAL_MS = "log.flush.scheduler.interval.ms";
    public static final String FLUSH_OFFSET_CHECKPOINT_INTERVAL_MS = "log.flush.offset.checkpoint.interval.ms";
    public static final String NUM_RECOVERY_THREADS_PER_DATA_DIR = "num.recovery.threads.per.data.dir";
    public static final String REPLICA_ALTER_LOG_DIRS_IO_MAX_BYTES_PER_SECOND = "replica.alter.log.dirs.io.max.bytes.per.second";
    public static final String FLUSH_START_OFFSET_CHECKPOINT_INTERVAL_MS = "log.flush.start.offset.checkpoint.interval.ms";
    public static final String HW_CHECKPOINT_INTERVAL_MS = "replica.high.watermark.checkpoint.interval.ms";
    public static final String PRODUCER_ID_EXPIRATION_MS = "producer.id.expiration.ms";
    public static final String LOG_STARTUP_VERIFY = "log.startup.verify";
    public static final String PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS = "producer.id.expiration.check.interval.ms";
    public static final String PROCESS_ROLES = "process.roles";
    public static final String CONTROLLER_QUORUM_VOTERS = "controller.quorum.voters";
    public static final String CONTROLLER_LISTENER_NAMES = "controller.listener.names";
    public static final String REPLICA_LAG_TIME_MAX_MS = "replica.lag.time.max.ms";
    public static final String MAX_INCREMENTAL_FETCH_SESSION_CACHE_SLOTS = "max.incremental.fetch.session.cache.slots";
    public static final String REPLICA_FETCH_VERIFY_SOURCE = "replica.fetch.verify.source";
    public static final String BROKER_SESSION_TIMEOUT_MS = "broker.session.timeout.ms";
    /** Varve's own: the active controller probes a silent broker's endpoints and fences it when nothing listens. */
    public static final String BROKER_LIVENESS_PROBE_ENABLE = "broker.liveness.probe.enable";
    public static final String BROKER_HEARTBEAT_INTERVAL_MS = "broker.heartbeat.interval.ms";
    public static final String UNCLEAN_LEADER_ELECTION_ENABLE = "unclean.leader.election.enable";
    public static final String CONTROLLER_QUORUM_ELECTION_TIMEOUT_MS = "controller.quorum.election.timeout.ms";
    /** Kafka's key: more Raft endpoints (host:port) through which a node finds the active controller. */
    public static final String CONTROLLER_QUORUM_BOOTSTRAP_SERVERS = "controller.quorum.bootstrap.servers";
    public static final String AUTO_LEADER_REBALANCE_ENABLE = "auto.leader.rebalance.enable";
    public static final String LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS = "leader.imbalance.check.interval.seconds";
    public static final String OFFSETS_TOPIC_NUM_PARTITIONS = "offsets.topic.num.partitions";
    public static final String OFFSETS_TOPIC_SEGMENT_BYTES = "offsets.topic.segment.bytes";
    public static final String OFFSETS_TOPIC_REPLICATION_FACTOR = "offsets.topic.replication.factor";
    public static final String TRANSACTION_STATE_LOG_NUM_PARTITIONS = "transaction.state.log.num.partitions";
    public static final String TRANSACTION_STATE_LOG_REPLICATION_FACTOR = "transaction.state.log.replication.factor";
    public static final String TRANSACTION_STATE_LOG_MIN_ISR = "transaction.state.log.min.isr";
    public static final String TRANSACTION_STATE_LOG_SEGMENT_BYTES = "transaction.state.log.segment.bytes";
    public static final String TRANSACTION_MAX_TIMEOUT_MS = "transaction.max.timeout.ms";
    public static final String TRANSACTION_PARTITION_VERIFICATION_ENABLE = "transaction.partition.verification.enable";
    public static final String TRANSACTION_VERSION = "transaction.version";
    public static final String TRANSACTIONAL_ID_EXPIRATION_MS = "transactional.id.expiration.ms";
    public static final String TRANSACTION_ABORT_TIMED_OUT_CLEANUP_INTERVAL_MS =
            "transaction.abort.timed.out.transaction.cleanup.interval.ms";
    public static final String TRANSACTION_REMOVE_EXPIRED_CLEANUP_INTERVAL_MS =
            "transaction.remove.expired.transaction.cleanup.interval.ms";
    public static final String OFFSETS_RETENTION_MINUTES = "offsets.retention.minutes";
    public static final String OFFSETS_RETENTION_CHECK_INTERVAL_MS = "offsets.retention.check.interval.ms";
    public static final String OFFSET_METADATA_MAX_BYTES = "offset.metadata.max.bytes";
    public static final String GROUP_INITIAL_REBALANCE_DELAY_MS = "group.initial.rebalance.delay.ms";
    public static final String GROUP_MIN_SESSION_TIMEOUT_MS = "group.min.session.timeout.ms";
    public static final String GROUP_MAX_SESSION_TIMEOUT_MS = "group.max.session.timeout.ms";
    public static final String GROUP_MAX_SIZE = "group.max.size";
    public static final String GROUP_COORDINATOR_REBALANCE_PROTOCOLS = "group.coordinator.rebalance.protocols";
    public static final String GROUP_CONSUMER_SESSION_TIMEOUT_MS = "group.consumer.session.timeout.ms";
    public static final String GROUP_CONSUMER_MIN_SESSION_TIMEOUT_MS = "group.consumer.min.session.timeout.ms";
    public static final String GROUP_CONSUMER_MAX_SESSION_TIMEOUT_MS = "group.consumer.max.session.timeout.ms";
    public static final String GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS = "group.consumer.heartbeat.interval.ms";
    public static final String GROUP_CONSUMER_MIN_HEARTBEAT_INTERVAL_MS = "group.consumer.min.heartbeat.interval.ms";
    public static final String GROUP_CONSUMER_MAX_HEARTBEAT_INTERVAL_MS = "group.consumer.max.heartbeat.interval.ms";
    public static final String GROUP_CONSUMER_MAX_SIZE = "group.consumer.max.size";
    public static final String GROUP_CONSUMER_ASSIGNORS = "group.consumer.assignors";
    public static final String GROUP_SHARE_SESSION_TIMEOUT_MS = "group.share.session.timeout.ms";
    public static final String GROUP_SHARE_MIN_SESSION_TIMEOUT_MS = "group.share.min.session.timeout.ms";
    public static final String GROUP_SHARE_MAX_SESSION_TIMEOUT_MS = "group.share.max.session.timeout.ms";
    public static final String GROUP_SHARE_HEARTBEAT_INTERVAL_MS = "group.share.heartbeat.interval.ms";
    public static final String GROUP_SHARE_MIN_HEARTBEAT_INTERVAL_MS = "group.share.min.heartbeat.interval.ms";
    public static final String GROUP_SHARE_MAX_HEARTBEAT_INTERVAL_MS = "group.share.max.heartbeat.interval.ms";
    public static final String GROUP_SHARE_MAX_SIZE = "group.share.max.size";
    // Share groups (KIP-932): the data path's settings, Kafka's names, defaults and ranges
    public static final String GROUP_SHARE_RECORD_LOCK_DURATION_MS = "group.share.record.lock.duration.ms";
    public static final String GROUP_SHARE_MIN_RECORD_LOCK_DURATION_MS = "group.share.min.record.lock.duration.ms";
    public static final String GROUP_SHARE_MAX_RECORD_LOCK_DURATION_MS = "group.share.max.record.lock.duration.ms";
    public static final String GROUP_SHARE_DELIVERY_COUNT_LIMIT = "group.share.delivery.count.limit";
    public static final String GROUP_SHARE_MIN_DELIVERY_COUNT_LIMIT = "group.share.min.delivery.count.limit";
    public static final String GROUP_SHARE_MAX_DELIVERY_COUNT_LIMIT = "group.share.max.delivery.count.limit";
    public static final String GROUP_SHARE_PARTITION_MAX_RECORD_LOCKS = "group.share.partition.max.record.locks";
    public static final String GROUP_SHARE_MAX_SHARE_SESSIONS = "group.share.max.share.sessions";
    public static final String SHARE_COORDINATOR_STATE_TOPIC_NUM_PARTITIONS = "share.coordinator.state.topic.num.partitions";
    public static final String SHARE_COORDINATOR_STATE_TOPIC_SEGMENT_BYTES = "share.coordinator.state.topic.segment.bytes";

    /** Broker key → topic key, for the broker-wide topic defaults. */
    static final Map<String, String> TOPIC_DEFAULTS;
    private static final Map<String, String> TOPIC_DEFAULTS_BASE = Map.ofEntries(
            Map.entry("log.segment.bytes", TopicConfig.SEGMENT_BYTES_CONFIG),
            Map.entry("log.roll.ms", TopicConfig.SEGMENT_MS_CONFIG),
            Map.entry("log.roll.jitter.ms", TopicConfig.SEGMENT_JITTER_MS_CONFIG),
            Map.entry("compression.type", TopicConfig.COMPRESSION_TYPE_CONFIG),
            Map.entry("log.index.size.max.bytes", TopicConfig.SEGMENT_INDEX_BYTES_CONFIG),
            Map.entry("log.index.interval.bytes", TopicConfig.INDEX_INTERVAL_BYTES_CONFIG),
            Map.entry("log.retention.ms", TopicConfig.RETENTION_MS_CONFIG),
            Map.entry("log.retention.bytes", TopicConfig.RETENTION_BYTES_CONFIG),
            Map.entry("log.retention.messages", LogConfig.RETENTION_MESSAGES_CONFIG),
            Map.entry("log.flush.interval.messages", TopicConfig.FLUSH_MESSAGES_INTERVAL_CONFIG),
            Map.entry("log.flush.interval.ms", TopicConfig.FLUSH_MS_CONFIG),
            Map.entry("message.max.bytes", TopicConfig.MAX_MESSAGE_BYTES_CONFIG),
            Map.entry("log.segment.delete.delay.ms", TopicConfig.FILE_DELETE_DELAY_MS_CONFIG),
            Map.entry("log.message.timestamp.type", TopicConfig.MESSAGE_TIMESTAMP_TYPE_CONFIG),
            Map.entry("log.message.timestamp.before.max.ms", TopicConfig.MESSAGE_TIMESTAMP_BEFORE_MAX_MS_CONFIG),
            Map.entry("log.message.timestamp.after.max.ms", TopicConfig.MESSAGE_TIMESTAMP_AFTER_MAX_MS_CONFIG));
    static {
        Map<String, String> all = new HashMap<>(TOPIC_DEFAULTS_BASE);
        all.putAll(dev.varve.storage.CleanerConfig.TOPIC_DEFAULT_KEYS); // log.cleanup.policy, log.cleaner.*...
        TOPIC_DEFAULTS = Map.copyOf(all);
    }

    /** Kafka's hour/minute variants of two defaults, lowest precedence first. */
    private static final List<String[]> TIME_ALIASES = List.of(
            new String[]{"log.roll.hours", "log.roll.ms", "3600000"},
            new String[]{"log.roll.jitter.hours", "log.roll.jitter.ms", "3600000"},
            new String[]{"log.retention.hours", "log.retention.ms", "3600000"},
            new String[]{"log.retention.minutes", "log.retention.ms", "60000"});

    private static final ConfigDef DEF = new ConfigDef()
            .define(NODE_ID, INT, 1, atLeast(0), HIGH, "This broker's id.")
            .define(LISTENERS, LIST, "PLAINTEXT://127.0.0.1:9092", HIGH, "Where to listen: NAME://host:port, comma-separated.")
            .define(ADVERTISED_LISTENERS, LIST, null, HIGH, "What clients are told to connect to; defaults to listeners.")
            .define(LOG_DIRS, LIST, null, HIGH, "Directories holding partition logs.")
            .define(LOG_DIR, STRING, "varve-data", HIGH, "The log directory when log.dirs is not set.")
            .define(NUM_PARTITIONS, INT, 1, atLeast(1), MEDIUM, "Partitions of an auto-created topic.")
            .define(DEFAULT_REPLICATION_FACTOR, INT, 1, atLeast(1), MEDIUM, "Replication factor of an auto-created topic.")
            .define(AUTO_CREATE_TOPICS, BOOLEAN, true, MEDIUM, "Create a topic when a client first asks for it.")
            .define(DELETE_TOPIC_ENABLE, BOOLEAN, true, MEDIUM, "Allow DeleteTopics.")
            .define(SOCKET_REQUEST_MAX_BYTES, INT, 100 * 1024 * 1024, atLeast(1024), MEDIUM, "Largest request frame accepted.")
            .define(QUEUED_MAX_REQUEST_BYTES, LONG, -1L, MEDIUM, "Memory requests may hold, frames and their "
                    + "decoding (a connection whose frame does not fit waits). -1: a quarter of the JVM's maximum heap, "
                    + "at least socket.request.max.bytes; otherwise at least socket.request.max.bytes.")
            .define(NUM_IO_THREADS, INT, 8, atLeast(1), MEDIUM, "Threads that handle requests.")
            .define(NUM_NETWORK_THREADS, INT, 3, atLeast(1), MEDIUM, "Threads that read and write sockets.")
            .define(MAX_CONNECTIONS, INT, Integer.MAX_VALUE, atLeast(0), MEDIUM,
                    "Connections the client listeners hold at most; at the limit new ones wait to be accepted.")
            .define(MAX_CONNECTIONS_PER_IP, INT, Integer.MAX_VALUE, atLeast(0), MEDIUM,
                    "Connections one address may hold at most; past it a new one is closed.")
            .define(MAX_CONNECTIONS_PER_IP_OVERRIDES, STRING, "", MEDIUM, "Per-address limits: host:count,...")
            .define(MAX_CONNECTION_CREATION_RATE, INT, Integer.MAX_VALUE, atLeast(0), MEDIUM,
                    "New connections per second the client listeners accept (the inter-broker listener is exempt); past it accepting pauses.")
            .define(ADMIN_LISTENER, STRING, "", MEDIUM, "HOST:PORT of the HTTP admin listener (/metrics, /health/live, "
                    + "/health/ready); empty: none. `varve server` binds 127.0.0.1:9644 unless told otherwise.")
            .define(ADMIN_CONSOLE_WRITES, STRING, "auto", org.apache.kafka.common.config.ConfigDef.ValidString.in("auto", "true", "false"),
                    HIGH, "Whether the web console (/ui on the admin listener, no login) may change the cluster (create and delete "
                    + "topics, change configs, reset offsets): auto (default) only when the admin listener is on a loopback "
                    + "address, true always, false never (the console is read-only).")
            .define(MAX_REQUEST_PARTITION_SIZE_LIMIT, INT, 2000, atLeast(1), LOW,
                    "Most partitions one DescribeTopicPartitions answer holds (the client's own limit applies if lower); the client pages through the rest.")
            .define(QUOTA_WINDOW_NUM, INT, 11, atLeast(2), LOW, "Samples a client quota's rate is measured over.")
            .define(QUOTA_WINDOW_SIZE_SECONDS, INT, 1, atLeast(1), LOW, "Length of one client quota sample.")
            .define(dev.varve.broker.security.AclAuthorizer.AUTHORIZER_CLASS_NAME, STRING, "", HIGH, "Empty: no authorizer (everything allowed, the ACL APIs answer SECURITY_DISABLED). "
                    + dev.varve.broker.security.AclAuthorizer.STANDARD_AUTHORIZER + ": Kafka's ACL authorizer, ACLs kept in the cluster metadata. Any other class is refused.")
            .define(dev.varve.broker.security.AclAuthorizer.SUPER_USERS, STRING, "", HIGH, "Principals allowed everything whatever the ACLs say, separated by semicolons (User:admin;User:broker).")
            .define(dev.varve.broker.security.AclAuthorizer.ALLOW_EVERYONE_IF_NO_ACL_FOUND, BOOLEAN, false, HIGH, "With an authorizer: whether a resource no ACL applies to is open to everyone (default: denied).")
            .define(BROKER_RACK, STRING, null, LOW, "This broker's rack.")
            .define(REPLICA_SELECTOR_CLASS, STRING, null, (name, value) -> {
                if (value != null) {
                    newReplicaSelector(String.valueOf(value));
                }
            }, MEDIUM, "KIP-392: a org.apache.kafka.common.replica.ReplicaSelector (Kafka's RackAwareReplicaSelector, or your own on the"
                    + " class path) that leaders ask which replica a consumer naming its client.rack should fetch from. Unset: consumers"
                    + " fetch from leaders.")
            .define(MIN_INSYNC_REPLICAS, INT, 1, atLeast(1), MEDIUM, "Default min.insync.replicas of topics.")
            .define(RETENTION_CHECK_INTERVAL_MS, LONG, 300_000L, atLeast(1), LOW, "How often retention runs.")
            .define(FLUSH_SCHEDULER_INTERVAL_MS, LONG, 1_000L, atLeast(1), LOW, "How often logs are checked against flush.ms.")
            .define(FLUSH_OFFSET_CHECKPOINT_INTERVAL_MS, LONG, 60_000L, atLeast(1), LOW, "How often recovery points are checkpointed.")
            .define(FLUSH_START_OFFSET_CHECKPOINT_INTERVAL_MS, LONG, 60_000L, atLeast(1), LOW, "How often log start offsets are checkpointed.")
            .define(HW_CHECKPOINT_INTERVAL_MS, LONG, 5_000L, atLeast(1), LOW, "How often high watermarks are checkpointed.")
            .define(LOG_STARTUP_VERIFY, STRING, "all", (name, value) -> {
                try {
                    dev.varve.storage.StartupVerification.parse(String.valueOf(value));
                } catch (IllegalArgumentException e) {
                    throw new ConfigException(name, value, "must be all, after-crash or unflushed");
                }
            }, MEDIUM, "Segments CRC-checked at start-up: all (every start), after-crash (after an unclean shutdown), unflushed (Kafka's: past the recovery point after an unclean shutdown).")
            .define(PRODUCER_ID_EXPIRATION_MS, LONG, 86_400_000L, atLeast(1), LOW, "Forget an idle idempotent producer after this long.")
            .define(PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS, LONG, 600_000L, atLeast(1), LOW, "How often expired producers are removed.")
            .define(PROCESS_ROLES, LIST, "", HIGH, "broker, controller, or both; empty: the single-node default without a quorum.")
            .define(CONTROLLER_QUORUM_VOTERS, LIST, "", HIGH, "The voters the metadata quorum is formed with: id@host:port,..."
                    + " (the port is that node's Raft endpoint). It names the cluster and stays the same on every node;"
                    + " later membership changes (kafka-metadata-quorum.sh add-controller/remove-controller) live in the Raft log.")
            .define(CONTROLLER_LISTENER_NAMES, LIST, "CONTROLLER", HIGH, "Listeners that are Raft endpoints, not Kafka-protocol listeners.")
            .define(REPLICA_LAG_TIME_MAX_MS, LONG, 30_000L, atLeast(1), HIGH, "A follower that has not caught up for this long leaves the ISR.")
            .define(MAX_INCREMENTAL_FETCH_SESSION_CACHE_SLOTS, INT, 1000, atLeast(0), MEDIUM, "Incremental fetch sessions (KIP-227) the broker keeps for consumers and followers; 0 turns them off.")
            .define(BROKER_SESSION_TIMEOUT_MS, INT, 9_000, atLeast(1), MEDIUM, "A broker silent this long is fenced by the controller.")
            .define(REPLICA_ALTER_LOG_DIRS_IO_MAX_BYTES_PER_SECOND, LONG, Long.MAX_VALUE, atLeast(1), MEDIUM,
                    "Bytes per second all replica moves between log directories (AlterReplicaLogDirs) copy together;"
                    + " static in Varve (a dynamic broker config in Kafka).")
            .define(NUM_RECOVERY_THREADS_PER_DATA_DIR, INT, dev.varve.storage.LogManagerConfig.DEFAULT_RECOVERY_THREADS_PER_DATA_DIR,
                    atLeast(1), MEDIUM, "Threads per log directory loading (and, after an unclean shutdown, recovering) its"
                    + " partitions at start-up.")
            .define(BROKER_LIVENESS_PROBE_ENABLE, BOOLEAN, true, MEDIUM, "Whether the active controller connects to the"
                    + " endpoints of a broker silent for a quarter of broker.session.timeout.ms and fences it at once when every"
                    + " one refuses the connection (its process is gone), instead of waiting out the session timeout.")
            .define(BROKER_HEARTBEAT_INTERVAL_MS, INT, 2_000, atLeast(1), MEDIUM, "How often a broker heartbeats to the controller.")
            .define(dev.varve.broker.cluster.ReplicaFetcherConfig.REPLICA_FETCH_MAX_BYTES, INT, 1024 * 1024, atLeast(1), MEDIUM, "Bytes a follower asks for per partition.")
            .define(dev.varve.broker.cluster.ReplicaFetcherConfig.REPLICA_FETCH_RESPONSE_MAX_BYTES, INT, 10 * 1024 * 1024, atLeast(1), MEDIUM, "Bytes a follower asks for per fetch.")
            .define(dev.varve.broker.cluster.ReplicaFetcherConfig.REPLICA_FETCH_WAIT_MAX_MS, INT, 500, atLeast(0), MEDIUM, "How long a follower's fetch may wait for data at the leader.")
            .define(dev.varve.broker.cluster.ReplicaFetcherConfig.REPLICA_FETCH_MIN_BYTES, INT, 1, atLeast(1), MEDIUM, "Bytes a follower's fetch waits for.")
            .define(dev.varve.broker.cluster.ReplicaFetcherConfig.REPLICA_FETCH_BACKOFF_MS, LONG, 1000L, atLeast(1), MEDIUM, "Pause after a failed follower fetch.")
            .define(dev.varve.broker.cluster.ReplicaFetcherConfig.REPLICA_SOCKET_TIMEOUT_MS, INT, 30_000, atLeast(1), MEDIUM, "Timeout of a follower's fetch request.")
            .define(dev.varve.broker.cluster.ReplicaFetcherConfig.NUM_REPLICA_FETCHERS, INT, 1, atLeast(1), MEDIUM, "Fetcher threads per leader broker.")
            .define(AUTO_LEADER_REBALANCE_ENABLE, BOOLEAN, true, MEDIUM, "The controller moves leadership back to each partition's preferred replica when it is in sync.")
            .define(LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS, LONG, 300L, atLeast(1), MEDIUM, "How often the controller runs preferred-leader elections.")
            .define(CONTROLLER_QUORUM_ELECTION_TIMEOUT_MS, LONG, 1_000L, atLeast(50), MEDIUM, "Raft election timeout of the metadata quorum (randomized between this and twice this).")
            .define(CONTROLLER_QUORUM_BOOTSTRAP_SERVERS, LIST, "", MEDIUM, "Raft endpoints (host:port,...) of controllers"
                    + " through which this node finds the active controller, besides those of controller.quorum.voters:"
                    + " list the current controllers here once the initial voters were replaced (add-controller/remove-controller).")
            .define(REPLICA_FETCH_VERIFY_SOURCE, BOOLEAN, true, MEDIUM, "A leader takes a fetch as a follower's only from an address of that follower's advertised hosts.")
            .define(UNCLEAN_LEADER_ELECTION_ENABLE, BOOLEAN, false, HIGH, "Default of the topic setting: elect a replica outside the ISR as a last resort (data loss).")
            .define(OFFSETS_TOPIC_NUM_PARTITIONS, INT, 50, atLeast(1), HIGH, "Partitions of __consumer_offsets (fixed once it exists).")
            .define(OFFSETS_TOPIC_SEGMENT_BYTES, INT, 100 * 1024 * 1024, atLeast(1), LOW, "Segment size of __consumer_offsets.")
            .define(OFFSETS_TOPIC_REPLICATION_FACTOR, INT, 3, atLeast(1), HIGH, "Replication factor of __consumer_offsets (capped at the brokers present).")
            .define(TRANSACTION_STATE_LOG_NUM_PARTITIONS, INT, 50, atLeast(1), HIGH, "Partitions of __transaction_state (fixed once it exists).")
            .define(TRANSACTION_STATE_LOG_REPLICATION_FACTOR, INT, 3, atLeast(1), HIGH, "Replication factor of __transaction_state (capped at the brokers present).")
            .define(TRANSACTION_STATE_LOG_MIN_ISR, INT, 2, atLeast(1), HIGH, "min.insync.replicas of __transaction_state.")
            .define(TRANSACTION_STATE_LOG_SEGMENT_BYTES, INT, 100 * 1024 * 1024, atLeast(1), HIGH, "Segment size of __transaction_state.")
            .define(TRANSACTION_MAX_TIMEOUT_MS, INT, 900_000, atLeast(1), HIGH, "Largest transaction.timeout.ms a producer may ask for (larger: INVALID_TRANSACTION_TIMEOUT).")
            .define(TRANSACTION_PARTITION_VERIFICATION_ENABLE, BOOLEAN, true, LOW, "Before a producer's first transactional write to a partition, its leader asks the transaction coordinator whether the partition is in the transaction (KIP-890 part 1); a write that is not is refused with INVALID_TXN_STATE.")
            .define(TRANSACTION_VERSION, INT, 2, org.apache.kafka.common.config.ConfigDef.Range.between(0, 2), HIGH, "The finalized level of Kafka's transaction.version feature this broker advertises: 2 lets Kafka 4 clients use transactions V2 (KIP-890 part 2: an epoch bump with every commit or abort, partitions added by Produce and TxnOffsetCommit, EndTxn v5); 0 or 1 keeps every client on the V1 protocol. Kafka finalizes it with kafka-features; every broker of a cluster must be given the same value.")
            .define(TRANSACTIONAL_ID_EXPIRATION_MS, INT, 604_800_000, atLeast(1), HIGH, "A transactional id with no transaction for this long is removed.")
            .define(TRANSACTION_ABORT_TIMED_OUT_CLEANUP_INTERVAL_MS, INT, 10_000, atLeast(1), LOW, "How often transactions past their timeout are aborted.")
            .define(TRANSACTION_REMOVE_EXPIRED_CLEANUP_INTERVAL_MS, INT, 3_600_000, atLeast(1), LOW, "How often expired transactional ids are removed.")
            .define(OFFSETS_RETENTION_MINUTES, INT, 7 * 24 * 60, atLeast(1), HIGH, "Keep an empty group's committed offsets this long.")
            .define(OFFSETS_RETENTION_CHECK_INTERVAL_MS, LONG, 600_000L, atLeast(1), HIGH, "How often expired offsets are removed.")
            .define(OFFSET_METADATA_MAX_BYTES, INT, 4096, atLeast(0), LOW, "Largest metadata string of a committed offset.")
            .define(GROUP_INITIAL_REBALANCE_DELAY_MS, INT, 3000, atLeast(0), MEDIUM, "How long the first rebalance of an empty group waits for more members.")
            .define(GROUP_MIN_SESSION_TIMEOUT_MS, INT, 6000, atLeast(1), MEDIUM, "Smallest session timeout a member may ask for.")
            .define(GROUP_MAX_SESSION_TIMEOUT_MS, INT, 1_800_000, atLeast(1), MEDIUM, "Largest session timeout a member may ask for.")
            .define(GROUP_MAX_SIZE, INT, Integer.MAX_VALUE, atLeast(1), MEDIUM, "Most members in one group.")
            .define(GROUP_COORDINATOR_REBALANCE_PROTOCOLS, LIST, "classic,consumer", HIGH,
                    "The group protocols offered: classic (JoinGroup/SyncGroup) and consumer (KIP-848 ConsumerGroupHeartbeat).")
            .define(GROUP_CONSUMER_SESSION_TIMEOUT_MS, INT, 45_000, atLeast(1), MEDIUM, "A consumer-protocol member's session timeout.")
            .define(GROUP_CONSUMER_MIN_SESSION_TIMEOUT_MS, INT, 45_000, atLeast(1), MEDIUM, "Smallest group.consumer.session.timeout.ms allowed.")
            .define(GROUP_CONSUMER_MAX_SESSION_TIMEOUT_MS, INT, 60_000, atLeast(1), MEDIUM, "Largest group.consumer.session.timeout.ms allowed.")
            .define(GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS, INT, 5_000, atLeast(1), MEDIUM, "How often consumer-protocol members heartbeat.")
            .define(GROUP_CONSUMER_MIN_HEARTBEAT_INTERVAL_MS, INT, 5_000, atLeast(1), MEDIUM, "Smallest group.consumer.heartbeat.interval.ms allowed.")
            .define(GROUP_CONSUMER_MAX_HEARTBEAT_INTERVAL_MS, INT, 15_000, atLeast(1), MEDIUM, "Largest group.consumer.heartbeat.interval.ms allowed.")
            .define(GROUP_CONSUMER_MAX_SIZE, INT, Integer.MAX_VALUE, atLeast(1), MEDIUM, "Most members in one consumer-protocol group.")
            .define(GROUP_SHARE_SESSION_TIMEOUT_MS, INT, 45_000, atLeast(1), MEDIUM, "A share group member's session timeout.")
            .define(GROUP_SHARE_MIN_SESSION_TIMEOUT_MS, INT, 45_000, atLeast(1), MEDIUM, "Smallest group.share.session.timeout.ms allowed.")
            .define(GROUP_SHARE_MAX_SESSION_TIMEOUT_MS, INT, 60_000, atLeast(1), MEDIUM, "Largest group.share.session.timeout.ms allowed.")
            .define(GROUP_SHARE_HEARTBEAT_INTERVAL_MS, INT, 5_000, atLeast(1), MEDIUM, "How often share group members heartbeat.")
            .define(GROUP_SHARE_MIN_HEARTBEAT_INTERVAL_MS, INT, 5_000, atLeast(1), MEDIUM, "Smallest group.share.heartbeat.interval.ms allowed.")
            .define(GROUP_SHARE_MAX_HEARTBEAT_INTERVAL_MS, INT, 15_000, atLeast(1), MEDIUM, "Largest group.share.heartbeat.interval.ms allowed.")
            .define(GROUP_SHARE_MAX_SIZE, INT, 200, atLeast(1), MEDIUM, "Most members in one share group.")
            .define(GROUP_CONSUMER_ASSIGNORS, LIST, "uniform,range", MEDIUM,
                    "Server-side assignors, the first the default: uniform and range (or Kafka's class names for them).")
            .define(GROUP_SHARE_RECORD_LOCK_DURATION_MS, INT, 30_000, org.apache.kafka.common.config.ConfigDef.Range.between(1_000, 3_600_000), MEDIUM,
                    "How long a share-group member holds the records it acquired before they are delivered again.")
            .define(GROUP_SHARE_MIN_RECORD_LOCK_DURATION_MS, INT, 15_000, org.apache.kafka.common.config.ConfigDef.Range.between(1_000, 30_000), MEDIUM,
                    "Smallest group.share.record.lock.duration.ms allowed.")
            .define(GROUP_SHARE_MAX_RECORD_LOCK_DURATION_MS, INT, 60_000, org.apache.kafka.common.config.ConfigDef.Range.between(30_000, 3_600_000), MEDIUM,
                    "Largest group.share.record.lock.duration.ms allowed.")
            .define(GROUP_SHARE_DELIVERY_COUNT_LIMIT, INT, 5, org.apache.kafka.common.config.ConfigDef.Range.between(2, 10), MEDIUM,
                    "Deliveries of a record to a share group before it is archived (never delivered again).")
            .define(GROUP_SHARE_MIN_DELIVERY_COUNT_LIMIT, INT, 2, org.apache.kafka.common.config.ConfigDef.Range.between(2, 5), MEDIUM,
                    "Smallest group.share.delivery.count.limit allowed.")
            .define(GROUP_SHARE_MAX_DELIVERY_COUNT_LIMIT, INT, 10, org.apache.kafka.common.config.ConfigDef.Range.between(5, 25), MEDIUM,
                    "Largest group.share.delivery.count.limit allowed.")
            .define(GROUP_SHARE_PARTITION_MAX_RECORD_LOCKS, INT, 2000, org.apache.kafka.common.config.ConfigDef.Range.between(100, 10_000), MEDIUM,
                    "Most records in flight (from the share-partition start offset) per share-partition.")
            .define(GROUP_SHARE_MAX_SHARE_SESSIONS, INT, 2000, atLeast(1), MEDIUM, "Most share sessions on this broker.")
            .define(SHARE_COORDINATOR_STATE_TOPIC_NUM_PARTITIONS, INT, 50, atLeast(1), MEDIUM,
                    "Partitions of __share_group_state (fixed when it is created).")
            .define(SHARE_COORDINATOR_STATE_TOPIC_SEGMENT_BYTES, INT, 104_857_600, atLeast(1), MEDIUM,
                    "Segment size of __share_group_state.");

    static {
        for (String key : dev.varve.storage.CleanerConfig.names()) {
            DEF.define(key, STRING, null, MEDIUM, "Log cleaner setting (see docs/configuration.md).");
        }
        for (String key : TOPIC_DEFAULTS.keySet()) {
            DEF.define(key, STRING, null, MEDIUM, "Broker-wide default of topic setting " + TOPIC_DEFAULTS.get(key) + ".");
        }
        for (String[] alias : TIME_ALIASES) {
            DEF.define(alias[0], LONG, null, LOW, "Kafka's coarser form of " + alias[1] + ".");
        }
    }

    private final Map<String, Object> values;
    private final dev.varve.storage.CleanerConfig cleanerConfig;
    private final LogConfig defaultLogConfig;
    private final Set<String> unknownKeys;
    private final Map<String, String> originals;

    private BrokerConfig(Map<String, Object> values, LogConfig defaultLogConfig, Set<String> unknownKeys,
                         Map<String, String> originals) {
        this.values = values;
        this.originals = originals;
        Map<String, Object> cleanerKeys = new HashMap<>();
        for (String key : dev.varve.storage.CleanerConfig.names()) {
            if (values.get(key) != null) {
                cleanerKeys.put(key, values.get(key));
            }
        }
        this.cleanerConfig = dev.varve.storage.CleanerConfig.fromMap(cleanerKeys);
        this.defaultLogConfig = defaultLogConfig;
        this.unknownKeys = unknownKeys;
    }

    /** The zero-config single-node broker: 127.0.0.1:9092, data in ./varve-data. */
    public static BrokerConfig defaults() {
        return from(new Properties());
    }

    /** Parses and validates; throws {@link ConfigException} naming the first bad key. */
    public static BrokerConfig from(Map<?, ?> props) {
        Map<String, String> raw = new HashMap<>();
        props.forEach((k, v) -> raw.put(String.valueOf(k).trim(), String.valueOf(v).trim()));
        Map<String, Object> parsed = DEF.parse(raw);
        Set<String> unknown = new TreeSet<>(raw.keySet());
        unknown.removeAll(DEF.names());
        unknown.removeIf(dev.varve.broker.security.ListenerSecurity::reads);
        unknown.removeIf(k -> LISTENER_LIMIT.matcher(k).matches());

        Map<String, Object> topicDefaults = new HashMap<>();
        for (String[] alias : TIME_ALIASES) {
            Object v = parsed.get(alias[0]);
            if (v != null && raw.get(alias[1]) == null) {
                topicDefaults.put(TOPIC_DEFAULTS.get(alias[1]), String.valueOf((Long) v * Long.parseLong(alias[2])));
            }
        }
        for (Map.Entry<String, String> e : TOPIC_DEFAULTS.entrySet()) {
            Object v = parsed.get(e.getKey());
            if (v != null) {
                topicDefaults.put(e.getValue(), v);
            }
        }
        LogConfig logConfig;
        try {
            logConfig = LogConfig.fromMap(topicDefaults);
        } catch (ConfigException e) {
            // Name the broker key the operator wrote, not the topic key it maps to.
            String brokerKey = TOPIC_DEFAULTS.entrySet().stream()
                    .filter(en -> e.getMessage() != null && e.getMessage().contains(en.getValue()))
                    .map(Map.Entry::getKey).findFirst().orElse("?");
            throw new ConfigException("Invalid value for " + brokerKey + ": " + e.getMessage());
        }
        BrokerConfig config = new BrokerConfig(parsed, logConfig, unknown, Map.copyOf(raw));
        config.validate();
        return config;
    }

    private void validate() {
        for (String p : rawList(GROUP_COORDINATOR_REBALANCE_PROTOCOLS)) {
            String name = p.trim().toLowerCase(java.util.Locale.ROOT);
            if (!name.equals("classic") && !name.equals("consumer") && !name.equals("share")) {
                throw new ConfigException(GROUP_COORDINATOR_REBALANCE_PROTOCOLS, p,
                        "Varve offers the classic, consumer and share protocols (streams groups are not implemented yet)");
            }
        }
        if (shareProtocolEnabled() && !processRoles().isEmpty()) {
            throw new ConfigException(GROUP_COORDINATOR_REBALANCE_PROTOCOLS, String.join(",", rawList(GROUP_COORDINATOR_REBALANCE_PROTOCOLS)),
                    "share groups run on a single node for now: their state does not yet move between brokers");
        }
        between(GROUP_SHARE_SESSION_TIMEOUT_MS, GROUP_SHARE_MIN_SESSION_TIMEOUT_MS, GROUP_SHARE_MAX_SESSION_TIMEOUT_MS);
        between(GROUP_SHARE_HEARTBEAT_INTERVAL_MS, GROUP_SHARE_MIN_HEARTBEAT_INTERVAL_MS, GROUP_SHARE_MAX_HEARTBEAT_INTERVAL_MS);
        between(GROUP_SHARE_RECORD_LOCK_DURATION_MS, GROUP_SHARE_MIN_RECORD_LOCK_DURATION_MS, GROUP_SHARE_MAX_RECORD_LOCK_DURATION_MS);
        between(GROUP_SHARE_DELIVERY_COUNT_LIMIT, GROUP_SHARE_MIN_DELIVERY_COUNT_LIMIT, GROUP_SHARE_MAX_DELIVERY_COUNT_LIMIT);
        if (rawList(GROUP_COORDINATOR_REBALANCE_PROTOCOLS).stream().noneMatch(p -> p.trim().equalsIgnoreCase("classic"))) {
            throw new ConfigException(GROUP_COORDINATOR_REBALANCE_PROTOCOLS, String.join(",", rawList(GROUP_COORDINATOR_REBALANCE_PROTOCOLS)),
                    "the classic protocol is required");
        }
        between(GROUP_CONSUMER_SESSION_TIMEOUT_MS, GROUP_CONSUMER_MIN_SESSION_TIMEOUT_MS, GROUP_CONSUMER_MAX_SESSION_TIMEOUT_MS);
        between(GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS, GROUP_CONSUMER_MIN_HEARTBEAT_INTERVAL_MS, GROUP_CONSUMER_MAX_HEARTBEAT_INTERVAL_MS);
        if (intValue(GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS) >= intValue(GROUP_CONSUMER_SESSION_TIMEOUT_MS)) {
            throw new ConfigException(GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS, intValue(GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS),
                    "must be less than " + GROUP_CONSUMER_SESSION_TIMEOUT_MS);
        }
        try {
            consumerGroupConfig();
        } catch (IllegalArgumentException e) {
            throw new ConfigException(GROUP_CONSUMER_ASSIGNORS, String.join(",", rawList(GROUP_CONSUMER_ASSIGNORS)), e.getMessage());
        }
        listeners();
        advertisedListeners();
        long queued = longValue(QUEUED_MAX_REQUEST_BYTES);
        if (queued != -1 && queued < socketRequestMaxBytes()) {
            // as Kafka: a frame the pool could never hold would wait forever
            throw new ConfigException(QUEUED_MAX_REQUEST_BYTES, queued, "must be -1 or at least socket.request.max.bytes ("
                    + socketRequestMaxBytes() + ")");
        }
        if (intValue(MAX_CONNECTIONS_PER_IP) == 0 && ((String) values.get(MAX_CONNECTIONS_PER_IP_OVERRIDES)).isBlank()) {
            // as Kafka: nobody could connect
            throw new ConfigException(MAX_CONNECTIONS_PER_IP, 0, "0 needs max.connections.per.ip.overrides (else nobody may connect)");
        }
        connectionLimitOverrides();
        listenerLimits(false);
        listenerLimits(true);
        authorizer(() -> dev.varve.metadata.Acls.EMPTY);
        if (logDirs().isEmpty()) {
            throw new ConfigException(LOG_DIRS, "", "at least one directory is needed");
        }
        Set<String> roles = processRoles();
        for (String role : roles) {
            if (!role.equals("broker") && !role.equals("controller")) {
                throw new ConfigException(PROCESS_ROLES, String.join(",", roles), "roles are broker and controller");
            }
        }
        Map<Integer, java.net.InetSocketAddress> voters = quorumVoters();
        quorumBootstrapServers();
        if (roles.isEmpty() != voters.isEmpty()) {
            throw new ConfigException(roles.isEmpty() ? PROCESS_ROLES : CONTROLLER_QUORUM_VOTERS, "",
                    "process.roles and controller.quorum.voters are set together (neither: the single-node default)");
        }
        if (roles.contains("controller")) {
            // a controller outside the voters starts as an observer of the quorum (KIP-853): it follows the
            // metadata log once the active controller has added it, and AddRaftVoter can make it a voter
            java.net.InetSocketAddress self = voters.get(nodeId());
            if (controllerListener().isEmpty()) {
                throw new ConfigException(LISTENERS, String.join(",", rawList(LISTENERS)),
                        "a controller needs a listener named in controller.listener.names " + controllerListenerNames());
            }
            if (self == null && (controllerListener().get().port() == 0 || controllerListener().get().host() == null
                    || controllerListener().get().host().isBlank())) {
                throw new ConfigException(LISTENERS, String.join(",", rawList(LISTENERS)), "controller " + nodeId()
                        + " is not among controller.quorum.voters, so its controller listener is its Raft endpoint for"
                        + " the other controllers: it needs a host and a fixed port");
            }
            if (self != null && controllerListener().get().port() != self.getPort()) {
                throw new ConfigException(LISTENERS, String.join(",", rawList(LISTENERS)), "the controller listener's port "
                        + controllerListener().get().port() + " differs from this node's voter port " + self.getPort());
            }
        }
        if (clientListeners().isEmpty()) {
            throw new ConfigException(LISTENERS, String.join(",", rawList(LISTENERS)), "no listener for clients");
        }
        for (Endpoint e : advertisedListeners()) {
            if (controllerListenerNames().contains(e.listenerName()) && !roles.isEmpty()) {
                throw new ConfigException(ADVERTISED_LISTENERS, e.listenerName(), "controller listeners are not advertised");
            }
        }
        try (dev.varve.broker.security.ListenerSecurity security = listenerSecurity()) {
            // refuses what it cannot serve (a mechanism not supported, an unreadable keystore) now
            String p = security.interBrokerProtocol().name;
            if (clustered() && p.startsWith("SASL")) {
                // brokers authenticate to each other with the listener's own JAAS section (Kafka's way)
                String mechanism = security.interBrokerMechanism();
                if (!security.listener(security.interBrokerListener()).sasl().mechanisms().contains(mechanism)) {
                    throw new ConfigException(dev.varve.broker.security.ListenerSecurity.INTER_BROKER_MECHANISM, mechanism,
                            "brokers reach each other on " + security.interBrokerListener() + " with " + mechanism
                                    + ", which that listener does not enable (sasl.enabled.mechanisms)");
                }
            }
        }
    }

    @SuppressWarnings("unchecked")
    private List<String> rawList(String key) {
        Object v = values.get(key);
        return v == null ? List.of() : (List<String>) v;
    }

    /** {@code process.roles}: empty for the single-node default (no quorum). */
    public Set<String> processRoles() {
        Set<String> roles = new TreeSet<>();
        rawList(PROCESS_ROLES).forEach(r -> roles.add(r.trim()));
        roles.remove("");
        return roles;
    }

    /** Whether this node is part of a cluster with a metadata quorum (process.roles set). */
    public boolean clustered() {
        return !processRoles().isEmpty();
    }

    /** {@code controller.quorum.voters} parsed: node id to Raft endpoint, in the order given. */
    public Map<Integer, java.net.InetSocketAddress> quorumVoters() {
        Map<Integer, java.net.InetSocketAddress> out = new java.util.LinkedHashMap<>();
        for (String v : rawList(CONTROLLER_QUORUM_VOTERS)) {
            String entry = v.trim();
            if (entry.isEmpty()) {
                continue;
            }
            int at = entry.indexOf('@');
            int colon = entry.lastIndexOf(':');
            if (at <= 0 || colon <= at + 1) {
                throw new ConfigException(CONTROLLER_QUORUM_VOTERS, entry, "expected id@host:port");
            }
            int id;
            int port;
            try {
                id = Integer.parseInt(entry.substring(0, at));
                port = Integer.parseInt(entry.substring(colon + 1));
            } catch (NumberFormatException e) {
                throw new ConfigException(CONTROLLER_QUORUM_VOTERS, entry, "the id and the port must be numbers");
            }
            if (id < 0 || port <= 0 || port > 65535) {
                throw new ConfigException(CONTROLLER_QUORUM_VOTERS, entry, "the id must be >= 0 and the port 1-65535");
            }
            String host = entry.substring(at + 1, colon);
            if (host.startsWith("[") && host.endsWith("]")) {
                host = host.substring(1, host.length() - 1);
            }
            if (out.put(id, java.net.InetSocketAddress.createUnresolved(host, port)) != null) {
                throw new ConfigException(CONTROLLER_QUORUM_VOTERS, entry, "voter " + id + " is listed twice");
            }
        }
        return out;
    }

    /** {@code controller.quorum.bootstrap.servers} parsed: host:port entries, in the order given. */
    public List<java.net.InetSocketAddress> quorumBootstrapServers() {
        List<java.net.InetSocketAddress> out = new ArrayList<>();
        for (String v : rawList(CONTROLLER_QUORUM_BOOTSTRAP_SERVERS)) {
            String entry = v.trim();
            if (entry.isEmpty()) {
                continue;
            }
            int colon = entry.lastIndexOf(':');
            if (colon <= 0 || colon == entry.length() - 1) {
                throw new ConfigException(CONTROLLER_QUORUM_BOOTSTRAP_SERVERS, entry, "expected host:port");
            }
            String host = entry.substring(0, colon);
            if (host.startsWith("[") && host.endsWith("]")) {
                host = host.substring(1, host.length() - 1);
            }
            int port;
            try {
                port = Integer.parseInt(entry.substring(colon + 1));
            } catch (NumberFormatException e) {
                throw new ConfigException(CONTROLLER_QUORUM_BOOTSTRAP_SERVERS, entry, "the port must be a number");
            }
            if (host.isEmpty() || port <= 0 || port > 65535) {
                throw new ConfigException(CONTROLLER_QUORUM_BOOTSTRAP_SERVERS, entry, "expected host:port with a port of 1-65535");
            }
            out.add(java.net.InetSocketAddress.createUnresolved(host, port));
        }
        return out;
    }

    public List<String> controllerListenerNames() {
        return rawList(CONTROLLER_LISTENER_NAMES).stream().map(String::trim)
                .map(n -> org.apache.kafka.common.network.ListenerName.normalised(n).value()).toList();
    }

    /** The listener this node's Raft server binds, when it is a controller. */
    public java.util.Optional<Endpoint> controllerListener() {
        List<String> names = controllerListenerNames();
        return listeners().stream().filter(e -> names.contains(e.listenerName())).findFirst();
    }

    /**
     * The security of the Kafka-protocol listeners ({@code listener.security.protocol.map}, {@code ssl.*},
     * {@code inter.broker.listener.name}...), with its TLS engine factories set up: the caller closes it.
     */
    public dev.varve.broker.security.ListenerSecurity listenerSecurity() {
        List<String> names = clientListeners().stream().map(Endpoint::listenerName).toList();
        return new dev.varve.broker.security.ListenerSecurity(originals, names,
                clustered() ? controllerListenerNames() : List.of(), processRoles().contains("controller"));
    }

    /** The Kafka-protocol listeners: all listeners but the controller ones (in a cluster). */
    public List<Endpoint> clientListeners() {
        if (!clustered()) {
            return listeners();
        }
        List<String> names = controllerListenerNames();
        return listeners().stream().filter(e -> !names.contains(e.listenerName())).toList();
    }

    public int nodeId() {
        return (Integer) values.get(NODE_ID);
    }

    /** The listeners to bind. */
    public List<Endpoint> listeners() {
        @SuppressWarnings("unchecked")
        List<String> list = (List<String>) values.get(LISTENERS);
        return Endpoint.parseAll(LISTENERS, list);
    }

    /** What clients are told; the listeners themselves when not set. */
    public List<Endpoint> advertisedListeners() {
        @SuppressWarnings("unchecked")
        List<String> list = (List<String>) values.get(ADVERTISED_LISTENERS);
        return list == null ? clientListeners() : Endpoint.parseAll(ADVERTISED_LISTENERS, list);
    }

    public List<File> logDirs() {
        @SuppressWarnings("unchecked")
        List<String> dirs = (List<String>) values.get(LOG_DIRS);
        List<File> out = new ArrayList<>();
        if (dirs == null) {
            out.add(new File((String) values.get(LOG_DIR)));
        } else {
            dirs.forEach(d -> out.add(new File(d)));
        }
        return out;
    }

    public int numPartitions() {
        return (Integer) values.get(NUM_PARTITIONS);
    }

    public int defaultReplicationFactor() {
        return (Integer) values.get(DEFAULT_REPLICATION_FACTOR);
    }

    /** The authorizer the settings ask for, deciding over {@code acls} ({@link dev.varve.broker.security.AclAuthorizer#NONE} without one). */
    public dev.varve.broker.security.AclAuthorizer authorizer(java.util.function.Supplier<dev.varve.metadata.Acls> acls) {
        return dev.varve.broker.security.AclAuthorizer.configure((String) values.get(dev.varve.broker.security.AclAuthorizer.AUTHORIZER_CLASS_NAME),
                (String) values.get(dev.varve.broker.security.AclAuthorizer.SUPER_USERS),
                (Boolean) values.get(dev.varve.broker.security.AclAuthorizer.ALLOW_EVERYONE_IF_NO_ACL_FOUND), acls);
    }

    public boolean autoCreateTopics() {
        return (Boolean) values.get(AUTO_CREATE_TOPICS);
    }

    public boolean transactionPartitionVerificationEnable() {
        return (Boolean) values.get(TRANSACTION_PARTITION_VERIFICATION_ENABLE);
    }

    public boolean deleteTopicEnable() {
        return (Boolean) values.get(DELETE_TOPIC_ENABLE);
    }

    /** {@code broker.liveness.probe.enable}: fence a silent broker once nothing listens on its endpoints. */
    public boolean livenessProbeEnable() {
        return (Boolean) values.get(BROKER_LIVENESS_PROBE_ENABLE);
    }

    /** The request memory pool's size in bytes (-1 resolved: a quarter of the maximum heap, at least one frame). */
    public long queuedMaxRequestBytes() {
        long v = longValue(QUEUED_MAX_REQUEST_BYTES);
        return v == -1 ? Math.max(socketRequestMaxBytes(), Runtime.getRuntime().maxMemory() / 4) : v;
    }

    public int socketRequestMaxBytes() {
        return (Integer) values.get(SOCKET_REQUEST_MAX_BYTES);
    }

    public int numIoThreads() {
        return (Integer) values.get(NUM_IO_THREADS);
    }

    /** {@code max.connections.per.ip.overrides} ("host-or-ip:count,..."), parsed, host names resolved. */
    /** A listener's own max.connections or max.connection.creation.rate ({@code listener.name.<name>.<key>}). */
    private static final java.util.regex.Pattern LISTENER_LIMIT =
            java.util.regex.Pattern.compile("listener\\.name\\.([^.]+)\\.(max\\.connections|max\\.connection\\.creation\\.rate)");

    /**
     * The listeners' own {@code max.connections} ({@code rate} false) or {@code max.connection.creation.rate}
     * ({@code rate} true), by listener name as {@code listeners} spells it.
     */
    public Map<String, Integer> listenerLimits(boolean rate) {
        Map<String, Integer> out = new HashMap<>();
        for (Map.Entry<String, String> e : originals.entrySet()) {
            java.util.regex.Matcher m = LISTENER_LIMIT.matcher(e.getKey());
            if (!m.matches() || m.group(2).equals("max.connection.creation.rate") != rate) {
                continue;
            }
            String listener = null;
            for (Endpoint ep : listeners()) {
                if (ep.listenerName().equalsIgnoreCase(m.group(1))) {
                    listener = ep.listenerName();
                }
            }
            if (listener == null) {
                throw new ConfigException(e.getKey(), e.getValue(), "no listener is named " + m.group(1));
            }
            int value;
            try {
                value = Integer.parseInt(e.getValue().trim());
            } catch (NumberFormatException ex) {
                throw new ConfigException(e.getKey(), e.getValue(), "not a whole number");
            }
            if (value < 0) {
                throw new ConfigException(e.getKey(), e.getValue(), "must be at least 0");
            }
            out.put(listener, value);
        }
        return out;
    }

    public Map<java.net.InetAddress, Integer> connectionLimitOverrides() {
        String key = MAX_CONNECTIONS_PER_IP_OVERRIDES;
        String value = (String) values.get(key);
        Map<java.net.InetAddress, Integer> out = new HashMap<>();
        if (value == null || value.isBlank()) {
            return out;
        }
        for (String entry : value.split(",")) {
            String e = entry.trim();
            int colon = e.lastIndexOf(':');
            if (colon <= 0) {
                throw new ConfigException(key, value, "expected host:count entries, got " + e);
            }
            try {
                int count = Integer.parseInt(e.substring(colon + 1).trim());
                if (count < 0) {
                    throw new ConfigException(key, value, "a count must be >= 0: " + e);
                }
                out.put(java.net.InetAddress.getByName(e.substring(0, colon).trim()), count);
            } catch (NumberFormatException ex) {
                throw new ConfigException(key, value, "the count is not a number in " + e);
            } catch (java.net.UnknownHostException ex) {
                throw new ConfigException(key, value, "unknown host in " + e);
            }
        }
        return out;
    }

    public int numNetworkThreads() {
        return (Integer) values.get(NUM_NETWORK_THREADS);
    }

    /**
     * A new instance of the named {@code replica.selector.class}.
     *
     * @throws ConfigException when it cannot be loaded, is not a ReplicaSelector or cannot be made
     */
    public static org.apache.kafka.common.replica.ReplicaSelector newReplicaSelector(String className) {
        try {
            Class<?> c = Class.forName(className.trim(), true, BrokerConfig.class.getClassLoader());
            if (!org.apache.kafka.common.replica.ReplicaSelector.class.isAssignableFrom(c)) {
                throw new ConfigException(REPLICA_SELECTOR_CLASS, className, "not an org.apache.kafka.common.replica.ReplicaSelector");
            }
            return (org.apache.kafka.common.replica.ReplicaSelector) c.getDeclaredConstructor().newInstance();
        } catch (ReflectiveOperationException | LinkageError e) {
            throw new ConfigException(REPLICA_SELECTOR_CLASS, className, "cannot be loaded and made: " + e);
        }
    }

    /** The configured replica selector (configured with this broker's settings), or null. */
    public org.apache.kafka.common.replica.ReplicaSelector replicaSelector() {
        String name = (String) values.get(REPLICA_SELECTOR_CLASS);
        if (name == null || name.isBlank()) {
            return null;
        }
        org.apache.kafka.common.replica.ReplicaSelector selector = newReplicaSelector(name);
        selector.configure(originals); // the settings as given, as Kafka configures it
        return selector;
    }

    /** The {@code varve.admin.console.writes} setting: auto, true or false. */
    public String adminConsoleWrites() {
        return (String) values.get(ADMIN_CONSOLE_WRITES);
    }

    public String rack() {
        return (String) values.get(BROKER_RACK);
    }

    public int minInsyncReplicas() {
        return (Integer) values.get(MIN_INSYNC_REPLICAS);
    }

    /** The follower fetchers' settings ({@code replica.fetch.*}, {@code num.replica.fetchers}). */
    public dev.varve.broker.cluster.ReplicaFetcherConfig replicaFetcherConfig() {
        return new dev.varve.broker.cluster.ReplicaFetcherConfig(
                intValue(dev.varve.broker.cluster.ReplicaFetcherConfig.REPLICA_FETCH_MAX_BYTES),
                intValue(dev.varve.broker.cluster.ReplicaFetcherConfig.REPLICA_FETCH_RESPONSE_MAX_BYTES),
                intValue(dev.varve.broker.cluster.ReplicaFetcherConfig.REPLICA_FETCH_WAIT_MAX_MS),
                intValue(dev.varve.broker.cluster.ReplicaFetcherConfig.REPLICA_FETCH_MIN_BYTES),
                longValue(dev.varve.broker.cluster.ReplicaFetcherConfig.REPLICA_FETCH_BACKOFF_MS),
                intValue(dev.varve.broker.cluster.ReplicaFetcherConfig.REPLICA_SOCKET_TIMEOUT_MS),
                intValue(dev.varve.broker.cluster.ReplicaFetcherConfig.NUM_REPLICA_FETCHERS));
    }

    /** How often the active controller moves leaders back to preferred replicas; 0 when disabled. */
    public long preferredElectionIntervalMs() {
        return (Boolean) values.get(AUTO_LEADER_REBALANCE_ENABLE)
                ? longValue(LEADER_IMBALANCE_CHECK_INTERVAL_SECONDS) * 1000 : 0;
    }

    public boolean replicaFetchVerifySource() {
        return (Boolean) values.get(REPLICA_FETCH_VERIFY_SOURCE);
    }

    /** Which segments are verified when the logs load ({@code log.startup.verify}). */
    public dev.varve.storage.StartupVerification startupVerification() {
        return dev.varve.storage.StartupVerification.parse((String) values.get(LOG_STARTUP_VERIFY));
    }

    public boolean uncleanLeaderElectionEnable() {
        return (Boolean) values.get(UNCLEAN_LEADER_ELECTION_ENABLE);
    }

    public int intValue(String key) {
        return (Integer) values.get(key);
    }

    /** The HTTP admin listener's HOST:PORT, or empty for none. */
    public String adminListener() {
        Object v = values.get(ADMIN_LISTENER);
        return v == null ? "" : ((String) v).trim();
    }

    /** Whether the KIP-848 consumer protocol is offered ({@code group.coordinator.rebalance.protocols}). */
    public boolean consumerProtocolEnabled() {
        return rawList(GROUP_COORDINATOR_REBALANCE_PROTOCOLS).stream().anyMatch(p -> p.trim().equalsIgnoreCase("consumer"));
    }

    /** Whether KIP-932 share groups are offered ({@code group.coordinator.rebalance.protocols} lists {@code share}). */
    public boolean shareProtocolEnabled() {
        return rawList(GROUP_COORDINATOR_REBALANCE_PROTOCOLS).stream().anyMatch(p -> p.trim().equalsIgnoreCase("share"));
    }

    /** The KIP-932 share protocol's membership settings. */
    public dev.varve.broker.group.ShareGroupLogic.Config shareGroupConfig() {
        return new dev.varve.broker.group.ShareGroupLogic.Config(intValue(GROUP_SHARE_SESSION_TIMEOUT_MS),
                intValue(GROUP_SHARE_HEARTBEAT_INTERVAL_MS), intValue(GROUP_SHARE_MAX_SIZE));
    }

    /** The share-group data path's settings. */
    public dev.varve.broker.share.SharePartitionManager.Config shareConfig() {
        return new dev.varve.broker.share.SharePartitionManager.Config(new dev.varve.broker.share.SharePartition.Config(
                intValue(GROUP_SHARE_PARTITION_MAX_RECORD_LOCKS), intValue(GROUP_SHARE_DELIVERY_COUNT_LIMIT),
                intValue(GROUP_SHARE_RECORD_LOCK_DURATION_MS)), intValue(GROUP_SHARE_MAX_SHARE_SESSIONS));
    }

    /** What group config overrides (KIP-848/932) fall back to and must stay within. */
    public dev.varve.broker.group.GroupConfigs.Broker groupConfigDefaults() {
        return new dev.varve.broker.group.GroupConfigs.Broker(consumerProtocolEnabled(), shareProtocolEnabled(),
                intValue(GROUP_CONSUMER_SESSION_TIMEOUT_MS), intValue(GROUP_CONSUMER_MIN_SESSION_TIMEOUT_MS),
                intValue(GROUP_CONSUMER_MAX_SESSION_TIMEOUT_MS), intValue(GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS),
                intValue(GROUP_CONSUMER_MIN_HEARTBEAT_INTERVAL_MS), intValue(GROUP_CONSUMER_MAX_HEARTBEAT_INTERVAL_MS),
                intValue(GROUP_SHARE_SESSION_TIMEOUT_MS), intValue(GROUP_SHARE_MIN_SESSION_TIMEOUT_MS),
                intValue(GROUP_SHARE_MAX_SESSION_TIMEOUT_MS), intValue(GROUP_SHARE_HEARTBEAT_INTERVAL_MS),
                intValue(GROUP_SHARE_MIN_HEARTBEAT_INTERVAL_MS), intValue(GROUP_SHARE_MAX_HEARTBEAT_INTERVAL_MS),
                intValue(GROUP_SHARE_RECORD_LOCK_DURATION_MS), intValue(GROUP_SHARE_MIN_RECORD_LOCK_DURATION_MS),
                intValue(GROUP_SHARE_MAX_RECORD_LOCK_DURATION_MS));
    }

    /** The KIP-848 consumer protocol's settings. */
    public dev.varve.broker.group.ConsumerGroupLogic.Config consumerGroupConfig() {
        List<String> assignors = new ArrayList<>();
        for (String a : rawList(GROUP_CONSUMER_ASSIGNORS)) {
            String name = a.trim();
            assignors.add(switch (name) {
                case "org.apache.kafka.coordinator.group.assignor.UniformAssignor" -> "uniform";
                case "org.apache.kafka.coordinator.group.assignor.RangeAssignor" -> "range";
                default -> name;
            });
        }
        return new dev.varve.broker.group.ConsumerGroupLogic.Config(intValue(GROUP_CONSUMER_SESSION_TIMEOUT_MS),
                intValue(GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS), intValue(GROUP_CONSUMER_MAX_SIZE), assignors);
    }

    /** The group coordinator's settings. */
    public dev.varve.broker.group.GroupConfig groupConfig() {
        return new dev.varve.broker.group.GroupConfig(intValue(OFFSETS_TOPIC_NUM_PARTITIONS),
                intValue(OFFSETS_TOPIC_SEGMENT_BYTES), intValue(GROUP_INITIAL_REBALANCE_DELAY_MS),
                intValue(GROUP_MIN_SESSION_TIMEOUT_MS), intValue(GROUP_MAX_SESSION_TIMEOUT_MS), intValue(GROUP_MAX_SIZE),
                intValue(OFFSETS_RETENTION_MINUTES) * 60_000L, longValue(OFFSETS_RETENTION_CHECK_INTERVAL_MS),
                intValue(OFFSET_METADATA_MAX_BYTES));
    }

    private void between(String key, String minKey, String maxKey) {
        int v = intValue(key);
        if (v < intValue(minKey) || v > intValue(maxKey)) {
            throw new ConfigException(key, v, "must be between " + minKey + " (" + intValue(minKey) + ") and " + maxKey
                    + " (" + intValue(maxKey) + ")");
        }
    }

    /** A numeric setting (INT or LONG) as a long. */
    public long longValue(String key) {
        return ((Number) values.get(key)).longValue();
    }

    /** The log cleaner's settings ({@code log.cleaner.*}). */
    public dev.varve.storage.CleanerConfig cleanerConfig() {
        return cleanerConfig;
    }

    /** The settings every topic starts from (broker-wide {@code log.*} defaults applied). */
    public LogConfig defaultLogConfig() {
        return defaultLogConfig;
    }

    /** Keys in the file that Varve does not know (the caller warns). */
    public Set<String> unknownKeys() {
        return unknownKeys;
    }

    /** A listener: name, host and port. */
    public record Endpoint(String listenerName, String host, int port) {
        static List<Endpoint> parseAll(String key, List<String> values) {
            List<Endpoint> out = new ArrayList<>();
            for (String v : values) {
                out.add(parse(key, v));
            }
            if (out.isEmpty()) {
                throw new ConfigException(key, values, "at least one listener is needed");
            }
            return out;
        }

        static Endpoint parse(String key, String value) {
            int sep = value.indexOf("://");
            int colon = value.lastIndexOf(':');
            if (sep <= 0 || colon <= sep + 2) {
                throw new ConfigException(key, value, "expected NAME://host:port");
            }
            String host = value.substring(sep + 3, colon);
            if (host.startsWith("[") && host.endsWith("]")) {
                host = host.substring(1, host.length() - 1);
            }
            int port;
            try {
                port = Integer.parseInt(value.substring(colon + 1));
            } catch (NumberFormatException e) {
                throw new ConfigException(key, value, "the port is not a number");
            }
            if (port < 0 || port > 65535) {
                throw new ConfigException(key, value, "the port must be 0-65535");
            }
            // listener names are case-insensitive, as in Kafka (PLAINTEXT and plaintext are one listener)
            String name = org.apache.kafka.common.network.ListenerName.normalised(value.substring(0, sep)).value();
            return new Endpoint(name, host.isEmpty() ? "0.0.0.0" : host, port);
        }
    }
}
