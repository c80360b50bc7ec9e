package dev.varve.broker.cluster;

import dev.varve.broker.Broker;
import dev.varve.broker.BrokerConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A cluster broker that has not caught up with the metadata log (here: its controller quorum is
 * unreachable, so it never will) takes no client requests: it would answer from a historical image.
 * Connections are closed at once, so clients go to another broker, as with a Kafka broker that has not
 * enabled request processing yet. (Every multi-process cluster test shows the other half: brokers
 * serve once caught up.)
 */
class NotCaughtUpTest {
    @TempDir
    File dir;

    @Test
    void aBrokerThatHasNotCaughtUpClosesClientConnections() throws Exception {
        int nobody;
        try (ServerSocket s = new ServerSocket(0)) {
            nobody = s.getLocalPort(); // a voter address where nothing listens
        }
        try (Broker broker = Broker.start(BrokerConfig.from(Map.of(
                "process.roles", "broker",
                "node.id", "4",
                "controller.quorum.voters", "1@127.0.0.1:" + nobody,
                "listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", dir.getAbsolutePath())))) {
            InetSocketAddress address = broker.boundAddresses().get(0);
            for (int attempt = 0; attempt < 3; attempt++) {
                try (Socket socket = new Socket(address.getHostString(), address.getPort())) {
                    socket.setSoTimeout(5_000);
                    // an ApiVersions v0 request header; the broker must close instead of answering
                    byte[] request = {0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 1, 0, 0};
                    socket.getOutputStream().write(request);
                    InputStream in = socket.getInputStream();
                    int first;
                    try {
                        first = in.read();
                    } catch (java.net.SocketException reset) {
                        first = -1; // closed with our request unread: a reset
                    }
                    assertThat(first).as("closed without an answer").isEqualTo(-1);
                }
                Thread.sleep(300);
            }
        }
    }
}
