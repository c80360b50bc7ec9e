package dev.varve.tests;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

/**
 * Test hosts on one machine: a Linux network namespace per host, each with its own address on a
 * private /24, joined by a bridge in a namespace of its own; the test JVM (the clients) reaches them
 * through one more veth from the current namespace, at {@code .254}. Built with iproute2 ({@code ip},
 * {@code tc}); needs root, and {@link #available()} says whether this machine allows it.
 *
 * <pre>
 *   [host 1: eth0 10.213.N.1] ─┐
 *   [host 2: eth0 10.213.N.2] ─┼─ br0 (namespace "switch") ── test JVM 10.213.N.254
 *   [host 3: eth0 10.213.N.3] ─┘
 * </pre>
 *
 * <p>Faults are rules inside the sending host's namespace, so they need no kernel module beyond
 * policy routing and htb:
 * <ul>
 *   <li>{@link #cut}: packets from one host to another (optionally only those of one TCP port, as
 *       destination port for requests and source port for answers) are routed to a MAC address
 *       nobody has, so they vanish silently, as on a partitioned network (connects time out; they are
 *       not refused);</li>
 *   <li>{@link #slow}: packets from one host to another go through an htb class of a small rate, a
 *       slow link whose queueing delay grows with the traffic.</li>
 * </ul>
 * {@link #heal()} removes every rule. Namespace names and the subnet are random per instance, so
 * concurrent tests do not meet.
 */
public final class VirtualNetwork implements AutoCloseable {
    private static final String BLACKHOLE_MAC = "02:00:00:00:00:fe";
    private static final int CUT_TABLE = 100;
    private static final int FIRST_RULE_PRIORITY = 100;

    private final String id;
    private final int subnet;
    private final int hosts;
    private final String hostVeth;
    private final Map<Integer, List<Integer>> rulePriorities = new HashMap<>();
    private final Map<Integer, Integer> slowClasses = new HashMap<>();
    private int nextPriority = FIRST_RULE_PRIORITY;
    private boolean closed;

    private VirtualNetwork(int hosts) {
        this.id = Integer.toHexString(ThreadLocalRandom.current().nextInt(0x1000, 0x10000));
        this.subnet = ThreadLocalRandom.current().nextInt(1, 250);
        this.hosts = hosts;
        this.hostVeth = "vv" + id + "h";
    }

    /** Whether namespaces, veth pairs, bridges and policy routing work here (root on Linux with iproute2). */
    public static boolean available() {
        String ns = "varve-probe-" + Integer.toHexString(ThreadLocalRandom.current().nextInt(0x1000, 0x10000));
        try {
            if (run(List.of("ip", "netns", "add", ns)) != 0) {
                return false;
            }
            try {
                return run(List.of("ip", "-n", ns, "link", "add", "br0", "type", "bridge")) == 0
                        && run(List.of("ip", "-n", ns, "link", "add", "a0", "type", "veth", "peer", "name", "b0")) == 0
                        && run(List.of("ip", "-n", ns, "rule", "add", "to", "10.0.0.1/32", "ipproto", "tcp",
                        "dport", "9", "table", "100", "priority", "100")) == 0;
            } finally {
                run(List.of("ip", "netns", "del", ns));
            }
        } catch (IOException e) {
            return false;
        }
    }

    /** Creates {@code hosts} hosts (1..hosts) on a fresh bridge. */
    public static VirtualNetwork create(int hosts) throws IOException {
        VirtualNetwork net = new VirtualNetwork(hosts);
        try {
            net.build();
            return net;
        } catch (IOException | RuntimeException e) {
            net.close();
            throw e;
        }
    }

    private void build() throws IOException {
        String sw = switchNamespace();
        must("ip", "netns", "add", sw);
        must("ip", "-n", sw, "link", "add", "br0", "type", "bridge");
        must("ip", "-n", sw, "link", "set", "br0", "up");
        // the test JVM's own leg
        must("ip", "link", "add", hostVeth, "type", "veth", "peer", "name", "ph", "netns", sw);
        must("ip", "addr", "add", clientAddress() + "/24", "dev", hostVeth);
        must("ip", "link", "set", hostVeth, "up");
        attach(sw, "ph");
        for (int h = 1; h <= hosts; h++) {
            String ns = namespace(h);
            must("ip", "netns", "add", ns);
            must("ip", "-n", ns, "link", "set", "lo", "up");
            must("ip", "-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", "p" + h, "netns", sw);
            attach(sw, "p" + h);
            must("ip", "-n", ns, "addr", "add", address(h) + "/24", "dev", "eth0");
            must("ip", "-n", ns, "link", "set", "eth0", "up");
            // the table cut packets are routed by: a next hop whose MAC address no host has
            String hole = prefix() + ".250";
            must("ip", "-n", ns, "route", "add", "default", "via", hole, "dev", "eth0", "onlink", "table", Integer.toString(CUT_TABLE));
            must("ip", "-n", ns, "neigh", "replace", hole, "lladdr", BLACKHOLE_MAC, "dev", "eth0", "nud", "permanent");
            rulePriorities.put(h, new ArrayList<>());
        }
    }

    private void attach(String sw, String port) throws IOException {
        must("ip", "-n", sw, "link", "set", port, "master", "br0");
        must("ip", "-n", sw, "link", "set", port, "up");
    }

    private String prefix() {
        return "10.213." + subnet;
    }

    private String switchNamespace() {
        return "varve-" + id + "-sw";
    }

    public String namespace(int host) {
        return "varve-" + id + "-h" + host;
    }

    /** The address of host {@code host} (1-based). */
    public String address(int host) {
        return prefix() + "." + host;
    }

    /** The test JVM's address on the network. */
    public String clientAddress() {
        return prefix() + ".254";
    }

    /** The command prefix that runs a program on host {@code host}. */
    public List<String> exec(int host) {
        return List.of("ip", "netns", "exec", namespace(host));
    }

    /** Packets from {@code from} to {@code to} are lost: all of them, or only TCP port {@code port}'s (0: all). */
    public synchronized void cutOneWay(int from, int to, int port) throws IOException {
        String ns = namespace(from);
        String dst = address(to) + "/32";
        if (port == 0) {
            rule(from, ns, List.of("to", dst));
        } else {
            rule(from, ns, List.of("to", dst, "ipproto", "tcp", "dport", Integer.toString(port)));
            rule(from, ns, List.of("to", dst, "ipproto", "tcp", "sport", Integer.toString(port)));
        }
    }

    /** {@link #cutOneWay} in both directions. */
    public void cut(int a, int b, int port) throws IOException {
        cutOneWay(a, b, port);
        cutOneWay(b, a, port);
    }

    /** Host {@code host} cannot exchange packets with any other host (the clients still reach it). */
    public void isolate(int host) throws IOException {
        for (int other = 1; other <= hosts; other++) {
            if (other != host) {
                cut(host, other, 0);
            }
        }
    }

    private void rule(int host, String ns, List<String> selector) throws IOException {
        int priority = nextPriority++;
        List<String> cmd = new ArrayList<>(List.of("ip", "-n", ns, "rule", "add"));
        cmd.addAll(selector);
        cmd.addAll(List.of("table", Integer.toString(CUT_TABLE), "priority", Integer.toString(priority)));
        must(cmd.toArray(String[]::new));
        rulePriorities.get(host).add(priority);
    }

    /** Packets from {@code from} to {@code to} leave at no more than {@code kbitPerSecond}. */
    public synchronized void slow(int from, int to, int kbitPerSecond) throws IOException {
        String ns = namespace(from);
        if (slowClasses.isEmpty() || slowClasses.keySet().stream().noneMatch(k -> k / 1000 == from)) {
            must("ip", "netns", "exec", ns, "tc", "qdisc", "add", "dev", "eth0", "root", "handle", "1:", "htb",
                    "default", "1", "r2q", "1000");
            must("ip", "netns", "exec", ns, "tc", "class", "add", "dev", "eth0", "parent", "1:", "classid", "1:1",
                    "htb", "rate", "10gbit");
        }
        int classId = 10 + to;
        must("ip", "netns", "exec", ns, "tc", "class", "add", "dev", "eth0", "parent", "1:", "classid", "1:" + classId,
                "htb", "rate", kbitPerSecond + "kbit", "ceil", kbitPerSecond + "kbit");
        must("ip", "netns", "exec", ns, "tc", "filter", "add", "dev", "eth0", "parent", "1:", "protocol", "ip",
                "prio", "1", "u32", "match", "ip", "dst", address(to) + "/32", "flowid", "1:" + classId);
        slowClasses.put(from * 1000 + to, kbitPerSecond);
    }

    /** Removes every cut and slow link. */
    public synchronized void heal() throws IOException {
        for (Map.Entry<Integer, List<Integer>> e : rulePriorities.entrySet()) {
            for (int priority : e.getValue()) {
                must("ip", "-n", namespace(e.getKey()), "rule", "del", "priority", Integer.toString(priority));
            }
            e.getValue().clear();
        }
        for (int from : slowClasses.keySet().stream().map(k -> k / 1000).distinct().toList()) {
            must("ip", "netns", "exec", namespace(from), "tc", "qdisc", "del", "dev", "eth0", "root");
        }
        slowClasses.clear();
    }

    /** Deletes the namespaces (killing nothing: stop the hosts' processes first) and the test JVM's leg. */
    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            run(List.of("ip", "link", "del", hostVeth));
            for (int h = 1; h <= hosts; h++) {
                run(List.of("ip", "netns", "del", namespace(h)));
            }
            run(List.of("ip", "netns", "del", switchNamespace()));
        } catch (IOException e) {
            // best effort
        }
    }

    private static void must(String... cmd) throws IOException {
        List<String> output = new ArrayList<>();
        int rc = run(List.of(cmd), output);
        if (rc != 0) {
            throw new IOException(String.join(" ", cmd) + " exited with " + rc + ": " + String.join("\n", output));
        }
    }

    private static int run(List<String> cmd) throws IOException {
        return run(cmd, new ArrayList<>());
    }

    private static int run(List<String> cmd, List<String> output) throws IOException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        try {
            output.add(new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim());
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IOException(String.join(" ", cmd) + " did not finish");
            }
            return p.exitValue();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
    }
}
