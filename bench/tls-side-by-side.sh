#!/usr/bin/env bash
# TLS, side by side: one Varve broker, then one Apache Kafka 4.4 broker (KRaft, broker+controller), on
# this machine with the same heap, each with a PLAINTEXT and an SSL listener presenting the same
# certificate (EC P-256, made here with keytool; TLS 1.3 as negotiated by the JDK on both sides).
# Prints a table with ratios: throughput over SSL (the issue's target: at least Kafka's) and the broker's
# CPU per GB moved, over SSL and in the clear, so the cost of TLS shows per system.
#
#   bench/tls-side-by-side.sh [RECORDS] [PARTITIONS]   (defaults 1000000 records of 1 KB, 6 partitions)
#
# For each system and each listener (PLAINTEXT, then SSL), on a new topic:
#   1. ProducerPerformance, RECORDS records of 1 KB, acks=1, unthrottled: MB/s, failed sends, broker CPU;
#   2. ConsumerPerformance reading them back: MB/s, broker CPU.
# Both brokers run with group.initial.rebalance.delay.ms=0, so the consumer's join is not what is timed.
# Environment: HEAP (default 2G), KAFKA_PEER (default ../shared/peer/kafka; its jars run Kafka here).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
records=${1:-1000000}
parts=${2:-6}
heap=${HEAP:-2G}
peer=${KAFKA_PEER:-$root/../shared/peer/kafka}
work=$(mktemp -d /tmp/varve-tls-bench.XXXXXX)
vpid=""; kpid=""
cleanup() {
  [ -n "$vpid" ] && kill "$vpid" 2>/dev/null || true
  [ -n "$kpid" ] && kill "$kpid" 2>/dev/null || true
  sleep 2
  [ -n "$vpid" ] && kill -9 "$vpid" 2>/dev/null || true
  [ -n "$kpid" ] && kill -9 "$kpid" 2>/dev/null || true
}
trap cleanup EXIT
[ -x "$peer" ] || { echo "no peer Kafka script at $peer (set KAFKA_PEER)" >&2; exit 2; }
"$peer" install >/dev/null
kafka_cp="${PEER_HOME:-$HOME/.cache/peer-kafka-4.4.0}/lib/*"
(cd "$root" && ./mvnw -q -B -Dmaven.test.skip=true -pl varve-cli -am package) >&2
export VARVE_NO_BUILD=1
tool() { "$peer" tool "$@"; }
hz=$(getconf CLK_TCK)
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

# One certificate for both brokers; clients trust it.
pw=bench-pw
keytool -genkeypair -alias broker -keyalg EC -groupname secp256r1 -dname CN=localhost \
    -ext SAN=ip:127.0.0.1,dns:localhost -validity 30 -keystore "$work/broker.p12" -storetype PKCS12 \
    -storepass "$pw" -keypass "$pw" >/dev/null 2>&1
keytool -exportcert -alias broker -keystore "$work/broker.p12" -storepass "$pw" -file "$work/broker.cer" >/dev/null 2>&1
keytool -importcert -noprompt -alias broker -file "$work/broker.cer" -keystore "$work/trust.p12" -storetype PKCS12 \
    -storepass "$pw" >/dev/null 2>&1
ssl_server="ssl.keystore.type=PKCS12
ssl.keystore.location=$work/broker.p12
ssl.keystore.password=$pw
ssl.key.password=$pw"
printf 'security.protocol=SSL\nssl.truststore.type=PKCS12\nssl.truststore.location=%s\nssl.truststore.password=%s\n' \
    "$work/trust.p12" "$pw" > "$work/ssl-client.properties"
printf 'security.protocol=PLAINTEXT\n' > "$work/plain-client.properties"

await_port() { # $1 client config, $2 bootstrap
  for _ in $(seq 1 120); do
    tool org.apache.kafka.tools.BrokerApiVersionsCommand --bootstrap-server "$2" --command-config "$1" >/dev/null 2>&1 && return 0
    sleep 1
  done
  echo "broker at $2 did not answer" >&2; return 1
}

# $1 name, $2 pid, $3 listener (plain|ssl), $4 bootstrap: prints "prod-MB/s errors prod-cpu-s cons-MB/s cons-cpu-s"
steps() {
  local name=$1 pid=$2 l=$3 boot=$4 cfg="$work/$3-client.properties" t0 t1 out mb errs pcpu cmb ccpu topic="bench-$3"
  tool org.apache.kafka.tools.TopicCommand --bootstrap-server "$boot" --command-config "$cfg" --create --topic "$topic" \
      --partitions "$parts" --replication-factor 1 >>"$work/log" 2>&1
  sleep 2
  t0=$(ticks "$pid")
  out=$(tool org.apache.kafka.tools.ProducerPerformance --topic "$topic" --num-records "$records" --record-size 1000 \
      --throughput -1 --producer.config "$cfg" --producer-props bootstrap.servers="$boot" acks=1 \
      2>"$work/$name-$l-produce.err" | tail -1)
  t1=$(ticks "$pid")
  echo "$name $l produce: $out" >> "$work/log"
  mb=$(sed -E 's/.*\(([0-9.]+) MB\/sec\).*/\1/' <<<"$out")
  errs=$(grep -c 'Exception' "$work/$name-$l-produce.err" || true)
  pcpu=$(awk -v d=$((t1 - t0)) -v hz="$hz" 'BEGIN{printf "%.1f", d / hz}')
  t0=$(ticks "$pid")
  out=$(tool org.apache.kafka.tools.ConsumerPerformance --bootstrap-server "$boot" --command-config "$cfg" --topic "$topic" \
      --num-records "$records" --timeout 60000 2>>"$work/log" | tail -1)
  t1=$(ticks "$pid")
  echo "$name $l consume: $out" >> "$work/log"
  cmb=$(awk -F', *' '{print $4}' <<<"$out")
  ccpu=$(awk -v d=$((t1 - t0)) -v hz="$hz" 'BEGIN{printf "%.1f", d / hz}')
  echo "$mb $errs $pcpu $cmb $ccpu"
}

echo "== Varve, 1 node" >&2
mkdir -p "$work/varve"
cat > "$work/varve/server.properties" <<PROPS
listeners=PLAINTEXT://127.0.0.1:39092,SSL://127.0.0.1:39093
log.dirs=$work/varve/data
group.initial.rebalance.delay.ms=0
$ssl_server
PROPS
VARVE_JAVA_OPTS="-Xms$heap -Xmx$heap -XX:+UseG1GC" "$root/bin/varve" server --config "$work/varve/server.properties" \
    > "$work/varve/out.log" 2>&1 &
vpid=$! # bin/varve execs java: this is the broker's pid
await_port "$work/plain-client.properties" 127.0.0.1:39092
read -r vp_mb vp_err vp_pcpu vp_cmb vp_ccpu <<<"$(steps varve "$vpid" plain 127.0.0.1:39092)"
read -r vs_mb vs_err vs_pcpu vs_cmb vs_ccpu <<<"$(steps varve "$vpid" ssl 127.0.0.1:39093)"
kill "$vpid"; wait 2>/dev/null || true; vpid=""

echo "== Apache Kafka, 1 node" >&2
mkdir -p "$work/kafka"
cat > "$work/kafka/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:49094
listeners=PLAINTEXT://127.0.0.1:49092,SSL://127.0.0.1:49093,CONTROLLER://127.0.0.1:49094
advertised.listeners=PLAINTEXT://127.0.0.1:49092,SSL://127.0.0.1:49093
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,CONTROLLER:PLAINTEXT
inter.broker.listener.name=PLAINTEXT
log.dirs=$work/kafka/data
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
group.initial.rebalance.delay.ms=0
$ssl_server
PROPS
java -cp "$kafka_cp" kafka.tools.StorageTool format -t MkU3OEVBNTcwNTJENDM2Qg -c "$work/kafka/server.properties" >/dev/null 2>&1
java -Xms"$heap" -Xmx"$heap" -XX:+UseG1GC -Dlog4j2.configurationFile="${PEER_HOME:-$HOME/.cache/peer-kafka-4.4.0}/log4j2.yaml" \
    -cp "$kafka_cp" kafka.Kafka "$work/kafka/server.properties" > "$work/kafka/out.log" 2>&1 &
kpid=$!
await_port "$work/plain-client.properties" 127.0.0.1:49092
read -r kp_mb kp_err kp_pcpu kp_cmb kp_ccpu <<<"$(steps kafka "$kpid" plain 127.0.0.1:49092)"
read -r ks_mb ks_err ks_pcpu ks_cmb ks_ccpu <<<"$(steps kafka "$kpid" ssl 127.0.0.1:49093)"

gb=$(awk -v r="$records" 'BEGIN{print r * 1000 / 1e9}')
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b + 0 == 0) print "-"; else printf "%.2f", a / b }'; }
per_gb() { awk -v s="$1" -v g="$gb" 'BEGIN{printf "%.1f", s / g}'; }
row() { printf '%-52s %10s %10s %8s\n' "$1" "$2" "$3" "$(ratio "$2" "$3")"; }
echo
printf '%-52s %10s %10s %8s\n' "1 node, $records x 1 KB, $parts partitions" Varve Kafka ratio
row "produce over SSL, MB/s (acks=1)" "$vs_mb" "$ks_mb"
row "  failed sends" "$vs_err" "$ks_err"
row "consume over SSL, MB/s" "$vs_cmb" "$ks_cmb"
row "produce in the clear, MB/s" "$vp_mb" "$kp_mb"
row "consume in the clear, MB/s" "$vp_cmb" "$kp_cmb"
row "broker CPU s per GB produced over SSL" "$(per_gb "$vs_pcpu")" "$(per_gb "$ks_pcpu")"
row "broker CPU s per GB produced in the clear" "$(per_gb "$vp_pcpu")" "$(per_gb "$kp_pcpu")"
row "broker CPU s per GB consumed over SSL" "$(per_gb "$vs_ccpu")" "$(per_gb "$ks_ccpu")"
row "broker CPU s per GB consumed in the clear" "$(per_gb "$vp_ccpu")" "$(per_gb "$kp_ccpu")"
echo "(details: $work/log)"
