#!/usr/bin/env bash
# Consumer-group rebalance time, side by side (issue 17): Varve and Apache Kafka 4.4 one after the other on this
# machine, one node each, the same heap, the same probe (dev.varve.bench.RebalanceProbe, stock kafka-clients).
#
#   bench/rebalance-side-by-side.sh [MEMBERS] [PARTITIONS] [RUNS]      (defaults 100, 1000, 5)
#
# For each broker and each group protocol in MODES: an empty topic of PARTITIONS partitions; then a warm-up run (not
# counted: a fresh broker's first group pays for cold code) and RUNS runs, each with a fresh group id, of three
# phases, each timed until every partition is held by exactly one member, the shares are balanced and the broker
# reports the group STABLE with those members and partitions:
#   join    MEMBERS consumers (one JVM, constructed first) subscribe at once;
#   leave   CHANGE of them close (LeaveGroup, or KIP-848's leave heartbeat);
#   rejoin  CHANGE new consumers subscribe.
# Prints the medians in seconds and the Varve/Kafka ratios (below 1: Varve settles faster).
#
# MODES (default "classic classic-cooperative consumer"): classic = group.protocol=classic with RangeAssignor (the Java client's
# default, eager); classic-cooperative = classic with CooperativeStickyAssignor; consumer = KIP-848, server-side
# uniform assignor; consumer-range = KIP-848, server-side range.
# Broker timing, identical on both: group.initial.rebalance.delay.ms=0 (the peer Kafka's setting); KIP-848
# heartbeat interval Kafka's default 5000 ms on both unless HEARTBEAT_MS is set, which then sets
# group.consumer.heartbeat.interval.ms (and its minimum) on both. Classic members use the client's defaults
# (heartbeat 3 s, session 45 s) on both, or heartbeat.interval.ms=CLASSIC_HEARTBEAT_MS when that is set. Before the
# leave and the rejoin the probe pauses a random fraction of the members' heartbeat interval, the same seeded
# sequence on both brokers (see RebalanceProbe). Everything else is each broker's default; one default that matters has no
# counterpart in Varve: Kafka 4.4 recomputes a KIP-848 group's target assignment at most once a second
# (group.consumer.assignment.interval.ms=1000), in a background thread (group.consumer.assignor.offload.enable);
# Varve computes it in the heartbeat that changed the group. KAFKA_PROPS / VARVE_PROPS add settings to one broker
# only ("key=value key=value", e.g. KAFKA_PROPS=group.consumer.assignment.interval.ms=0).
# Environment: HEAP per broker (default 1G), CHANGE (default 10), TIMEOUT_S per phase (default 180), KAFKA_PEER
# (default ../shared/peer/kafka), VARVE_PORT (default 27092), PEER_BASE (Kafka's port, default 27192),
# PROBE_OPTS (the probe's JVM options; -Drebalance.trace=true logs every callback with its time),
# ONLY=varve|kafka (one side alone: a check while working; the ratios need both). MAVEN_ARGS=-o builds offline.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
members=${1:-100}
parts=${2:-1000}
runs=${3:-5}
modes=${MODES:-classic classic-cooperative consumer}
change=${CHANGE:-10}
timeout_s=${TIMEOUT_S:-180}
heap=${HEAP:-1G}
peer=${KAFKA_PEER:-$root/../shared/peer/kafka}
vport=${VARVE_PORT:-27092}
export PEER_BASE=${PEER_BASE:-27192}
work=$(mktemp -d /tmp/varve-rebalance-bench.XXXXXX)
export PEER_DATA=$work/kafka
varve_pid=
cleanup() {
  if [ -n "$varve_pid" ]; then kill "$varve_pid" 2>/dev/null || true; wait "$varve_pid" 2>/dev/null || true; fi
  "$peer" stop >/dev/null 2>&1 || true
}
trap cleanup EXIT
[ -x "$peer" ] || { echo "no peer Kafka script at $peer (set KAFKA_PEER)" >&2; exit 2; }
# the web console's page is not needed here (-Dexec.skip=true: no npm build)
(cd "$root" && ./mvnw -q -B -Dmaven.test.skip=true -Dexec.skip=true -pl varve-cli,varve-bench -am package) >&2
export VARVE_NO_BUILD=1 # the run measures this build, whatever happens to the tree meanwhile
bench_jar="$root/varve-bench/target/benchmarks.jar"

# identical broker-side group timing for both
broker_props="group.initial.rebalance.delay.ms=0"
if [ -n "${HEARTBEAT_MS:-}" ]; then
  min_hb=$(( HEARTBEAT_MS < 5000 ? HEARTBEAT_MS : 5000 ))
  broker_props+=$'\n'"group.consumer.heartbeat.interval.ms=$HEARTBEAT_MS"
  broker_props+=$'\n'"group.consumer.min.heartbeat.interval.ms=$min_hb"
fi
varve_props="$broker_props"$'\n'"$(tr ' ' '\n' <<<"${VARVE_PROPS:-}")"
kafka_props="$broker_props"$'\n'"$(tr ' ' '\n' <<<"${KAFKA_PROPS:-}")"
echo "Varve group settings: $(tr '\n' ' ' <<<"$varve_props")" >> "$work/log"
echo "Kafka group settings: $(tr '\n' ' ' <<<"$kafka_props") (its peer script sets the first)" >> "$work/log"

# $1 name, $2 bootstrap, $3 mode: prints "MODE JOIN LEAVE REJOIN" (or "MODE timeout - -")
probe() {
  local name=$1 boot=$2 mode=$3 out hb_ms opts=()
  echo "== $name, $mode: $members members, $parts partitions, $runs runs (load average $(cut -d' ' -f1-3 /proc/loadavg))" >&2
  echo "== $name $mode (load average $(cut -d' ' -f1-3 /proc/loadavg))" >> "$work/log"
  case "$mode" in
    classic*) hb_ms=${CLASSIC_HEARTBEAT_MS:-3000}
              [ -z "${CLASSIC_HEARTBEAT_MS:-}" ] || opts+=("-Drebalance.consumer=heartbeat.interval.ms=$CLASSIC_HEARTBEAT_MS") ;;
    *) hb_ms=${HEARTBEAT_MS:-5000} ;;
  esac
  opts+=("-Drebalance.jitter.ms=$hb_ms")
  # one consumer = one polling thread + the client's own: small stacks keep 2 x MEMBERS threads cheap
  # shellcheck disable=SC2086 # PROBE_OPTS: JVM options, e.g. -Drebalance.trace=true (every callback in the log)
  out=$(java -Xms512m -Xmx1g -Xss512k -XX:+UseG1GC "${opts[@]}" ${PROBE_OPTS:-} -cp "$bench_jar" dev.varve.bench.RebalanceProbe \
      "$boot" "$mode" "$members" "$parts" "$runs" "$change" "$timeout_s" 2>>"$work/log" | tail -1) || true
  [ -n "$out" ] || out="failed"
  echo "$name $mode: $out" >> "$work/log"
  case "$out" in
    [0-9]*) echo "$mode $out" ;;
    *) echo "$mode $out - -" ;;
  esac
}

start_varve() { # a fresh broker and data directory; sets boot
  rm -rf "$work/varve-data"
  # (its HTTP admin listener beside it, not on the default 9644 another broker on this machine may hold)
  printf 'listeners=PLAINTEXT://127.0.0.1:%s\nvarve.admin.listener=127.0.0.1:%s\nlog.dirs=%s/varve-data\n%s\n' \
    "$vport" "$((vport + 1))" "$work" "$varve_props" > "$work/varve.properties"
  VARVE_JAVA_OPTS="-Xms$heap -Xmx$heap -XX:+UseG1GC" "$root/bin/varve" server --config "$work/varve.properties" \
    > "$work/varve.log" 2>&1 &
  varve_pid=$!
  for _ in $(seq 1 120); do grep -q "started in" "$work/varve.log" && break; sleep 0.5; done
  grep -q "started in" "$work/varve.log" || { echo "Varve did not start; see $work/varve.log" >&2; exit 1; }
  boot="127.0.0.1:$vport"
}
stop_varve() { kill -TERM "$varve_pid"; wait "$varve_pid" || true; varve_pid=; }

start_kafka() { # a fresh single-node KRaft cluster; sets boot
  local kboot
  kboot=$(PEER_HEAP=$heap "$peer" start 1 | tail -1)
  if [ -n "${HEARTBEAT_MS:-}${KAFKA_PROPS:-}" ]; then
    # the peer script writes its own server.properties: add the settings and start the node again
    "$peer" stop >/dev/null
    echo "$kafka_props" >> "$PEER_DATA/node1/server.properties"
    PEER_HEAP=$heap "$peer" node-start 1
    for _ in $(seq 1 120); do
      "$peer" tool org.apache.kafka.tools.BrokerApiVersionsCommand --bootstrap-server "$kboot" 2>/dev/null \
        | grep -q '^127.0.0.1' && break
      sleep 1
    done
  fi
  boot=$kboot
}
stop_kafka() { "$peer" stop >/dev/null; }

# One mode at a time on both brokers (Varve, then Kafka, each started afresh), so that a burst of other load on
# this shared machine is less likely to fall on one broker's half of the whole run.
v_out= k_out= boot=
for mode in $modes; do
  if [ "${ONLY:-}" != kafka ]; then
    start_varve
    v_out+="$(probe varve "$boot" "$mode")"$'\n'
    stop_varve
  fi
  if [ "${ONLY:-}" != varve ]; then
    start_kafka
    k_out+="$(probe kafka "$boot" "$mode")"$'\n'
    stop_kafka
  fi
done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (a !~ /^[0-9.]+$/ || b !~ /^[0-9.]+$/ || b == 0) print "-"; else printf "%.2f", a/b }'; }
field() { awk -v m="$2" -v i="$3" '$1 == m {print $i}' <<<"$1"; }
hb=${HEARTBEAT_MS:-5000}
echo
echo "| $members members, $parts partitions, median of $runs runs, seconds | Varve | Kafka | Varve / Kafka |"
echo "|---|---:|---:|---:|"
for mode in $modes; do
  case "$mode" in
    classic) label="classic, range (eager), heartbeat ${CLASSIC_HEARTBEAT_MS:-3000} ms" ;;
    classic-cooperative) label="classic, cooperative-sticky, heartbeat ${CLASSIC_HEARTBEAT_MS:-3000} ms" ;;
    consumer) label="KIP-848, uniform, heartbeat $hb ms" ;;
    consumer-range) label="KIP-848, range, heartbeat $hb ms" ;;
    *) label=$mode ;;
  esac
  i=2
  for phase in "$members join" "$change leave" "$change join"; do
    v=$(field "$v_out" "$mode" $i); k=$(field "$k_out" "$mode" $i)
    echo "| $label: $phase | ${v:--} | ${k:--} | $(ratio "$v" "$k") |"
    i=$((i + 1))
  done
done
echo "(details: $work/log)"
