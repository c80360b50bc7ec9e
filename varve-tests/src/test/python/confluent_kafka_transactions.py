#!/usr/bin/python3
"""Transactional producers of librdkafka (python3-confluent-kafka) against a broker, for varve-tests'
NativeTransactionalClientsTest.

Each mode writes what it did to stdout as JSON lines (one object per line, a "type" field each);
the Java test reads them and checks the topic with Kafka's Java consumer. Diagnostics go to stderr.
Exits 0 when the mode ran to its end, whatever the broker answered (the test judges the answers);
non-zero only when the script itself could not go on.

  transactions  --bootstrap B --topic T --partitions P --transactional-id ID --transactions N
                --records R --abort 1,4,7
      N transactions of R records each; transaction t's record r goes to partition (7t + r) % P with
      the key and value of record_key/record_value; the transactions listed in --abort are flushed
      (so their records are in the log) and then aborted, the others committed.
  fencing       --bootstrap B --topic T --partitions P --transactional-id ID --then produce|commit
      Producer A opens a transaction and flushes records; producer B initialises with the same id
      (fencing A), then commits its own records; A then produces more and tries to commit
      (--then produce), or tries to commit at once (--then commit).
  ctp           --bootstrap B --input I --output O --group G --transactional-id ID --expected N
      Consume-transform-produce: reads I in group G (read_committed, no auto commit), writes each
      record transformed to O (same partition) and commits the consumed offsets in the producer's
      transaction (send_offsets_to_transaction). The first transaction is aborted on purpose and the
      consumer rewinds to the committed offsets, as an application does after an abort. Runs until
      every record was processed and the group's offsets, committed in transactions (the last ones
      may hold offsets alone: positions that moved past transaction markers), reach the input's end.
"""

import argparse
import json
import sys
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
import confluent_kafka

# Bounds on every wait, so that a broker that stops answering fails the run instead of hanging it.
OP_TIMEOUT_S = 30.0
RUN_DEADLINE_S = 60.0


def emit(obj):
    sys.stdout.write(json.dumps(obj, sort_keys=True) + "\n")
    sys.stdout.flush()


def log(msg):
    sys.stderr.write("confluent_kafka_transactions: %s\n" % msg)
    sys.stderr.flush()


def record_key(prefix, t, r):
    return ("%s-k-%d-%d" % (prefix, t, r)).encode("ascii")


def record_value(prefix, t, r):
    """Text, a separator and r % 23 bytes of every value (0x00 and 0xff included), so bytes are compared."""
    return ("%s-t%02d-r%02d|" % (prefix, t, r)).encode("ascii") + bytes((t * 31 + r * 7 + i) % 256 for i in range(r % 23))


def error_info(err):
    """A KafkaError (or the KafkaError inside a KafkaException) as JSON-friendly fields."""
    if isinstance(err, KafkaException):
        err = err.args[0]
    if not isinstance(err, KafkaError):
        return {"name": type(err).__name__, "str": str(err)}
    return {
        "name": err.name(),
        "code": err.code(),
        "str": err.str(),
        "fatal": err.fatal(),
        "retriable": err.retriable(),
        "txn_requires_abort": err.txn_requires_abort(),
    }


def producer(args, transactional_id, errors):
    def on_error(err):
        log("producer %s error callback: %s" % (transactional_id, err))
        errors.append(error_info(err))

    return Producer({
        "bootstrap.servers": args.bootstrap,
        "transactional.id": transactional_id,
        "transaction.timeout.ms": 60000,
        "message.timeout.ms": 30000,
        "linger.ms": 5,
        "error_cb": on_error,
    })


def delivery_recorder(prefix, t, r, out):
    def on_delivery(err, msg):
        if err is not None:
            out.append({"type": "delivery-error", "prefix": prefix, "t": t, "r": r, "error": error_info(err)})
        else:
            out.append({"type": "delivered", "prefix": prefix, "t": t, "r": r,
                        "partition": msg.partition(), "offset": msg.offset()})
    return on_delivery


def flush(p):
    left = p.flush(OP_TIMEOUT_S)
    if left != 0:
        raise RuntimeError("%d messages still undelivered after %.0f s" % (left, OP_TIMEOUT_S))


def mode_transactions(args):
    aborted = set(int(x) for x in args.abort.split(",") if x)
    errors = []
    p = producer(args, args.transactional_id, errors)
    p.init_transactions(OP_TIMEOUT_S)
    for t in range(args.transactions):
        deliveries = []
        p.begin_transaction()
        for r in range(args.records):
            p.produce(args.topic, value=record_value("txn", t, r), key=record_key("txn", t, r),
                      partition=(7 * t + r) % args.partitions,
                      on_delivery=delivery_recorder("txn", t, r, deliveries))
        if t in aborted:
            # Flush first: an abort purges what is still unsent, and the test wants the aborted
            # records in the log (read_uncommitted must see them, read_committed must not).
            flush(p)
            p.abort_transaction(OP_TIMEOUT_S)
            outcome = "aborted"
        else:
            p.commit_transaction(OP_TIMEOUT_S)  # flushes, then EndTxn(commit)
            outcome = "committed"
        p.poll(0)
        for d in deliveries:
            emit(d)
        if len(deliveries) != args.records:
            raise RuntimeError("transaction %d: %d delivery reports for %d records" % (t, len(deliveries), args.records))
        emit({"type": "transaction", "t": t, "outcome": outcome})
    emit({"type": "done", "errors": errors})


def mode_fencing(args):
    errors_a = []
    errors_b = []
    a = producer(args, args.transactional_id, errors_a)
    a.init_transactions(OP_TIMEOUT_S)
    a.begin_transaction()
    deliveries = []
    for r in range(args.partitions):
        a.produce(args.topic, value=record_value("a-open", 0, r), key=record_key("a-open", 0, r), partition=r,
                  on_delivery=delivery_recorder("a-open", 0, r, deliveries))
    flush(a)
    for d in deliveries:
        emit(d)
    emit({"type": "step", "step": "a-open-flushed"})

    # B takes over the transactional id: the coordinator bumps the epoch and aborts A's transaction.
    b = producer(args, args.transactional_id, errors_b)
    b.init_transactions(OP_TIMEOUT_S)
    b.begin_transaction()
    deliveries = []
    for r in range(args.partitions):
        b.produce(args.topic, value=record_value("b", 0, r), key=record_key("b", 0, r), partition=r,
                  on_delivery=delivery_recorder("b", 0, r, deliveries))
    b.commit_transaction(OP_TIMEOUT_S)
    b.poll(0)
    for d in deliveries:
        emit(d)
    emit({"type": "step", "step": "b-committed"})

    # A, fenced, goes on with its transaction (--then produce: more records, then the commit;
    # --then commit: the commit alone): whatever it sends must fail.
    deliveries = []
    produce_error = None
    if args.then == "produce":
        try:
            for r in range(args.partitions):
                a.produce(args.topic, value=record_value("a-late", 0, r), key=record_key("a-late", 0, r), partition=r,
                          on_delivery=delivery_recorder("a-late", 0, r, deliveries))
        except KafkaException as e:
            produce_error = error_info(e)
    commit_error = None
    try:
        a.commit_transaction(OP_TIMEOUT_S)
    except KafkaException as e:
        commit_error = error_info(e)
    poll_error = None
    # Serve the delivery reports and error callbacks (may raise the fatal error once more) until every
    # late record has its report: librdkafka 2.0.2 destroyed with a message still in transit after a
    # fatal error can corrupt its heap on exit ("unaligned tcache chunk detected", SIGABRT).
    deadline = time.monotonic() + OP_TIMEOUT_S
    expected = args.partitions if args.then == "produce" and produce_error is None else 0
    while True:
        try:
            a.poll(0.1)
        except KafkaException as e:
            poll_error = poll_error or error_info(e)
        if len(deliveries) >= expected or time.monotonic() > deadline:
            break
    for d in deliveries:
        emit(d)
    emit({"type": "fenced", "produce_error": produce_error, "commit_error": commit_error, "poll_error": poll_error,
          "error_callbacks_a": errors_a, "error_callbacks_b": errors_b})
    emit({"type": "done", "errors": errors_b})


def mode_ctp(args):
    errors = []
    consumer = Consumer({
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "isolation.level": "read_committed",
        "session.timeout.ms": 6000,
        "error_cb": lambda err: errors.append(error_info(err)),
    })
    p = producer(args, args.transactional_id, errors)
    p.init_transactions(OP_TIMEOUT_S)
    consumer.subscribe([args.input])

    deadline = time.monotonic() + RUN_DEADLINE_S
    processed = 0  # records whose transformation was committed
    transactions = 0
    aborted_on_purpose = False
    committed = {}  # partition -> offset committed in a transaction
    while True:
        if time.monotonic() > deadline:
            raise RuntimeError("%d of %d records processed, offsets %s committed within %.0f s"
                               % (processed, args.expected, committed, RUN_DEADLINE_S))
        msgs = []
        for m in consumer.consume(num_messages=100, timeout=0.2):
            if m.error() is None:
                msgs.append(m)
            else:
                log("consumer error: %s" % m.error())
        positions = [tp for tp in consumer.position(consumer.assignment()) if tp.offset >= 0]
        if not msgs:
            if processed < args.expected:
                continue
            # Everything is processed, but the position may still move past transaction markers
            # (control records the consumer skips after the last record). Commit it in a transaction
            # of offsets alone, as an application does, until the group has the input's end.
            moved = [tp for tp in positions if committed.get(tp.partition) != tp.offset]
            if moved:
                p.begin_transaction()
                p.send_offsets_to_transaction(moved, consumer.consumer_group_metadata(), OP_TIMEOUT_S)
                p.commit_transaction(OP_TIMEOUT_S)
                transactions += 1
                committed.update({tp.partition: tp.offset for tp in moved})
                emit({"type": "transaction", "outcome": "committed", "records": 0,
                      "offsets": {str(tp.partition): tp.offset for tp in moved}})
            ends = {tp.partition: consumer.get_watermark_offsets(tp, OP_TIMEOUT_S, False)[1]
                    for tp in consumer.assignment()}
            if ends and all(committed.get(partition) == end for partition, end in ends.items()):
                break
            continue
        p.begin_transaction()
        for m in msgs:
            p.produce(args.output, key=m.key(), value=b"out:" + m.value(), partition=m.partition())
        p.send_offsets_to_transaction(positions, consumer.consumer_group_metadata(), OP_TIMEOUT_S)
        if not aborted_on_purpose:
            # The first transaction is aborted after its records were written and its offsets sent:
            # neither its output nor its offsets may count. Rewind to the committed offsets and redo it.
            flush(p)
            p.abort_transaction(OP_TIMEOUT_S)
            aborted_on_purpose = True
            for tp in consumer.committed(consumer.assignment(), OP_TIMEOUT_S):
                if tp.offset < 0:  # nothing committed yet: the start of the partition
                    tp.offset = confluent_kafka.OFFSET_BEGINNING
                consumer.seek(tp)
            emit({"type": "transaction", "outcome": "aborted", "records": len(msgs),
                  "offsets": {str(tp.partition): tp.offset for tp in positions}})
            continue
        p.commit_transaction(OP_TIMEOUT_S)
        transactions += 1
        processed += len(msgs)
        committed.update({tp.partition: tp.offset for tp in positions})
        emit({"type": "transaction", "outcome": "committed", "records": len(msgs),
              "offsets": {str(tp.partition): tp.offset for tp in positions}})
    consumer.close()
    emit({"type": "done", "processed": processed, "transactions": transactions, "errors": errors})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("mode", choices=["transactions", "fencing", "ctp"])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic")
    parser.add_argument("--partitions", type=int)
    parser.add_argument("--transactional-id", required=True)
    parser.add_argument("--transactions", type=int)
    parser.add_argument("--records", type=int)
    parser.add_argument("--abort", default="")
    parser.add_argument("--input")
    parser.add_argument("--output")
    parser.add_argument("--group")
    parser.add_argument("--expected", type=int)
    parser.add_argument("--then", choices=["produce", "commit"], default="produce")
    args = parser.parse_args()
    emit({"type": "client", "client": "confluent-kafka-python", "version": confluent_kafka.version()[0],
          "librdkafka": confluent_kafka.libversion()[0]})
    {"transactions": mode_transactions, "fencing": mode_fencing, "ctp": mode_ctp}[args.mode](args)


if __name__ == "__main__":
    main()
