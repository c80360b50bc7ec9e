#!/usr/bin/python3
"""A secured round trip of librdkafka (python3-confluent-kafka) for varve-tests' NativeSecureClientsTest.

  --bootstrap B --topic T --records N [--config key=value ...]
      Produces N records (value "secure-<i>-" followed by i % 200 bytes of "x") to partition 0 of T,
      waiting for every delivery report, then reads partition 0 from the beginning until N records
      came back. Every --config pair goes to both clients (security.protocol, sasl.*, ssl.*).

Prints JSON lines: {"type": "produced", "delivered": n, "errors": [...]} and
{"type": "consumed", "values": [...], "error": e}. Exits 0 when it ran to its end; the test judges.
"""

import argparse
import json
import sys
import time

import confluent_kafka
from confluent_kafka import Consumer, Producer, TopicPartition

DEADLINE_S = 45.0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--records", type=int, required=True)
    parser.add_argument("--config", action="append", default=[])
    args = parser.parse_args()
    print(json.dumps({"type": "client", "client": "confluent-kafka-python", "version": confluent_kafka.version()[0],
                      "librdkafka": confluent_kafka.libversion()[0]}), flush=True)
    security = dict(pair.split("=", 1) for pair in args.config)
    deadline = time.monotonic() + DEADLINE_S

    delivered = []
    errors = []

    def report(err, msg):
        if err is not None:
            errors.append(str(err))
        else:
            delivered.append(msg.offset())

    producer = Producer(dict(security, **{"bootstrap.servers": args.bootstrap, "acks": "all",
                                          "message.timeout.ms": 30000}))
    for i in range(args.records):
        producer.produce(args.topic, value=("secure-%d-" % i + "x" * (i % 200)).encode(), partition=0,
                         on_delivery=report)
        producer.poll(0)
    remaining = producer.flush(30)
    print(json.dumps({"type": "produced", "delivered": len(delivered), "errors": errors[:5],
                      "undelivered": remaining}), flush=True)

    consumer = Consumer(dict(security, **{"bootstrap.servers": args.bootstrap, "group.id": "secure-py",
                                          "enable.auto.commit": False, "error_cb": lambda e: errors.append(str(e))}))
    consumer.assign([TopicPartition(args.topic, 0, 0)])
    values = []
    error = None
    while len(values) < args.records and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            error = str(msg.error())
            continue
        values.append(msg.value().decode())
    consumer.close()
    print(json.dumps({"type": "consumed", "values": values, "error": error, "client_errors": errors[:5]}), flush=True)
    print(json.dumps({"type": "done"}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
