#!/usr/bin/python3
"""Static group members (KIP-345) of librdkafka (python3-confluent-kafka) against a broker, for
varve-tests' NativeStaticMembersTest: the scenario of librdkafka's own test 0102_static_group_rebalance.

Writes what happened to stdout as JSON lines (a "type" field each); the Java test judges them.
Diagnostics go to stderr. Exits 0 when the scenario ran to its end, whatever the broker answered.

  restart  --bootstrap B --topic T --group G --session-timeout-ms S [--restart first|second]
      Static member "first" (group.instance.id G-first) joins alone and gets every partition; static
      member "second" joins and the group rebalances between them. Then one of them (--restart, default
      first: the group's leader, as in librdkafka's test) is closed (a static member sends no
      LeaveGroup) and a new consumer with the same group.instance.id subscribes again, well within the
      session timeout. Both are polled until the restarted one has its assignment, then for a few more
      seconds. Every rebalance callback is a line {"type": "event", "phase", "member", "event",
      "partitions"}; phases are "join", "restart" and "end" (closing both).
"""

import argparse
import json
import sys
import time

from confluent_kafka import Consumer
import confluent_kafka

# Bounds on every wait, so that a broker that stops answering fails the run instead of hanging it.
OP_TIMEOUT_S = 20.0
# How long both members keep polling after the restarted one has its partitions: a rebalance the
# restart triggered would reach the other member within this (its next heartbeat, 1 s apart).
SETTLE_S = 4.0


def emit(obj):
    sys.stdout.write(json.dumps(obj, sort_keys=True) + "\n")
    sys.stdout.flush()


def log(msg):
    sys.stderr.write("confluent_kafka_static_members: %s\n" % msg)
    sys.stderr.flush()


class Member:
    """One static consumer and the rebalance events it has seen."""

    def __init__(self, args, name, state):
        self.name = name
        self.state = state
        self.assigned = None
        conf = {
            "bootstrap.servers": args.bootstrap,
            "group.id": args.group,
            "group.instance.id": "%s-%s" % (args.group, name),
            "session.timeout.ms": args.session_timeout_ms,
            "heartbeat.interval.ms": 1000,
            "max.poll.interval.ms": 60000,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "partition.assignment.strategy": "range",
            "topic.metadata.refresh.interval.ms": 60000,
        }
        self.consumer = Consumer(conf)
        self.consumer.subscribe([args.topic], on_assign=self.on_assign, on_revoke=self.on_revoke)

    def record(self, event, partitions):
        parts = sorted(p.partition for p in partitions)
        emit({"type": "event", "phase": self.state["phase"], "member": self.name, "event": event,
              "partitions": parts, "t": round(time.time() - self.state["start"], 3)})
        return parts

    def on_assign(self, consumer, partitions):
        self.assigned = self.record("assign", partitions)
        consumer.assign(partitions)

    def on_revoke(self, consumer, partitions):
        self.record("revoke", partitions)
        self.assigned = None
        consumer.unassign()

    def poll(self):
        msg = self.consumer.poll(0.1)
        if msg is not None and msg.error() is not None:
            log("%s: %s" % (self.name, msg.error()))


def poll_until(members, done, what):
    deadline = time.time() + OP_TIMEOUT_S
    while not done():
        if time.time() > deadline:
            emit({"type": "timeout", "waiting_for": what})
            return False
        for m in members:
            m.poll()
    return True


def restart(args):
    state = {"phase": "join", "start": time.time()}
    first = Member(args, "first", state)
    if not poll_until([first], lambda: first.assigned, "first's assignment"):
        return
    second = Member(args, "second", state)
    # the group rebalances: first gives up some partitions, second gets them
    if not poll_until([first, second], lambda: second.assigned and first.assigned
                      and len(first.assigned) + len(second.assigned) == args.partitions, "a balanced assignment"):
        return
    members = {"first": first, "second": second}
    emit({"type": "balanced", "first": first.assigned, "second": second.assigned})

    name = args.restart
    other = members["second" if name == "first" else "first"]
    old = members[name]
    state["phase"] = "restart"
    restart_started = time.time()
    old.consumer.close()  # a static member leaves no LeaveGroup behind: its place waits for it
    emit({"type": "closed", "member": name})
    back = Member(args, name, state)
    if not poll_until([back, other], lambda: back.assigned is not None, "the restarted member's assignment"):
        return
    emit({"type": "rejoined", "member": name, "partitions": back.assigned,
          "seconds": round(time.time() - restart_started, 3)})
    end = time.time() + SETTLE_S
    while time.time() < end:
        back.poll()
        other.poll()
    emit({"type": "settled", "first": (back if name == "first" else other).assigned,
          "second": (back if name == "second" else other).assigned})
    state["phase"] = "end"
    back.consumer.close()
    other.consumer.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["restart"])
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--topic", required=True)
    p.add_argument("--partitions", type=int, required=True)
    p.add_argument("--group", required=True)
    p.add_argument("--session-timeout-ms", type=int, default=30000)
    p.add_argument("--restart", choices=["first", "second"], default="first")
    args = p.parse_args()
    emit({"type": "client", "name": "librdkafka", "version": confluent_kafka.libversion()[0],
          "binding": confluent_kafka.version()[0]})
    restart(args)
    emit({"type": "done"})


if __name__ == "__main__":
    main()
