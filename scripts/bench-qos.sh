#!/usr/bin/env bash
# What rdmaQoS and the RoCE v2 GID check cost an ADD on the fake node, each
# beside the same RoCE rail without them, taking turns (ADD p50, DEL p50):
#   floor   rdma required, no rdmaQoS, checks.roceGid off (a rail as before)
#   gid     + the GID check (default on; the entry is there: one table read)
#   tos     + rdmaQoS.tos (the ToS in force read, written from the pod's
#           namespace, given back on DEL)
#   both    + rdmaQoS tos and tc, and the GID check
# Wall time includes the kernel's namespace moves, whose time comes in modes
# a scheduler tick (4 ms) apart, so a set can land a tick above or below
# another by chance; railcni's own time (each call's closing log line:
# "took T ms (M ms of it the kernel's namespace move)", T - M) is printed
# beside it and is what the sets' differences are read from.
# The files are the fake tree's (a traffic-class file, a configfs tree); the
# RDMA move is the recording stand-in's, the same in every set. Then what
# the GID check costs where a moved device is seen only from the pod: a
# sysfs mounted on a thread in the pod's namespace (net::pod_sysfs), beside
# reading the host's sysfs.
#
#   scripts/bench-qos.sh [cycles=40]
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "bench-qos.sh: run as root" >&2; exit 1; }
cycles=${1:-40}
cargo build --release --quiet --features railcni/fake-hardware
cargo build --release --quiet --features railcni/fake-hardware --example pod-sysfs-bench
plugin=$PWD/target/release/railcni
work=$(mktemp -d /tmp/railcni-bench-qos.XXXXXX)
prefix="bq$$"
trap 'ip netns del "$prefix-pod" 2>/dev/null; scripts/fake-node.sh down "$prefix" "$work/sys" >/dev/null 2>&1; rm -rf "$work"' EXIT
scripts/fake-node.sh up "$prefix" "$work/sys" 1 1 >/dev/null
ip netns add "$prefix-pod"
pci=0000:11:00.2
dev=$work/sys/devices/pci0000:00/$pci/infiniband/mlx5_2
mkdir -p "$dev/tc/1" "$dev/ports/1/gids" "$dev/ports/1/gid_attrs/types" "$dev/ports/1/gid_attrs/ndevs"
: >"$dev/tc/1/traffic_class"
# The address's RoCE v2 entry, as the kernel would have made it.
echo "0000:0000:0000:0000:0000:ffff:ac10:0000" >"$dev/ports/1/gids/3"
echo "RoCE v2" >"$dev/ports/1/gid_attrs/types/3"
echo net1 >"$dev/ports/1/gid_attrs/ndevs/3"
mkdir -p "$work/configfs/rdma_cm/mlx5_2/ports/1"
echo 0 >"$work/configfs/rdma_cm/mlx5_2/ports/1/default_roce_tos"
echo '{"rdmaMode": "exclusive"}' >"$work/hw.json"
conf() { # <rdmaQoS JSON or null> <roceGid>
  echo "{\"cniVersion\":\"1.1.0\",\"name\":\"rail1\",\"type\":\"railcni\",\"deviceID\":\"$pci\",\"rdma\":\"required\",
   \"rdmaQoS\":$1,\"checks\":{\"roceGid\":\"$2\"},
   \"ipam\":{\"type\":\"railcni-ipam\",\"cidr\":\"172.16.0.0/15\",\"nodes\":[\"gpu-0\"]}}"
}
conf null off >"$work/floor.json"
conf null require >"$work/gid.json"
conf '{"tos": 96}' off >"$work/tos.json"
conf '{"tos": 96, "tc": 96}' require >"$work/both.json"
ip netns exec "$prefix-host" bash -s "$cycles" "$plugin" "$work" "$prefix" <<'INNER'
set -euo pipefail
cycles=$1 plugin=$2 work=$3 prefix=$4
export CNI_CONTAINERID=bench CNI_NETNS=/var/run/netns/$prefix-pod CNI_IFNAME=net1 CNI_PATH=/nonexistent
export RAILCNI_SYSFS_ROOT=$work/sys RAILCNI_STATE_DIR=$work/state RAILCNI_NODE_NAME=gpu-0 RAILCNI_NODE_CONFIG=$work/none.json
export RAILCNI_FAKE_HARDWARE=$work/hw.json RAILCNI_CONFIGFS_ROOT=$work/configfs
sets=(floor gid tos both)
ms() { echo "$1 $2" | awk '{printf "%.3f\n", ($2 - $1) * 1000}'; }
for ((i = 0; i < cycles; i++)); do
  for ((k = 0; k < 4; k++)); do
    s=${sets[$(((i + k) % 4))]}
    t0=$EPOCHREALTIME; CNI_COMMAND=ADD "$plugin" <"$work/$s.json" >"$work/out" 2>"$work/add.err" || { cat "$work/out"; exit 1; }; t1=$EPOCHREALTIME
    CNI_COMMAND=DEL "$plugin" <"$work/$s.json" >"$work/out" 2>"$work/del.err" || { cat "$work/out"; exit 1; }; t2=$EPOCHREALTIME
    ms "$t0" "$t1" >>"$work/$s.add"; ms "$t1" "$t2" >>"$work/$s.del"
    for v in add del; do
      sed -n 's/.*took \([0-9.]*\) ms (\([0-9.]*\) ms of it.*/\1 \2/p' "$work/$v.err" | awk '{printf "%.3f\n", $1 - $2}' >>"$work/$s.$v-own"
    done
  done
done
INNER
[ "$(cat "$dev/tc/1/traffic_class")" = -1 ] || { echo "bench-qos.sh: the class was not given back" >&2; exit 1; }
python3 - "$work" "$cycles" <<'PY'
import statistics, sys
work, cycles = sys.argv[1], sys.argv[2]
def p50(s, verb):
    return statistics.median(float(x) for x in open(f"{work}/{s}.{verb}"))
sets = (("floor", "rdma required, no rdmaQoS, roceGid off"), ("gid", "+ RoCE v2 GID check (entry present)"),
        ("tos", "+ rdmaQoS.tos"), ("both", "+ rdmaQoS tos and tc, GID check"))
for what, suffix in (("wall time", ""), ("railcni's own time (wall minus the kernel's moves)", "-own")):
    print(f"RoCE rail ADD and DEL, {what}, p50 of {cycles} interleaved cycles on the fake node (release build):")
    print(f"  {'':<44}{'ADD':>9}{'vs floor':>10}{'DEL':>9}{'vs floor':>10}")
    for s, label in sets:
        a, d = p50(s, "add" + suffix), p50(s, "del" + suffix)
        da = "" if s == "floor" else f"{a - p50('floor', 'add' + suffix):+8.2f}"
        dd = "" if s == "floor" else f"{d - p50('floor', 'del' + suffix):+8.2f}"
        print(f"  {label:<44}{a:7.2f}ms{da:>10}{d:7.2f}ms{dd:>10}")
PY
ip netns exec "$prefix-host" target/release/examples/pod-sysfs-bench "/var/run/netns/$prefix-pod" "$((cycles * 5))"
