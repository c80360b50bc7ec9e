package dev.varve.tests;

/**
 * A broker running as its own operating-system process, which a test can stop (SIGTERM), kill
 * (SIGKILL) and start again on the same data: {@link VarveProcess}, or {@link PeerKafkaNode} to run
 * the same test against Apache Kafka.
 */
interface BrokerProcess extends AutoCloseable {
    String bootstrap();

    /** SIGTERM and wait for the exit; returns the exit code. */
    int stop() throws Exception;

    /** SIGKILL and wait for the exit. */
    void kill() throws Exception;

    /** Starts it again on the same data and waits until it serves requests. */
    void restart() throws Exception;

    /** The broker's output, for failure messages. */
    String log();

    @Override
    void close();
}
