#!/usr/bin/env bash
# Control-plane scale, side by side: Varve and Apache Kafka 4.4 one after the other on this machine,
# 3 nodes (each broker+controller), RF=3, the same heap per node. Prints a table with ratios.
#
#   bench/scale-side-by-side.sh [PARTITIONS] [SINGLE_NODE_PARTITIONS]   (defaults 2000 and 10000)
#
# Steps, for each system:
#   1. one CreateTopics of PARTITIONS partitions, RF=3: seconds until created, and until every partition
#      has a leader and 3 replicas in sync;
#   2. 100 one-partition CreateTopics one at a time, then 100 DeleteTopics: rates and errors;
#   3. acks=all ProducerPerformance (idempotent, its default) over the PARTITIONS partitions: MB/s and
#      failed sends;
#   4. idle: broker CPU (all three processes, % of one core) over 30 s with PARTITIONS partitions, 10 s after
#      the produce run, and again settled (100 s after it, when JIT compilation and GC have quietened);
#   5. kill -9 of a broker that is not the active controller (node 2, or 3 if 2 is): seconds until no
#      partition is led by it; restart: seconds until all are back with 3 in sync;
#   6. one node with SINGLE_NODE_PARTITIONS partitions (RF=1, in topics of 1,000: Kafka refuses larger
#      CreateTopics): seconds from process start to every partition led again after a clean restart;
#      heap used after a full GC, RSS, open file descriptors and memory mappings once ready.
# Environment: HEAP per node (default 2G), KAFKA_PEER (default ../shared/peer/kafka), RECORDS for step 3
# (default 200000 records of 1 KB); ONLY=varve runs only Varve's 3-node steps (a quick check while
# working; the ratios need the whole run).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
parts=${1:-2000}
single=${2:-10000}
heap=${HEAP:-2G}
records=${RECORDS:-200000}
peer=${KAFKA_PEER:-$root/../shared/peer/kafka}
work=$(mktemp -d /tmp/varve-scale-bench.XXXXXX)
cleanup() {
  "$root/bin/varve" cluster down --dir "$work/varve" >/dev/null 2>&1 || true
  "$root/bin/varve" cluster down --dir "$work/varve1" >/dev/null 2>&1 || true
  PEER_DATA=$work/kafka "$peer" stop >/dev/null 2>&1 || true
  PEER_DATA=$work/kafka1 "$peer" stop >/dev/null 2>&1 || true
}
trap cleanup EXIT
[ -x "$peer" ] || { echo "no peer Kafka script at $peer (set KAFKA_PEER)" >&2; exit 2; }
(cd "$root" && ./mvnw -q -B -Dmaven.test.skip=true -pl varve-cli,varve-bench -am package) >&2
# the run measures this build: bin/varve must not rebuild when the tree is edited during the run
export VARVE_NO_BUILD=1
bench_jar="$root/varve-bench/target/benchmarks.jar"
probe() { java -Xmx512m -cp "$bench_jar" dev.varve.bench.ScaleProbe "$@" 2>>"$work/log"; }
now_ms() { date +%s%3N; }
tool() { "$peer" tool "$@"; }
cpu_ticks() { local t=0; for p in "$@"; do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done; echo "$t"; }
cpu_percent_30s() { # CPU of the given processes over the next 30 s, % of one core
  local t0 t1; t0=$(cpu_ticks "$@"); sleep 30; t1=$(cpu_ticks "$@")
  awk -v d=$((t1 - t0)) -v hz="$(getconf CLK_TCK)" 'BEGIN{printf "%.1f", 100 * d / hz / 30}'
}
rss_mb() { awk '/VmRSS/ {printf "%.0f", $2 / 1024}' "/proc/$1/status"; }
heap_mb() { # used heap after a full GC, MB
  jcmd "$1" GC.run >/dev/null 2>&1 || true
  jcmd "$1" GC.heap_info 2>/dev/null | awk '/garbage-first heap/ {for (i=1;i<=NF;i++) if ($i=="used") {v=$(i+1); sub("K,?","",v); printf "%.0f", v/1024}}'
}

# $1 name, $2 bootstrap, $3 "pid of node 1 .. 3" function, $4 "active controller id" function,
# $5 kill-node-N fn, $6 restart-node-N fn
cluster_steps() {
  local name=$1 boot=$2 pids_fn=$3 controller_fn=$4 kill_fn=$5 restart_fn=$6
  local created ready
  read -r created ready <<<"$(probe create-ready "$boot" big "$parts" 3 300)"
  echo "$name create $created ready $ready" >> "$work/log"
  local creates
  creates=$(probe creates "$boot" 100)
  echo "$name creates $creates" >> "$work/log"
  local out mbps errs
  out=$(tool org.apache.kafka.tools.ProducerPerformance --topic big --num-records "$records" --record-size 1000 \
      --throughput -1 --producer-props bootstrap.servers="$boot" acks=all 2>"$work/$name-produce.err" | tail -1)
  echo "$name produce: $out" >> "$work/log"
  mbps=$(sed -E 's/.*\(([0-9.]+) MB\/sec\).*/\1/' <<<"$out")
  errs=$(grep -c 'Exception' "$work/$name-produce.err" || true)
  sleep 10
  local pids idle settled
  pids=$($pids_fn)
  idle=$(cpu_percent_30s $pids)
  sleep 60 # settled: the JIT compilers and the collector done with the produce run
  settled=$(cpu_percent_30s $pids)
  # the victim is a broker that is not the active controller, in both systems: a controller's death
  # adds an election and, in both, fresh broker sessions at the new controller
  local since away back controller victim=2
  controller=$($controller_fn)
  [ "$controller" = 2 ] && victim=3
  since=$(now_ms); $kill_fn "$victim"
  away=$(probe led-away "$boot" big "$victim" "$since" 300)
  # the start command runs beside the probe for both systems: Kafka's returns at once, `varve cluster up`
  # waits for the whole cluster to answer, which would otherwise put the probe's start after it
  since=$(now_ms); $restart_fn "$victim" & local starter=$!
  back=$(probe ready "$boot" big 3 "$since" 600)
  wait "$starter" || true
  echo "$name kill node $victim (controller $controller) away $away back $back idle-cpu $idle settled $settled" >> "$work/log"
  echo "$created $ready $creates $mbps $errs $idle $settled $away $back"
}

# ------------------------------------------------------------------- Varve, 3 nodes
echo "== Varve, 3 nodes" >&2
vopts="-Xms$heap -Xmx$heap -XX:+UseG1GC"
vboot=$(VARVE_JAVA_OPTS="$vopts" "$root/bin/varve" cluster up --nodes 3 --dir "$work/varve" --base-port 29092 2>>"$work/log")
v_pids() { cat "$work"/varve/node-*/pid; }
v_controller() { cat "$work"/varve/node-*/server.log | grep 'is the active controller' | sort | tail -1 | sed -E 's/.* Node ([0-9]+) is.*/\1/'; }
v_kill() { kill -9 "$(cat "$work/varve/node-$1/pid")"; }
v_restart() { VARVE_JAVA_OPTS="$vopts" "$root/bin/varve" cluster up --nodes 3 --dir "$work/varve" --base-port 29092 >/dev/null 2>>"$work/log"; }
read -r v_created v_ready v_crate v_drate v_cerr v_mb v_perr v_idle v_settled v_away v_back <<<"$(cluster_steps varve "$vboot" v_pids v_controller v_kill v_restart)"
"$root/bin/varve" cluster down --dir "$work/varve" >/dev/null 2>&1
if [ "${ONLY:-}" = varve ]; then
  grep '^varve ' "$work/log"
  exit 0
fi

# ------------------------------------------------------------------- Kafka, 3 nodes
echo "== Apache Kafka, 3 nodes" >&2
kboot=$(PEER_DATA=$work/kafka PEER_HEAP=$heap "$peer" start 3 | tail -1)
k_pids() { for i in 1 2 3; do PEER_DATA=$work/kafka "$peer" node-pid "$i"; done; }
k_controller() { tool org.apache.kafka.tools.MetadataQuorumCommand --bootstrap-server "$kboot" describe --status 2>/dev/null \
  | awk '/^LeaderId:/ {print $2}'; }
k_kill() { PEER_DATA=$work/kafka "$peer" node-kill "$1" KILL; }
k_restart() { PEER_DATA=$work/kafka PEER_HEAP=$heap "$peer" node-start "$1"; }
read -r k_created k_ready k_crate k_drate k_cerr k_mb k_perr k_idle k_settled k_away k_back <<<"$(cluster_steps kafka "$kboot" k_pids k_controller k_kill k_restart)"
PEER_DATA=$work/kafka "$peer" stop >/dev/null

# ------------------------------------------------------------------- one node, many partitions
echo "== one node, $single partitions" >&2
single_steps() { # $1 name $2 boot $3 pid fn $4 restart fn (returns after starting)
  probe create-ready "$2" "many*$(( (single + 999) / 1000 ))" "$single" 1 600 >> "$work/log"
  local since t
  since=$(now_ms); $4
  t=$(probe ready "$2" "many*$(( (single + 999) / 1000 ))" 1 "$since" 600)
  sleep 5
  local pid; pid=$($3)
  echo "$t $(heap_mb "$pid") $(rss_mb "$pid") $(ls "/proc/$pid/fd" | wc -l) $(wc -l < "/proc/$pid/maps")"
}
v1boot=$(VARVE_JAVA_OPTS="$vopts" "$root/bin/varve" cluster up --nodes 1 --dir "$work/varve1" --base-port 29092 2>>"$work/log")
v1_pid() { cat "$work/varve1/node-1/pid"; }
v1_restart() {
  "$root/bin/varve" cluster down --dir "$work/varve1" >/dev/null 2>&1
  VARVE_JAVA_OPTS="$vopts" "$root/bin/varve" cluster up --nodes 1 --dir "$work/varve1" --base-port 29092 >/dev/null 2>>"$work/log"
}
read -r v1_ready v1_heap v1_rss v1_fds v1_maps <<<"$(single_steps varve1 "$v1boot" v1_pid v1_restart)"
"$root/bin/varve" cluster down --dir "$work/varve1" >/dev/null 2>&1

k1boot=$(PEER_DATA=$work/kafka1 PEER_HEAP=$heap "$peer" start 1 | tail -1)
k1_pid() { PEER_DATA=$work/kafka1 "$peer" node-pid 1; }
k1_restart() {
  local p; p=$(k1_pid); kill "$p"; while kill -0 "$p" 2>/dev/null; do sleep 0.2; done
  PEER_DATA=$work/kafka1 PEER_HEAP=$heap "$peer" node-start 1
}
read -r k1_ready k1_heap k1_rss k1_fds k1_maps <<<"$(single_steps kafka1 "$k1boot" k1_pid k1_restart)"
PEER_DATA=$work/kafka1 "$peer" stop >/dev/null

ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b == 0 || a == "" || b == "") print "-"; else printf "%.2f", a/b }'; }
row() { printf '%-58s %10s %10s %8s\n' "$1" "$2" "$3" "$(ratio "$2" "$3")"; }
printf '\n%-58s %10s %10s %8s\n' "3 nodes, RF=3 ($parts partitions)" "Varve" "Kafka" "ratio"
row "CreateTopics $parts partitions: created, s" "$v_created" "$k_created"
row "  every partition led with 3 in sync, s" "$v_ready" "$k_ready"
row "100 one-partition CreateTopics one at a time, per s" "$v_crate" "$k_crate"
row "  then 100 DeleteTopics, per s" "$v_drate" "$k_drate"
printf '%-58s %10s %10s\n' "  errors" "$v_cerr" "$k_cerr"
row "acks=all produce over $parts partitions, MB/s" "$v_mb" "$k_mb"
printf '%-58s %10s %10s\n' "  failed sends" "$v_perr" "$k_perr"
row "idle broker CPU, % of one core (3 processes), 10 s after" "$v_idle" "$k_idle"
row "  settled: 100 s after the produce run" "$v_settled" "$k_settled"
row "kill -9 of a broker (not the controller): all led elsewhere, s" "$v_away" "$k_away"
row "its restart: every partition 3 in sync again, s" "$v_back" "$k_back"
printf '\n%-58s %10s %10s %8s\n' "1 node, $single partitions" "Varve" "Kafka" "ratio"
row "clean restart: start to every partition led, s" "$v1_ready" "$k1_ready"
row "heap used after full GC, MB" "$v1_heap" "$k1_heap"
row "RSS, MB" "$v1_rss" "$k1_rss"
row "open file descriptors" "$v1_fds" "$k1_fds"
row "memory mappings (/proc/PID/maps lines)" "$v1_maps" "$k1_maps"
echo "(details: $work/log)"
