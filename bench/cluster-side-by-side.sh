#!/usr/bin/env bash
# Side-by-side on 3-node clusters: Varve (bin/varve cluster up --nodes 3) and Apache Kafka 4.4
# (the peer script, 3 KRaft nodes), one after the other on this machine, same heap per node.
#
#   bench/cluster-side-by-side.sh [RECORDS] [RATE]     (defaults 300000 records of 1 KB, 2000 records/s)
#
# Topic: 3 partitions, replication factor 3, min.insync.replicas=2. Producer: Kafka's own
# ProducerPerformance with acks=all and idempotence (its default).
#   1. throughput: RECORDS records as fast as the cluster takes them (MB/s);
#   2. latency: 30 seconds of records at a fixed RATE records/s; ProducerPerformance's p50/p99/p99.9
#      (send to acknowledgement, so the replication round trip is included).
# Environment: HEAP per node (default 1G), KAFKA_PEER (default ../shared/peer/kafka).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
records=${1:-300000}
rate=${2:-2000}
heap=${HEAP:-1G}
peer=${KAFKA_PEER:-$root/../shared/peer/kafka}
work=$(mktemp -d /tmp/varve-cluster-bench.XXXXXX)
cleanup() {
  "$root/bin/varve" cluster down --dir "$work/varve" >/dev/null 2>&1 || true
  PEER_DATA=$work/kafka "$peer" stop >/dev/null 2>&1 || true
}
trap cleanup EXIT
[ -x "$peer" ] || { echo "no peer Kafka script at $peer (set KAFKA_PEER)" >&2; exit 2; }
(cd "$root" && ./mvnw -q -B -Dmaven.test.skip=true -pl varve-cli -am package) >&2
tool() { "$peer" tool "$@"; }

run() { # name bootstrap -> "MBps p50 p99 p999"
  local boot=$2 topic="bench-$RANDOM"
  tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$boot" --create --topic "$topic" \
    --partitions 3 --replication-factor 3 --config min.insync.replicas=2 >/dev/null 2>&1
  sleep 2
  local t l
  t=$(tool org.apache.kafka.tools.ProducerPerformance --topic "$topic" --num-records "$records" --record-size 1000 \
      --throughput -1 --producer-props bootstrap.servers="$boot" acks=all 2>/dev/null | tail -1)
  echo "$1 throughput: $t" >> "$work/log"
  l=$(tool org.apache.kafka.tools.ProducerPerformance --topic "$topic" --num-records $((rate * 30)) --record-size 1000 \
      --throughput "$rate" --producer-props bootstrap.servers="$boot" acks=all 2>/dev/null | tail -1)
  echo "$1 latency: $l" >> "$work/log"
  local mbps p50 p99 p999
  mbps=$(sed -E 's/.*\(([0-9.]+) MB\/sec\).*/\1/' <<<"$t")
  p50=$(sed -E 's/.* ([0-9]+) ms 50th.*/\1/' <<<"$l")
  p99=$(sed -E 's/.* ([0-9]+) ms 99th.*/\1/' <<<"$l")
  p999=$(sed -E 's/.* ([0-9]+) ms 99.9th.*/\1/' <<<"$l")
  echo "$mbps $p50 $p99 $p999"
}

echo "== Varve, 3 nodes" >&2
vboot=$(VARVE_JAVA_OPTS="-Xms$heap -Xmx$heap -XX:+UseG1GC" "$root/bin/varve" cluster up --nodes 3 --dir "$work/varve" \
  --base-port 29092 2>>"$work/log")
read -r v_mb v_50 v_99 v_999 <<<"$(run varve "$vboot")"
"$root/bin/varve" cluster down --dir "$work/varve" >/dev/null 2>&1

echo "== Apache Kafka, 3 nodes" >&2
kboot=$(PEER_DATA=$work/kafka PEER_HEAP=$heap "$peer" start 3 | tail -1)
read -r k_mb k_50 k_99 k_999 <<<"$(run kafka "$kboot")"
PEER_DATA=$work/kafka "$peer" stop >/dev/null

ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b == 0) print "-"; else printf "%.2f", a/b }'; }
printf '\n%-44s %10s %10s %8s\n' "3 nodes, RF=3, min.insync.replicas=2, acks=all" "Varve" "Kafka" "ratio"
printf '%-44s %10s %10s %8s\n' "throughput, MB/s ($records x 1 KB)" "$v_mb" "$k_mb" "$(ratio "$v_mb" "$k_mb")"
printf '%-44s %10s %10s %8s\n' "latency p50, ms (at $rate records/s)" "$v_50" "$k_50" "$(ratio "$v_50" "$k_50")"
printf '%-44s %10s %10s %8s\n' "latency p99, ms" "$v_99" "$k_99" "$(ratio "$v_99" "$k_99")"
printf '%-44s %10s %10s %8s\n' "latency p99.9, ms" "$v_999" "$k_999" "$(ratio "$v_999" "$k_999")"
echo "(details: $work/log)"
