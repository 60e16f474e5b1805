#!/usr/bin/env bash
# What finding the RDMA port that carries the VF (vf::sysfs::port_of: each
# port's gid_attrs/ndevs read for the VF's netdev names) costs a RoCE
# rail's ADD, against the release before it (79189a4, which read port 1),
# the two builds taking turns each cycle on the same fake node. The device
# has 3 ports, the VF's netdev on port 1 (the only layout the old build
# attaches), and the other two ports' tables full of other netdevs' entries,
# so the new build reads them all before it settles on port 1.
#
#   scripts/bench-port.sh [cycles=60] [old-rev=79189a4]
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "bench-port.sh: run as root" >&2; exit 1; }
cycles=${1:-60} old_rev=${2:-79189a4}
work=$(mktemp -d /tmp/railcni-bench-port.XXXXXX)
prefix="bp$$"
old_tree=$work/old
trap 'ip netns del "$prefix-pod" 2>/dev/null; scripts/fake-node.sh down "$prefix" "$work/sys" >/dev/null 2>&1;
  git worktree remove --force "$old_tree" >/dev/null 2>&1; rm -rf "$work"' EXIT
. scripts/lib/two-builds.sh
build_two "$old_rev" "$old_tree"
scripts/fake-node.sh up "$prefix" "$work/sys" 1 1 >/dev/null
ip netns add "$prefix-pod"
pci=0000:11:00.2
dev=$work/sys/devices/pci0000:00/$pci/infiniband/mlx5_2
for port in 1 2 3; do
  mkdir -p "$dev/ports/$port/gids" "$dev/ports/$port/gid_attrs/types" "$dev/ports/$port/gid_attrs/ndevs"
  for i in $(seq 0 15); do
    echo "fe80:0000:0000:0000:0000:0000:0000:$(printf %04x $((port * 16 + i)))" >"$dev/ports/$port/gids/$i"
    echo "RoCE v2" >"$dev/ports/$port/gid_attrs/types/$i"
    echo "plane$port" >"$dev/ports/$port/gid_attrs/ndevs/$i"
  done
done
# The VF's address's RoCE v2 entry, on port 1, as the kernel would make it.
echo "0000:0000:0000:0000:0000:ffff:ac10:0000" >"$dev/ports/1/gids/16"
echo "RoCE v2" >"$dev/ports/1/gid_attrs/types/16"
echo net1 >"$dev/ports/1/gid_attrs/ndevs/16"
echo '{"rdmaMode": "exclusive"}' >"$work/hw.json"
echo "{\"cniVersion\":\"1.1.0\",\"name\":\"rail1\",\"type\":\"railcni\",\"deviceID\":\"$pci\",\"rdma\":\"required\",
 \"checks\":{\"roceGid\":\"require\"},
 \"ipam\":{\"type\":\"railcni-ipam\",\"cidr\":\"172.16.0.0/15\",\"nodes\":[\"gpu-0\"]}}" >"$work/conf.json"
ip netns exec "$prefix-host" bash -s "$cycles" "$old" "$new" "$work" "$prefix" <<'INNER'
set -euo pipefail
cycles=$1 old=$2 new=$3 work=$4 prefix=$5
export CNI_CONTAINERID=bench CNI_NETNS=/var/run/netns/$prefix-pod CNI_IFNAME=net1 CNI_PATH=/nonexistent
export RAILCNI_SYSFS_ROOT=$work/sys RAILCNI_STATE_DIR=$work/state RAILCNI_NODE_NAME=gpu-0 RAILCNI_NODE_CONFIG=$work/none.json
export RAILCNI_FAKE_HARDWARE=$work/hw.json
for ((i = 0; i < cycles; i++)); do
  for k in 0 1; do
    if (((i + k) % 2)); then name=new plugin=$new; else name=old plugin=$old; fi
    CNI_COMMAND=ADD "$plugin" <"$work/conf.json" >"$work/out" 2>"$work/add.err" || { echo "$name ADD:"; cat "$work/out"; exit 1; }
    CNI_COMMAND=DEL "$plugin" <"$work/conf.json" >"$work/out" 2>/dev/null || { echo "$name DEL:"; cat "$work/out"; exit 1; }
    # railcni's own time: its closing line's total minus the kernel's move.
    sed -n 's/.*took \([0-9.]*\) ms (\([0-9.]*\) ms of it.*/\1 \2/p' "$work/add.err" | awk '{printf "%.3f\n", $1 - $2}' >>"$work/$name.own"
  done
done
INNER
python3 - "$work" "$cycles" "$old_rev" <<'PY'
import statistics, sys
work, cycles, rev = sys.argv[1:4]
old = statistics.median(float(x) for x in open(f"{work}/old.own"))
new = statistics.median(float(x) for x in open(f"{work}/new.own"))
print(f"RoCE rail ADD, railcni's own time (wall minus the kernel's move), p50 of {cycles} interleaved cycles, release builds:")
print(f"  {rev} (port 1 read)            {old:7.3f} ms")
print(f"  this tree (port of the VF found) {new:7.3f} ms   {new - old:+.3f} ms (target: at most +0.300)")
PY
