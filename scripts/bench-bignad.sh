#!/usr/bin/env bash
# What a NAD carrying 16,384 inline static allocations (nv-ipam CIDRPool
# migrations) costs an ADD+DEL over a NAD with one, with the NAD on stdin
# as Multus runs the binaries: railcni-ipam alone, and railcni with the
# embedded IPAM on a fake VF. Interleaved pairs, p50; goal: <= +5 ms each.
#
#   scripts/bench-bignad.sh [pairs=30]
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "bench-bignad.sh: run as root" >&2; exit 1; }
pairs=${1:-30}
cargo build --release --quiet
bin=$PWD/target/release
work=$(mktemp -d /tmp/railcni-bench-bignad.XXXXXX)
prefix="bb$$"
trap 'ip netns del "$prefix-pod" 2>/dev/null; scripts/fake-node.sh down "$prefix" "$work/sys" >/dev/null 2>&1; rm -rf "$work"' EXIT
scripts/fake-node.sh up "$prefix" "$work/sys" 1 1 >/dev/null
ip netns add "$prefix-pod"
python3 - "$work" <<'PY'
import ipaddress, json, sys
work = sys.argv[1]
net = ipaddress.ip_network("172.16.0.0/15")
def conf(n, kind):
    allocs = [{"nodeName": f"gpu-{i}", "prefix": f"{net.network_address + 2 * i}/31",
               "gateway": str(net.network_address + 2 * i + 1)} for i in range(n)]
    c = {"cniVersion": "1.1.0", "name": "rail1", "type": kind,
         "ipam": {"type": "railcni-ipam", "cidr": str(net), "staticAllocations": allocs}}
    if kind == "railcni":
        c["deviceID"] = "0000:11:00.2"
    return c
for n in (1, 16384):
    for kind in ("railcni", "railcni-ipam"):
        json.dump(conf(n, kind), open(f"{work}/{kind}-{n}.json", "w"))
PY
echo "NAD sizes: $(stat -c %s "$work/railcni-1.json") and $(stat -c %s "$work/railcni-16384.json") bytes" >&2
export RAILCNI_SYSFS_ROOT=$work/sys RAILCNI_STATE_DIR=$work/state RAILCNI_NODE_NAME=gpu-0 \
  RAILCNI_NODE_CONFIG=$work/none.json RAILCNI_LOG_DIR=$work/logs
pair() { # <binary> <conf> -> ms of ADD+DEL
  local t0 t1
  t0=$EPOCHREALTIME
  ip netns exec "$prefix-host" env CNI_COMMAND=ADD CNI_CONTAINERID=c CNI_NETNS=/var/run/netns/$prefix-pod CNI_IFNAME=net1 \
    CNI_PATH=/x "$bin/$1" <"$2" >/dev/null 2>&1
  ip netns exec "$prefix-host" env CNI_COMMAND=DEL CNI_CONTAINERID=c CNI_NETNS=/var/run/netns/$prefix-pod CNI_IFNAME=net1 \
    CNI_PATH=/x "$bin/$1" <"$2" >/dev/null 2>&1
  t1=$EPOCHREALTIME
  echo "$t0 $t1" | awk '{printf "%.3f\n", ($2 - $1) * 1000}'
}
for ((i = 0; i < pairs + 2; i++)); do
  for kind in railcni-ipam railcni; do
    for n in 1 16384; do
      ms=$(pair "$kind" "$work/$kind-$n.json")
      ((i >= 2)) && echo "$ms" >>"$work/$kind-$n.ms"
    done
  done
done
python3 - "$work" "$pairs" <<'PY'
import statistics, sys
work, pairs = sys.argv[1], sys.argv[2]
p = lambda f: statistics.median(float(x) for x in open(f"{work}/{f}.ms"))
print(f"ADD+DEL with the NAD on stdin, p50 of {pairs} interleaved pairs   1 allocation   16,384   difference (goal <= +5 ms)")
for kind in ("railcni-ipam", "railcni"):
    a, b = p(f"{kind}-1"), p(f"{kind}-16384")
    print(f"  {kind:<58}{a:9.2f} ms {b:9.2f} ms   {b - a:+8.2f} ms")
PY
