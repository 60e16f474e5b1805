#!/usr/bin/env bash
# ADD and DEL latency of railcni on a fake VF (veth stand-in), next to the
# kernel's own cost for the same move: `ip link set <vf> netns <pod> name net1`.
#
#   scripts/bench-attach.sh [cycles=50]
#
# Prints p50/p95 in milliseconds for: railcni ADD, railcni DEL, bare ip move in,
# bare ip move back. Release build, embedded /31 IPAM, run inside the node
# namespace so `ip netns exec` is not counted.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "bench-attach.sh: run as root" >&2; exit 1; }
cycles=${1:-50}

cargo build --release --quiet
work=$(mktemp -d /tmp/railcni-bench.XXXXXX)
prefix="bench$$"
trap 'scripts/fake-node.sh down "$prefix" "$work/sys" >/dev/null 2>&1; rm -rf "$work"' EXIT
scripts/fake-node.sh up "$prefix" "$work/sys" 1 1 >/dev/null
ip netns add "$prefix-pod"
plugin="$PWD/target/release/railcni"

cat > "$work/conf.json" <<JSON
{"cniVersion":"1.1.0","name":"rail1","type":"railcni","deviceID":"0000:11:00.2",
 "ipam":{"type":"railcni-ipam","cidr":"172.16.0.0/15","nodes":["gpu-0"],"routes":[{"dst":"172.16.0.0/12"}]}}
JSON

ip netns exec "$prefix-host" bash -s "$cycles" "$plugin" "$work" "$prefix" <<'INNER'
set -euo pipefail
cycles=$1 plugin=$2 work=$3 prefix=$4
export CNI_CONTAINERID=bench CNI_NETNS=/var/run/netns/$prefix-pod CNI_IFNAME=net1 CNI_PATH=/nonexistent
export RAILCNI_SYSFS_ROOT=$work/sys RAILCNI_STATE_DIR=$work/state RAILCNI_NODE_NAME=gpu-0
ms() { echo "$(( ${2/./} - ${1/./} ))" | awk '{printf "%.3f\n", $1/1000}'; }
for ((i = 0; i < cycles; i++)); do
  t0=$EPOCHREALTIME; CNI_COMMAND=ADD "$plugin" <"$work/conf.json" >/dev/null 2>&1; t1=$EPOCHREALTIME
  CNI_COMMAND=DEL "$plugin" <"$work/conf.json" >/dev/null 2>&1; t2=$EPOCHREALTIME
  ms "$t0" "$t1" >>"$work/add"; ms "$t1" "$t2" >>"$work/del"
  t0=$EPOCHREALTIME; ip link set pf1v0 netns "$prefix-pod" name net1; t1=$EPOCHREALTIME
  ip -n "$prefix-pod" link set net1 netns "$prefix-host" name pf1v0; t2=$EPOCHREALTIME
  ms "$t0" "$t1" >>"$work/ipin"; ms "$t1" "$t2" >>"$work/ipout"
done
INNER

pct() { sort -n "$1" | awk -v p="$2" '{v[NR]=$1} END {i=int(NR*p/100+0.999); if(i<1)i=1; print v[i]}'; }
printf '%-32s %8s %8s   (%s cycles, ms)\n' what p50 p95 "$cycles"
for f in add:"railcni ADD (embedded IPAM)" del:"railcni DEL" ipin:"ip link set netns+name (in)" ipout:"ip link set netns+name (back)"; do
  file=${f%%:*} label=${f#*:}
  printf '%-32s %8s %8s\n' "$label" "$(pct "$work/$file" 50)" "$(pct "$work/$file" 95)"
done
