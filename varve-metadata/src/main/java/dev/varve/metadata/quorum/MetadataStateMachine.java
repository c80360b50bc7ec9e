package dev.varve.metadata.quorum;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.apache.ratis.io.MD5Hash;
import org.apache.ratis.proto.RaftProtos.LogEntryProto;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftGroupMemberId;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.server.DivisionInfo;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.protocol.TermIndex;
import org.apache.ratis.server.raftlog.RaftLog;
import org.apache.ratis.server.storage.FileInfo;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.statemachine.TransactionContext;
import org.apache.ratis.statemachine.impl.BaseStateMachine;
import org.apache.ratis.statemachine.impl.SimpleStateMachineStorage;
import org.apache.ratis.statemachine.impl.SingleFileSnapshotInfo;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.apache.ratis.util.LifeCycle;
import org.apache.ratis.util.MD5FileUtil;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Ratis state machine behind {@link MetadataQuorum}: it moves opaque entries and snapshots between
 * Ratis and the owner's {@link MetadataListener} / {@link SnapshotSource}.
 *
 * <p><b>One apply thread.</b> Ratis calls in from several threads: {@code applyTransaction} and
 * {@code notifyTermIndexUpdated} from its single StateMachineUpdater thread (in log order),
 * {@code takeSnapshot}/{@code reinitialize} from the same updater, leadership notifications from RPC
 * and election threads. Every interaction with the owner is therefore queued, FIFO, to one daemon
 * thread ({@code varve-metadata-apply-<nodeId>}); the last applied {@link TermIndex} is advanced on that
 * thread only, so it never runs ahead of what the owner has seen. {@code applyTransaction} returns a
 * future completed after the owner's callback, so Ratis replies to the leader's append only once the
 * entry is applied locally. At most {@link #MAX_QUEUED_TASKS} tasks wait in the queue; beyond that the
 * updater thread blocks (back-pressure instead of unbounded memory).
 *
 * <p><b>Leadership.</b> {@code thisNodeLeads} is announced from the apply thread once this node is the
 * ready leader and an entry of its own term has been applied (the first entry of a term is Ratis'
 * start-up configuration entry, so everything committed before is applied by then).
 *
 * <p><b>Snapshots.</b> Files live in Ratis' state machine directory ({@code <storage>/<group>/sm}), named
 * {@code snapshot.<term>_<index>} with an {@code .md5} companion (Ratis verifies that one when shipping
 * a snapshot to a lagging follower), formatted by {@link SnapshotFile}. Ratis deletes all but
 * {@link QuorumConfig#snapshotsRetained()} after each snapshot. A corrupt newest snapshot is renamed
 * {@code .corrupt} and the next older one is tried.
 *
 * <p><b>Failure.</b> An exception from a callback is fatal ({@link MetadataListener}): nothing more is
 * delivered and {@code fatalHandler} is called once.
 */
final class MetadataStateMachine extends BaseStateMachine {
    private static final Logger log = LoggerFactory.getLogger(MetadataStateMachine.class);

    /** Queued apply-thread tasks before Ratis' updater thread is made to wait. */
    static final int MAX_QUEUED_TASKS = 4096;
    /** How long close() waits for queued callbacks to finish. */
    private static final long DRAIN_TIMEOUT_MS = 10_000;

    private final int nodeId;
    private final MetadataListener listener;
    private final SnapshotSource snapshotSource;
    private final Consumer<Throwable> fatalHandler;
    /** Replaced (re-scanned) only when a corrupt snapshot was moved aside: Ratis' copy caches the newest file. */
    private volatile SimpleStateMachineStorage storage = new SimpleStateMachineStorage();
    private volatile RaftStorage raftStorage;
    private final ExecutorService applyThread;
    private final Semaphore queueSlots = new Semaphore(MAX_QUEUED_TASKS);
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    private final AtomicBoolean refreshQueued = new AtomicBoolean();

    private volatile RaftServer.Division division;
    private volatile long snapshotIndex = RaftLog.INVALID_LOG_INDEX;
    private volatile boolean leads;
    private volatile CommandHandler commandHandler;

    // Touched on the apply thread only.
    private boolean announced;
    private OptionalInt announcedLeader = OptionalInt.empty();
    private boolean announcedLeads;
    private long announcedTerm = -1;

    MetadataStateMachine(int nodeId, MetadataListener listener, SnapshotSource snapshotSource,
                         Consumer<Throwable> fatalHandler) {
        this.nodeId = nodeId;
        this.listener = listener;
        this.snapshotSource = snapshotSource;
        this.fatalHandler = fatalHandler;
        this.applyThread = new ThreadPoolExecutor(1, 1, 0, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(), r -> {
            Thread t = new Thread(r, "varve-metadata-apply-" + nodeId);
            t.setDaemon(true);
            return t;
        });
    }

    // ---------------------------------------------------------------- lifecycle (Ratis threads)

    @Override
    public void initialize(RaftServer server, RaftGroupId groupId, RaftStorage raftStorage) throws IOException {
        super.initialize(server, groupId, raftStorage);
        this.raftStorage = raftStorage;
        storage.init(raftStorage);
        deleteLeftoverTmpFiles();
        getLifeCycle().startAndTransition(this::loadLatestSnapshot, IOException.class);
    }

    /** Ratis pauses the state machine before it installs a snapshot received from the leader. */
    @Override
    public void pause() {
        LifeCycle lc = getLifeCycle();
        if (lc.getCurrentState() == LifeCycle.State.RUNNING) {
            lc.transition(LifeCycle.State.PAUSING);
            lc.transition(LifeCycle.State.PAUSED);
        }
    }

    /** Called after a snapshot from the leader was installed: reload from it. */
    @Override
    public void reinitialize() throws IOException {
        loadLatestSnapshot();
        LifeCycle lc = getLifeCycle();
        if (lc.getCurrentState() == LifeCycle.State.PAUSED) {
            lc.transition(LifeCycle.State.STARTING);
            lc.transition(LifeCycle.State.RUNNING);
        }
    }

    @Override
    public SimpleStateMachineStorage getStateMachineStorage() {
        return storage;
    }

    @Override
    public void close() {
        applyThread.shutdown();
        try {
            if (!applyThread.awaitTermination(DRAIN_TIMEOUT_MS, TimeUnit.MILLISECONDS)) {
                log.warn("Node {}: metadata apply thread still busy after {} ms at close", nodeId, DRAIN_TIMEOUT_MS);
                applyThread.shutdownNow();
            }
        } catch (InterruptedException e) {
            applyThread.shutdownNow();
            Thread.currentThread().interrupt();
        }
    }

    // ---------------------------------------------------------------- entries (Ratis updater thread)

    void setCommandHandler(CommandHandler handler) {
        this.commandHandler = handler;
    }

    /**
     * A command from {@link ControllerClient}. Ratis delivers read-only requests to the leader only (others
     * answer NotLeaderException and the client retries at the leader), so this runs on the leader.
     */
    @Override
    public CompletableFuture<Message> query(Message request) {
        CommandHandler handler = commandHandler;
        if (handler == null) {
            return CompletableFuture.failedFuture(new IllegalStateException("node " + nodeId + " serves no commands"));
        }
        return handler.handle(request.getContent().toByteArray()).thenApply(bytes -> Message.valueOf(ByteString.copyFrom(bytes)));
    }

    @Override
    public CompletableFuture<Message> applyTransaction(TransactionContext trx) {
        LogEntryProto entry = trx.getLogEntry();
        long term = entry.getTerm();
        long index = entry.getIndex();
        ByteString data = entry.getStateMachineLogEntry().getLogData();
        return onApplyThread(() -> {
            listener.onCommitted(index, term, data.toByteArray());
            updateLastAppliedTermIndex(term, index);
            refreshLeadership();
            return Message.EMPTY;
        });
    }

    /** Raft configuration and metadata entries: not delivered, but they advance the applied index. */
    @Override
    public void notifyTermIndexUpdated(long term, long index) {
        onApplyThread(() -> {
            updateLastAppliedTermIndex(term, index);
            refreshLeadership();
            return null;
        });
    }

    @Override
    public void notifyLeaderChanged(RaftGroupMemberId groupMemberId, RaftPeerId newLeaderId) {
        requestLeadershipRefresh();
    }

    @Override
    public void notifyLeaderReady() {
        requestLeadershipRefresh();
    }

    @Override
    public void notifyNotLeader(java.util.Collection<TransactionContext> pendingEntries) {
        requestLeadershipRefresh();
    }

    /** Re-reads Raft's view of leadership on the apply thread and tells the listener when it changed. */
    void requestLeadershipRefresh() {
        if (applyThread.isShutdown() || failure.get() != null || !refreshQueued.compareAndSet(false, true)) {
            return;
        }
        try {
            applyThread.execute(() -> {
                refreshQueued.set(false);
                try {
                    refreshLeadership();
                } catch (Throwable t) {
                    fatal(t);
                }
            });
        } catch (RejectedExecutionException e) {
            refreshQueued.set(false); // closing
        }
    }

    // ---------------------------------------------------------------- snapshots

    @Override
    public long takeSnapshot() throws IOException {
        if (snapshotSource == null) {
            return snapshotIndex;
        }
        record Taken(TermIndex at, byte[] bytes) {
        }
        final Taken taken;
        try {
            taken = onApplyThread(() -> {
                TermIndex at = getLastAppliedTermIndex();
                if (at == null || at.getIndex() <= snapshotIndex) {
                    return null;
                }
                return new Taken(at, snapshotSource.snapshotAt(at.getIndex()));
            }).get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while taking a metadata snapshot");
        } catch (ExecutionException e) {
            log.error("Node {}: SnapshotSource failed; snapshot skipped, log kept", nodeId, e.getCause());
            return snapshotIndex;
        }
        if (taken == null || taken.bytes() == null) {
            return snapshotIndex;
        }
        long term = taken.at().getTerm();
        long index = taken.at().getIndex();
        Path file = storage.getSnapshotFile(term, index).toPath();
        SnapshotFile.write(file, term, index, taken.bytes());
        MD5Hash md5 = MD5FileUtil.computeAndSaveMd5ForFile(file.toFile());
        storage.updateLatestSnapshot(new SingleFileSnapshotInfo(new FileInfo(file, md5), taken.at()));
        snapshotIndex = index;
        log.info("Node {}: metadata snapshot at index {} (term {}), {} bytes", nodeId, index, term,
                taken.bytes().length);
        return index;
    }

    /**
     * Loads the newest intact snapshot, if any, and queues it to the listener before any later entry.
     *
     * <p>A corrupt newer snapshot is only skipped when the Raft log still holds every entry after the
     * older snapshot (or from the start, if none is left); it is then renamed {@code .corrupt}. Otherwise
     * the node refuses to start: replaying from the older snapshot would leave a gap (Ratis would spin
     * on the missing entry), and silently dropping committed entries is worse.
     */
    private void loadLatestSnapshot() throws IOException {
        List<Path> corrupt = new ArrayList<>();
        SnapshotFile.Contents contents = null;
        Path file = null;
        for (Path candidate : snapshotFilesNewestFirst()) {
            try {
                SnapshotFile.Contents c = SnapshotFile.read(candidate);
                TermIndex named = SimpleStateMachineStorage.getTermIndexFromSnapshotFile(candidate.toFile());
                if (c.index() != named.getIndex() || c.term() != named.getTerm()) {
                    throw new IOException("snapshot " + candidate + " holds term/index " + c.term() + "/" + c.index()
                            + ", its name says " + named.getTerm() + "/" + named.getIndex());
                }
                contents = c;
                file = candidate;
                break;
            } catch (IOException e) {
                log.error("Node {}: metadata snapshot is unusable: {}", nodeId, e.getMessage());
                corrupt.add(candidate);
            }
        }
        if (!corrupt.isEmpty()) {
            long fallbackIndex = contents == null ? RaftLog.INVALID_LOG_INDEX : contents.index();
            long firstLogIndex = firstLogIndex();
            if (firstLogIndex < 0 || firstLogIndex > fallbackIndex + 1) {
                throw new IOException("node " + nodeId + ": metadata snapshot " + corrupt.get(0) + " is corrupt and the"
                        + " Raft log " + (firstLogIndex < 0 ? "is empty" : "starts at index " + firstLogIndex)
                        + ", so the entries after " + (contents == null ? "the start" : "snapshot " + file)
                        + " are gone; restore the snapshot, or move this node's metadata directory aside so that it"
                        + " re-joins from the quorum leader");
            }
            for (Path bad : corrupt) {
                log.error("Node {}: moving corrupt metadata snapshot {} aside; rebuilding from {} and the log", nodeId,
                        bad, file == null ? "the start" : file);
                moveAside(bad);
            }
            SimpleStateMachineStorage rescanned = new SimpleStateMachineStorage();
            rescanned.init(raftStorage);
            storage = rescanned;
        }
        // Ratis reads the snapshot position from the storage's cache (e.g. after installing a snapshot it
        // received): refresh it from disk.
        storage.loadLatestSnapshot();
        if (contents == null) {
            return;
        }
        TermIndex at = TermIndex.valueOf(contents.term(), contents.index());
        byte[] payload = contents.payload();
        try {
            onApplyThread(() -> {
                setLastAppliedTermIndex(at);
                snapshotIndex = at.getIndex();
                listener.onSnapshotLoaded(at.getIndex(), payload);
                return null;
            }).get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while loading snapshot " + file);
        } catch (ExecutionException e) {
            throw new IOException("loading metadata snapshot " + file + " failed", e.getCause());
        }
        log.info("Node {}: loaded metadata snapshot at index {} (term {})", nodeId, at.getIndex(), at.getTerm());
    }

    private List<Path> snapshotFilesNewestFirst() throws IOException {
        Path dir = stateMachineDir();
        List<Path> files = new ArrayList<>();
        if (dir == null || !Files.isDirectory(dir)) {
            return files;
        }
        try (DirectoryStream<Path> all = Files.newDirectoryStream(dir)) {
            for (Path p : all) {
                if (SimpleStateMachineStorage.SNAPSHOT_REGEX.matcher(p.getFileName().toString()).matches()) {
                    files.add(p);
                }
            }
        }
        files.sort(Comparator.comparing((Path p) -> SimpleStateMachineStorage.getTermIndexFromSnapshotFile(p.toFile()))
                .reversed());
        return files;
    }

    /** The first index held by Ratis' log segments ({@code log_<first>-<last>}, {@code log_inprogress_<first>}); -1 if none. */
    private long firstLogIndex() throws IOException {
        Path current = raftStorage.getStorageDir().getCurrentDir().toPath();
        long first = Long.MAX_VALUE;
        if (Files.isDirectory(current)) {
            try (DirectoryStream<Path> all = Files.newDirectoryStream(current, "log_*")) {
                for (Path p : all) {
                    Matcher m = LOG_SEGMENT.matcher(p.getFileName().toString());
                    if (m.matches()) {
                        first = Math.min(first, Long.parseLong(m.group(1) != null ? m.group(1) : m.group(2)));
                    }
                }
            }
        }
        return first == Long.MAX_VALUE ? -1 : first;
    }

    private static final Pattern LOG_SEGMENT = Pattern.compile("log_(?:(\\d+)-\\d+|inprogress_(\\d+))");

    private Path stateMachineDir() {
        return storage.getSnapshotFile(0, 0).toPath().getParent();
    }

    private void moveAside(Path file) throws IOException {
        Files.move(file, file.resolveSibling(file.getFileName() + ".corrupt"), StandardCopyOption.REPLACE_EXISTING);
        Path md5 = MD5FileUtil.getDigestFileForFile(file.toFile()).toPath();
        Files.deleteIfExists(md5);
    }

    private void deleteLeftoverTmpFiles() throws IOException {
        Path dir = stateMachineDir();
        if (dir == null || !Files.isDirectory(dir)) {
            return;
        }
        try (DirectoryStream<Path> tmps = Files.newDirectoryStream(dir, "snapshot.*.tmp")) {
            for (Path tmp : tmps) {
                Files.deleteIfExists(tmp);
            }
        }
    }

    // ---------------------------------------------------------------- apply thread

    /** Whether this node announced itself leader and has not announced the loss since. */
    boolean leads() {
        return leads;
    }

    long snapshotIndex() {
        return snapshotIndex;
    }

    Throwable failure() {
        return failure.get();
    }

    /**
     * Runs {@code task} on the apply thread after everything queued before it. Blocks the calling
     * (Ratis) thread while {@link #MAX_QUEUED_TASKS} tasks are waiting. After a fatal failure the task is
     * not run and the future fails.
     */
    private <T> CompletableFuture<T> onApplyThread(Callable<T> task) {
        CompletableFuture<T> future = new CompletableFuture<>();
        try {
            queueSlots.acquire();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            future.completeExceptionally(e);
            return future;
        }
        try {
            applyThread.execute(() -> {
                try {
                    Throwable failed = failure.get();
                    if (failed != null) {
                        future.completeExceptionally(new IllegalStateException(
                                "metadata state machine of node " + nodeId + " stopped after a failure", failed));
                        return;
                    }
                    future.complete(task.call());
                } catch (Throwable t) {
                    fatal(t);
                    future.completeExceptionally(t);
                } finally {
                    queueSlots.release();
                }
            });
        } catch (RejectedExecutionException e) {
            queueSlots.release();
            future.completeExceptionally(new IllegalStateException("metadata state machine of node " + nodeId
                    + " is closed", e));
        }
        return future;
    }

    private void fatal(Throwable t) {
        if (failure.compareAndSet(null, t)) {
            leads = false;
            log.error("Node {}: metadata listener failed; the quorum member stops", nodeId, t);
            fatalHandler.accept(t);
        }
    }

    /** Apply thread only. */
    private void refreshLeadership() {
        RaftServer.Division d = division();
        if (d == null || failure.get() != null) {
            return;
        }
        DivisionInfo info = d.getInfo();
        RaftPeerId leaderPeer = info.getLeaderId();
        OptionalInt leader = leaderPeer == null ? OptionalInt.empty() : OptionalInt.of(MetadataQuorum.nodeIdOf(leaderPeer));
        long term = info.getCurrentTerm();
        TermIndex applied = getLastAppliedTermIndex();
        boolean nowLeads = info.isLeader() && info.isLeaderReady() && applied != null && applied.getTerm() == term;
        if (announced && leader.equals(announcedLeader) && nowLeads == announcedLeads
                && (!nowLeads || term == announcedTerm)) {
            return;
        }
        announced = true;
        announcedLeader = leader;
        announcedLeads = nowLeads;
        announcedTerm = term;
        leads = nowLeads;
        listener.onLeadershipChange(leader, nowLeads, term);
    }

    private RaftServer.Division division() {
        RaftServer.Division d = division;
        if (d == null) {
            CompletableFuture<RaftServer> server = getServer();
            if (!server.isDone()) {
                return null;
            }
            try {
                d = server.join().getDivision(getGroupId());
                division = d;
            } catch (IOException | RuntimeException e) {
                return null; // not registered yet: the next event or the periodic refresh retries
            }
        }
        return d;
    }
}
