#!/usr/bin/env bash
# How long `railcnictl agent` takes to answer a scrape of a full node: 8 rails,
# 4 pods with one VF on every rail (32 attachments), each VF with an RDMA
# device and a port of counters in the fake sysfs. Prints p50/p95 in ms of
# GET /metrics (curl, from the node's namespace) and the exposition's size.
#
#   scripts/bench-metrics.sh [scrapes=50] [idle=0] [concurrent=1]
# idle > 0: the scrapes run while that many idle connections and one client
# that never finishes its request are open to the agent (the goal holds then
# too: anything that reaches the port must not slow a scrape).
# concurrent > 1: the scrapes come in bursts of that many at once, each
# burst 1.1 s after the last (so every burst finds no fresh pass and all of
# it waits for one; more than the agent serves at once get 503 and are
# counted apart).
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "bench-metrics.sh: run as root" >&2; exit 1; }
scrapes=${1:-50}
idle=${2:-0}
concurrent=${3:-1}
command -v curl >/dev/null || scripts/install-test-deps.sh

cargo build --release --quiet
plugin=$PWD/target/release/railcni
work=$(mktemp -d /tmp/railcni-bench-metrics.XXXXXX)
prefix="bm$$"
agent=
cleanup() {
  [ -n "$agent" ] && kill "$agent" 2>/dev/null && wait "$agent" 2>/dev/null || true
  for p in 1 2 3 4; do ip netns del "$prefix-p$p" 2>/dev/null || true; done
  scripts/fake-node.sh down "$prefix" "$work/sys" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
scripts/fake-node.sh up "$prefix" "$work/sys" 8 4 >"$work/vfs"
host="$prefix-host"
export RAILCNI_SYSFS_ROOT=$work/sys RAILCNI_STATE_DIR=$work/state RAILCNI_NODE_NAME=gpu-0 \
  RAILCNI_LOG_DIR=$work/logs RAILCNI_NODE_CONFIG=$work/none.json
while read -r rail index pci _; do
  port="$work/sys/devices/pci0000:00/$pci/infiniband/mlx5_$rail$index/ports/1"
  mkdir -p "$port/hw_counters" "$port/counters"
  for f in np_ecn_marked_roce_packets rp_cnp_handled out_of_sequence rx_write_requests; do echo 7 >"$port/hw_counters/$f"; done
  for f in port_xmit_data port_rcv_data port_xmit_packets port_rcv_packets; do echo 9 >"$port/counters/$f"; done
  pod="$prefix-p$((index + 1))"
  ip netns list | grep -q "^$pod" || { ip netns add "$pod"; ip -n "$pod" link set lo up; }
  conf="{\"cniVersion\":\"1.1.0\",\"name\":\"rail$rail\",\"type\":\"railcni\",\"deviceID\":\"$pci\",\"rdma\":\"off\",
    \"ipam\":{\"type\":\"railcni-ipam\",\"cidr\":\"172.$((14 + 2 * rail)).0.0/15\",\"perNodePrefix\":29,\"nodes\":[\"gpu-0\"]}}"
  CNI_COMMAND=ADD CNI_CONTAINERID="c$index" CNI_NETNS="/var/run/netns/$pod" CNI_IFNAME="net$rail" CNI_PATH=/nonexistent \
    ip netns exec "$host" "$plugin" <<<"$conf" >/dev/null 2>>"$work/add.log"
done <"$work/vfs"
ip netns exec "$host" "${plugin}ctl" agent --listen 127.0.0.1:9476 2>/dev/null &
agent=$!
for _ in $(seq 50); do ip netns exec "$host" curl -sf -o /dev/null http://127.0.0.1:9476/healthz && break; sleep 0.1; done
clients=
if ((idle > 0)); then
  ip netns exec "$host" python3 -c "
import socket, time
held = [socket.create_connection(('127.0.0.1', 9476)) for _ in range($idle)]
slow = socket.create_connection(('127.0.0.1', 9476)); slow.sendall(b'GET /metrics HTTP/1.1\r\nHost: x\r\n')
print('ready', flush=True); time.sleep(600)" >"$work/idle.out" &
  clients=$!
  for _ in $(seq 100); do grep -q ready "$work/idle.out" 2>/dev/null && break; sleep 0.1; done
fi
if ((concurrent > 1)); then
  for b in $(seq $((scrapes / concurrent))); do
    sleep 1.1
    pids=()
    for c in $(seq "$concurrent"); do
      ip netns exec "$host" curl -s -o "$work/b$c.prom" -w '%{http_code} %{time_total}\n' http://127.0.0.1:9476/metrics >"$work/b$c.t" &
      pids+=($!)
    done
    wait "${pids[@]}"
    cat "$work"/b*.t >>"$work/all"
    cp "$work/b1.prom" "$work/last.prom"
  done
  awk '$1 == 200 {print $2}' "$work/all" >"$work/times"
  echo "bursts of $concurrent: $(awk '$1 == 200' "$work/all" | wc -l) answered 200, $(awk '$1 != 200' "$work/all" | wc -l) refused (busy)"
else
  for _ in $(seq "$scrapes"); do
    ip netns exec "$host" curl -s -o "$work/last.prom" -w '%{time_total}\n' http://127.0.0.1:9476/metrics >>"$work/times"
  done
fi
[ -n "$clients" ] && kill "$clients" 2>/dev/null
attached=$(grep -c '^railcni_interface_mtu' "$work/last.prom" || true)
python3 - "$work/times" "$attached" "$(wc -c <"$work/last.prom")" "$(grep -vc '^#' "$work/last.prom")" "$idle" <<'PY'
import statistics, sys
t = sorted(float(x) * 1000 for x in open(sys.argv[1]))
p95 = t[min(len(t) - 1, round(0.95 * (len(t) - 1)))]
beside = f", beside {sys.argv[5]} idle connections and a half-sent request" if sys.argv[5] != "0" else ""
print(f"agent scrape, 8 rails x 4 pods ({sys.argv[2]} rail interfaces){beside}: p50 {statistics.median(t):.1f} ms, "
      f"p95 {p95:.1f} ms over {len(t)} scrapes (goal < 50 ms); {sys.argv[4]} samples, {sys.argv[3]} bytes")
PY
