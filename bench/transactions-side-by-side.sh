#!/usr/bin/env bash
# Transactions, side by side: Varve and Apache Kafka 4.4 one after the other on this machine, 3 nodes
# (each broker+controller), RF=3, min.insync.replicas=2, the same heap per node. Prints a table with
# ratios (the issue's target: at least Kafka's throughput for both).
#
#   bench/transactions-side-by-side.sh [RECORDS] [PARTITIONS]   (defaults 300000 and 12)
#
# For each system:
#   1. ProducerPerformance with --transactional-id and --transaction-duration-ms 100 (a commit every
#      100 ms), RECORDS records of 1 KB, acks=all: MB/s and failed sends;
#   2. ConsumerPerformance with isolation.level=read_committed over those records: MB/s.
# Both run with group.initial.rebalance.delay.ms=0 (the peer Kafka's setting).
# Environment: HEAP per node (default 2G), KAFKA_PEER (default ../shared/peer/kafka).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
records=${1:-300000}
parts=${2:-12}
heap=${HEAP:-2G}
peer=${KAFKA_PEER:-$root/../shared/peer/kafka}
work=$(mktemp -d /tmp/varve-txn-bench.XXXXXX)
cleanup() {
  "$root/bin/varve" cluster down --dir "$work/varve" >/dev/null 2>&1 || true
  PEER_DATA=$work/kafka "$peer" stop >/dev/null 2>&1 || true
}
trap cleanup EXIT
[ -x "$peer" ] || { echo "no peer Kafka script at $peer (set KAFKA_PEER)" >&2; exit 2; }
(cd "$root" && ./mvnw -q -B -Dmaven.test.skip=true -pl varve-cli -am package) >&2
export VARVE_NO_BUILD=1 # the run measures this build, whatever happens to the tree meanwhile
tool() { "$peer" tool "$@"; }

# $1 name, $2 bootstrap: prints "producer-MB/s failed-sends consumer-MB/s"
steps() {
  local name=$1 boot=$2 out mb errs cmb
  tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$boot" --create --topic txn --partitions "$parts" \
      --replication-factor 3 --config min.insync.replicas=2 >>"$work/log" 2>&1
  sleep 5 # leaders elected and followers in sync
  out=$(tool org.apache.kafka.tools.ProducerPerformance --topic txn --num-records "$records" --record-size 1000 \
      --throughput -1 --transactional-id "bench-$name" --transaction-duration-ms 100 \
      --producer-props bootstrap.servers="$boot" acks=all 2>"$work/$name-produce.err" | tail -1)
  echo "$name produce: $out" >> "$work/log"
  mb=$(sed -E 's/.*\(([0-9.]+) MB\/sec\).*/\1/' <<<"$out")
  errs=$(grep -c 'Exception' "$work/$name-produce.err" || true)
  out=$(tool org.apache.kafka.tools.ConsumerPerformance --bootstrap-server "$boot" --topic txn --num-records "$records" \
      --command-property isolation.level=read_committed --timeout 60000 2>>"$work/log" | tail -1)
  echo "$name consume: $out" >> "$work/log"
  # CSV: start.time, end.time, data.consumed.in.MB, MB.sec, ...
  cmb=$(awk -F', *' '{print $4}' <<<"$out")
  echo "$mb $errs $cmb"
}

echo "== Varve, 3 nodes" >&2
# group.initial.rebalance.delay.ms=0 as the peer Kafka runs (its config), so both joins are timed alike
vboot=$(VARVE_JAVA_OPTS="-Xms$heap -Xmx$heap -XX:+UseG1GC" "$root/bin/varve" cluster up --nodes 3 --dir "$work/varve" \
    --base-port 29092 --config group.initial.rebalance.delay.ms=0 2>>"$work/log")
read -r v_mb v_err v_cmb <<<"$(steps varve "$vboot")"
"$root/bin/varve" cluster down --dir "$work/varve" >/dev/null 2>&1

echo "== Apache Kafka, 3 nodes" >&2
kboot=$(PEER_DATA=$work/kafka PEER_HEAP=$heap "$peer" start 3 | tail -1)
read -r k_mb k_err k_cmb <<<"$(steps kafka "$kboot")"
PEER_DATA=$work/kafka "$peer" stop >/dev/null

ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b == 0 || a == "" || b == "") print "-"; else printf "%.2f", a/b }'; }
echo "| 3 nodes, RF=3, $parts partitions, $records x 1 KB | Varve | Kafka | ratio |"
echo "|---|---|---|---|"
echo "| transactional produce (a commit every 100 ms, acks=all), MB/s | $v_mb | $k_mb | $(ratio "$v_mb" "$k_mb") |"
echo "| failed sends | $v_err | $k_err | |"
echo "| read_committed consume, MB/s | $v_cmb | $k_cmb | $(ratio "$v_cmb" "$k_cmb") |"
echo "(details: $work/log)"
