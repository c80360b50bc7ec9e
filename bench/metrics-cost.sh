#!/usr/bin/env bash
# What Varve's metrics cost: produce throughput of this tree against a build without them, one run.
#
#   bench/metrics-cost.sh [BASE] [ROUNDS] [RECORDS]
#     BASE     the commit to compare with (default 42cad79, the last commit before metrics)
#     ROUNDS   alternating rounds per build (default 3); RECORDS per round (default 1000000 records of 1 KB)
#
# Each round starts a fresh single-node broker of each build in turn (same heap), creates a topic of 16
# partitions and runs Kafka's own ProducerPerformance (acks=1, unthrottled) against it. The scrape side
# is exercised too: /metrics is read every second during this tree's runs (as a Prometheus server would,
# only more often). Prints each build's median MB/s and their ratio.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
base=${1:-42cad79}
rounds=${2:-3}
records=${3:-1000000}
heap=${HEAP:-1G}
peer=${KAFKA_PEER:-$root/../shared/peer/kafka}
work=$(mktemp -d /tmp/varve-metrics-cost.XXXXXX)
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null || true
  git -C "$root" worktree remove --force "$work/base" >/dev/null 2>&1 || true
}
trap cleanup EXIT
[ -x "$peer" ] || { echo "no peer Kafka script at $peer (set KAFKA_PEER)" >&2; exit 2; }

echo "== building this tree and $base" >&2
(cd "$root" && ./mvnw -q -B -Dmaven.test.skip=true -pl varve-cli -am package) >&2
git -C "$root" worktree add --detach "$work/base" "$base" >/dev/null 2>&1
(cd "$work/base" && ./mvnw -q -B -Dmaven.test.skip=true -pl varve-cli -am package) >&2
head_jar="$root/varve-cli/target/varve.jar"
base_jar="$work/base/varve-cli/target/varve.jar"

run() { # name jar scrape? -> MB/s
  local dir="$work/$1-$RANDOM"
  mkdir -p "$dir"
  printf 'listeners=PLAINTEXT://127.0.0.1:29092\nlog.dirs=%s/data\nvarve.admin.listener=127.0.0.1:29094\n' "$dir" > "$dir/server.properties"
  java -Xms"$heap" -Xmx"$heap" -XX:+UseG1GC -jar "$2" server --config "$dir/server.properties" > "$dir/server.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 120); do grep -q "started in" "$dir/server.log" && break; sleep 0.5; done
  "$peer" tool org.apache.kafka.tools.TopicCommand --bootstrap-server 127.0.0.1:29092 --create --topic cost \
    --partitions 16 --replication-factor 1 >/dev/null 2>&1
  local scraper=
  if [ "$3" = scrape ]; then
    (while sleep 1; do curl -s -o /dev/null http://127.0.0.1:29094/metrics || true; done) & scraper=$!
  fi
  local out
  out=$("$peer" tool org.apache.kafka.tools.ProducerPerformance --topic cost --num-records "$records" --record-size 1000 \
    --throughput -1 --producer-props bootstrap.servers=127.0.0.1:29092 acks=1 2>/dev/null | tail -1)
  [ -n "$scraper" ] && kill "$scraper" 2>/dev/null || true
  echo "$1: $out" >> "$work/log"
  kill -TERM "$pid"; wait "$pid" || true; pid=
  sed -E 's/.*\(([0-9.]+) MB\/sec\).*/\1/' <<<"$out"
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

head_runs=(); base_runs=()
for r in $(seq 1 "$rounds"); do
  echo "== round $r" >&2
  base_runs+=("$(run base "$base_jar" none)")
  head_runs+=("$(run head "$head_jar" scrape)")
done
h=$(printf '%s\n' "${head_runs[@]}" | median)
b=$(printf '%s\n' "${base_runs[@]}" | median)
printf '\n%-44s %10s %10s %8s\n' "produce, acks=1, 16 partitions, MB/s (median)" "metrics" "$base" "ratio"
printf '%-44s %10s %10s %8.3f\n' "$rounds rounds of $records x 1 KB" "$h" "$b" "$(awk -v a="$h" -v b="$b" 'BEGIN{print a/b}')"
echo "runs: metrics ${head_runs[*]}; $base ${base_runs[*]} (details: $work/log)"
