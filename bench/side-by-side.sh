#!/usr/bin/env bash
# Side-by-side throughput: Varve and Apache Kafka 4.4 on this machine, in one run, same heap.
#
#   bench/side-by-side.sh [RECORDS]        (default 1000000 records of 1 KB)
#
# Produce: Kafka's own ProducerPerformance (1 KB records, acks=1, one partition, unthrottled).
# Fetch:   dev.varve.bench.FetchThroughput (a stock KafkaConsumer with assign(), reading the same
#          partition from the beginning).
# Group:   Kafka's own ConsumerPerformance in a consumer group (join, fetch, commit), its
#          fetch.MB.sec column (rebalance time excluded); both brokers with group.initial.rebalance.delay.ms=0.
# Both brokers get the same heap (HEAP, default 1G) and run one at a time so they do not compete.
# Needs the peer-Kafka script (KAFKA_PEER, default ../shared/peer/kafka relative to the repo).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
records=${1:-1000000}
heap=${HEAP:-1G}
peer=${KAFKA_PEER:-$root/../shared/peer/kafka}
work=$(mktemp -d /tmp/varve-side-by-side.XXXXXX)
trap 'kill ${varve_pid:-} 2>/dev/null || true; PEER_DATA=$work/kafka "$peer" stop >/dev/null 2>&1 || true' EXIT

[ -x "$peer" ] || { echo "no peer Kafka script at $peer (set KAFKA_PEER)" >&2; exit 2; }
(cd "$root" && ./mvnw -q -B -Dmaven.test.skip=true -pl varve-cli,varve-bench -am package) >&2
bench_jar="$root/varve-bench/target/benchmarks.jar"
tool() { "$peer" tool "$@"; }

produce() { # bootstrap topic -> MB/s
  tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$1" --create --topic "$2" \
    --partitions 1 --replication-factor 1 >/dev/null
  tool org.apache.kafka.tools.ProducerPerformance --topic "$2" --num-records "$records" --record-size 1000 \
    --throughput -1 --producer-props bootstrap.servers="$1" acks=1 2>/dev/null | tail -1 | tee -a "$work/log" \
    | sed -E 's/.*\(([0-9.]+) MB\/sec\).*/\1/'
}
fetch() { # bootstrap topic -> MB/s
  java -Xmx1g -cp "$bench_jar" dev.varve.bench.FetchThroughput "$1" "$2" "$records" 2>/dev/null | tee -a "$work/log" \
    | sed -E 's/.*MB\/s=([0-9.]+).*/\1/'
}

group_consume() { # bootstrap topic -> MB/s (fetch.MB.sec: the group's join time excluded)
  tool org.apache.kafka.tools.ConsumerPerformance --bootstrap-server "$1" --topic "$2" \
    --num-records "$records" --group "perf-$RANDOM" --timeout 60000 2>/dev/null | tail -1 | tee -a "$work/log" \
    | awk -F', *' '{print $9}'
}

echo "== Varve" >&2
cat > "$work/varve.properties" <<PROPS
listeners=PLAINTEXT://127.0.0.1:29092
log.dirs=$work/varve-data
group.initial.rebalance.delay.ms=0
PROPS
VARVE_JAVA_OPTS="-Xms$heap -Xmx$heap -XX:+UseG1GC" "$root/bin/varve" server --config "$work/varve.properties" \
  > "$work/varve.log" 2>&1 &
varve_pid=$!
for _ in $(seq 1 60); do grep -q "started in" "$work/varve.log" && break; sleep 0.5; done
v_prod=$(produce 127.0.0.1:29092 bench)
v_fetch=$(fetch 127.0.0.1:29092 bench)
v_group=$(group_consume 127.0.0.1:29092 bench)
kill -TERM $varve_pid; wait $varve_pid || true; varve_pid=

echo "== Apache Kafka" >&2
kboot=$(PEER_DATA=$work/kafka PEER_HEAP=$heap "$peer" start 1 | tail -1)
k_prod=$(produce "$kboot" bench)
k_fetch=$(fetch "$kboot" bench)
k_group=$(group_consume "$kboot" bench)
PEER_DATA=$work/kafka "$peer" stop >/dev/null

printf '\n%-34s %12s %12s %8s\n' "workload ($records x 1 KB)" "Varve MB/s" "Kafka MB/s" "ratio"
printf '%-34s %12s %12s %8.2f\n' "produce, acks=1, 1 partition" "$v_prod" "$k_prod" "$(awk -v a="$v_prod" -v b="$k_prod" 'BEGIN{print a/b}')"
printf '%-34s %12s %12s %8.2f\n' "fetch from start, 1 partition" "$v_fetch" "$k_fetch" "$(awk -v a="$v_fetch" -v b="$k_fetch" 'BEGIN{print a/b}')"
printf '%-34s %12s %12s %8.2f\n' "consume in a group, 1 partition" "$v_group" "$k_group" "$(awk -v a="$v_group" -v b="$k_group" 'BEGIN{print a/b}')"
echo "(details: $work/log)"
