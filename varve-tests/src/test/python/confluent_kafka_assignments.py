#!/usr/bin/python3
"""Manual replica assignments through librdkafka's admin API (python3-confluent-kafka), for varve-tests'
ManualReplicaAssignmentTest.

  --bootstrap B --topic T --assignment "1,2;2,3" --grow "3,1" --unknown 9
      Creates T with the given assignment (one replica list per partition, ';' between partitions),
      then a topic T-bad whose only partition names the unknown broker, then grows T by one partition
      placed as --grow, then tries to grow it once more onto the unknown broker. Produces one record
      ("<topic>-<partition>") to every partition of T with acks=all.

Prints JSON lines: {"type": "client", ...}; {"type": "create"|"create-bad"|"grow"|"grow-bad", "code": c,
"message": m} (code null on success); {"type": "metadata", "partitions": [{"id", "leader", "replicas",
"isrs"}]}; {"type": "produced", "delivered": n, "errors": [...]}; {"type": "done"}. Exits 0 when it ran
to its end; the test judges.
"""

import argparse
import json
import time

import confluent_kafka
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

WAIT_S = 30


def replicas(spec):
    return [[int(b) for b in part.split(",")] for part in spec.split(";")]


def outcome(kind, futures):
    for _, f in futures.items():
        try:
            f.result(WAIT_S)
            print(json.dumps({"type": kind, "code": None, "message": None}), flush=True)
        except confluent_kafka.KafkaException as e:
            err = e.args[0]
            print(json.dumps({"type": kind, "code": err.name(), "message": err.str()}), flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--assignment", required=True)
    parser.add_argument("--grow", required=True)
    parser.add_argument("--unknown", type=int, required=True)
    args = parser.parse_args()
    print(json.dumps({"type": "client", "client": "confluent-kafka-python", "version": confluent_kafka.version()[0],
                      "librdkafka": confluent_kafka.libversion()[0]}), flush=True)
    admin = AdminClient({"bootstrap.servers": args.bootstrap})
    assignment = replicas(args.assignment)
    grow = replicas(args.grow)

    outcome("create", admin.create_topics([NewTopic(args.topic, len(assignment), replica_assignment=assignment)],
                                          operation_timeout=WAIT_S))
    outcome("create-bad", admin.create_topics([NewTopic(args.topic + "-bad", 1, replica_assignment=[[1, args.unknown]])],
                                              operation_timeout=WAIT_S))
    total = len(assignment) + len(grow)
    outcome("grow", admin.create_partitions([NewPartitions(args.topic, total, replica_assignment=grow)],
                                            operation_timeout=WAIT_S))
    outcome("grow-bad", admin.create_partitions([NewPartitions(args.topic, total + 1, replica_assignment=[[args.unknown, 1]])],
                                                operation_timeout=WAIT_S))

    # this client's view of the topic, once it has every partition with a leader
    deadline = time.monotonic() + WAIT_S
    partitions = []
    while time.monotonic() < deadline:
        md = admin.list_topics(args.topic, timeout=10).topics.get(args.topic)
        partitions = [] if md is None or md.error is not None else sorted(md.partitions.values(), key=lambda p: p.id)
        if len(partitions) == total and all(p.leader >= 0 for p in partitions):
            break
        time.sleep(0.2)
    print(json.dumps({"type": "metadata", "partitions": [
        {"id": p.id, "leader": p.leader, "replicas": list(p.replicas), "isrs": list(p.isrs)} for p in partitions]}), flush=True)

    delivered = []
    errors = []

    def report(err, msg):
        if err is not None:
            errors.append(str(err))
        else:
            delivered.append(msg.partition())

    producer = Producer({"bootstrap.servers": args.bootstrap, "acks": "all", "message.timeout.ms": WAIT_S * 1000})
    for p in range(total):
        producer.produce(args.topic, value=("%s-%d" % (args.topic, p)).encode(), partition=p, on_delivery=report)
    producer.flush(WAIT_S)
    print(json.dumps({"type": "produced", "delivered": len(delivered), "errors": errors[:5]}), flush=True)
    print(json.dumps({"type": "done"}), flush=True)


if __name__ == "__main__":
    main()
