package dev.varve.tests.chaos;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * One tmpfs per node as its log directory ({@code DIR/node-N/data}, where {@code TestCluster} puts it),
 * so that a fault can fill one node's disk without touching the machine's. Needs root.
 */
final class SmallDisks implements AutoCloseable {
    static final String SIZE = "512m";

    private final List<Path> mounts = new ArrayList<>();

    private SmallDisks() {
    }

    static SmallDisks mount(Path clusterDir, int nodes) throws IOException {
        SmallDisks disks = new SmallDisks();
        try {
            for (int id = 1; id <= nodes; id++) {
                Path data = clusterDir.resolve("node-" + id).resolve("data");
                Files.createDirectories(data);
                run("mount", "-t", "tmpfs", "-o", "size=" + SIZE, "tmpfs", data.toString());
                disks.mounts.add(data);
            }
            return disks;
        } catch (IOException | RuntimeException e) {
            disks.close();
            throw e;
        }
    }

    /** Writes a file into {@code dataDir} until its file system is full; returns it (delete it to free the space). */
    static Path fill(Path dataDir) throws IOException {
        Path filler = dataDir.resolve("filler.chaos");
        byte[] chunk = new byte[64 * 1024];
        try (OutputStream out = Files.newOutputStream(filler)) {
            while (true) {
                out.write(chunk);
            }
        } catch (IOException full) {
            // No space left on device: exactly what we wanted
        }
        return filler;
    }

    @Override
    public void close() {
        for (Path p : mounts) {
            try {
                run("umount", "-l", p.toString());
            } catch (IOException e) {
                // best effort
            }
        }
    }

    private static void run(String... cmd) throws IOException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        try {
            String out = new String(p.getInputStream().readAllBytes());
            if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
                throw new IOException(String.join(" ", cmd) + " failed: " + out);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        }
    }
}
