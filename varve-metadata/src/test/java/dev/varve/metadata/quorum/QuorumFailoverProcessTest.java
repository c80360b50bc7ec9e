package dev.varve.metadata.quorum;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Failover after the leader's process is killed (SIGKILL: no clean shutdown, no leadership transfer):
 * three voters, each in its own JVM ({@link QuorumNodeProcess}), election timeouts 300..600 ms.
 */
class QuorumFailoverProcessTest {
    @TempDir
    Path dir;

    private final List<Process> processes = new ArrayList<>();
    /** Per node: receipt time (nanoTime in this JVM) of each output line. */
    private final Map<Integer, List<String>> lines = new ConcurrentHashMap<>();
    private final Map<String, Long> firstSeenNanos = new ConcurrentHashMap<>();

    @AfterEach
    void tearDown() throws InterruptedException {
        for (Process p : processes) {
            p.destroyForcibly();
        }
        for (Process p : processes) {
            p.waitFor(10, TimeUnit.SECONDS);
        }
    }

    @Test
    void aKilledLeaderIsReplacedWithinTheElectionBound() throws Exception {
        List<Integer> ids = List.of(1, 2, 3);
        String voters = ids.stream().map(id -> id + "@127.0.0.1:" + TestCluster.freePort())
                .collect(Collectors.joining(","));
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        // -Dvarve.quorum.failover.electionMs=1000,2000 measures the production defaults.
        String[] election = System.getProperty("varve.quorum.failover.electionMs",
                TestCluster.TEST_ELECTION_MIN_MS + "," + TestCluster.TEST_ELECTION_MAX_MS).split(",");
        long t0 = System.nanoTime();
        for (int id : ids) {
            ProcessBuilder pb = new ProcessBuilder(java, "-Xmx128m", "-XX:TieredStopAtLevel=1",
                    "-cp", System.getProperty("java.class.path"), QuorumNodeProcess.class.getName(),
                    Integer.toString(id), voters, dir.resolve("node-" + id).toString(),
                    election[0], election[1]);
            pb.redirectError(ProcessBuilder.Redirect.DISCARD);
            Process p = pb.start();
            processes.add(p);
            lines.put(id, new java.util.concurrent.CopyOnWriteArrayList<>());
            Thread reader = new Thread(() -> read(id, p), "reader-" + id);
            reader.setDaemon(true);
            reader.start();
        }
        await().atMost(Duration.ofSeconds(30)).until(() -> leaderWith("APPENDED") > 0);
        int first = leaderWith("APPENDED");
        System.out.printf("[quorum-timing] 3 voters in 3 JVMs: launch to first commit %d ms (includes JVM start)%n",
                (firstSeenNanos.get(first + " APPENDED") - t0) / 1_000_000);

        long killedAt = System.nanoTime();
        processes.get(ids.indexOf(first)).destroyForcibly();
        await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(2))
                .until(() -> otherLeaderWith("APPENDED", first) > 0);
        int second = otherLeaderWith("APPENDED", first);
        long leads = firstSeenNanos.get(second + " LEADS") - killedAt;
        long appended = firstSeenNanos.get(second + " APPENDED") - killedAt;
        System.out.printf("[quorum-timing] failover after SIGKILL of leader %d (election timeout %s..%s ms): node %d"
                + " leads after %d ms, first commit after %d ms%n", first, election[0], election[1], second,
                leads / 1_000_000, appended / 1_000_000);
        assertThat(second).isNotEqualTo(first);
        // election timeout max + pre-vote + vote + startup entry, with generous slack for a 2-core machine
        assertThat(appended).isLessThan(TimeUnit.SECONDS.toNanos(5) + TimeUnit.MILLISECONDS.toNanos(2 * Long.parseLong(election[1])));
    }

    private int leaderWith(String event) {
        return otherLeaderWith(event, -1);
    }

    private int otherLeaderWith(String event, int excluded) {
        for (Map.Entry<Integer, List<String>> e : lines.entrySet()) {
            if (e.getKey() != excluded && e.getValue().stream().anyMatch(l -> l.startsWith(event))) {
                return e.getKey();
            }
        }
        return -1;
    }

    private void read(int id, Process p) {
        try (BufferedReader r = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line; (line = r.readLine()) != null; ) {
                long now = System.nanoTime();
                firstSeenNanos.putIfAbsent(id + " " + line.split(" ")[0], now);
                lines.get(id).add(line);
            }
        } catch (IOException e) {
            // process killed
        }
    }
}
