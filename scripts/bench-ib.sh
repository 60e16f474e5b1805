#!/usr/bin/env bash
# An 8-rail InfiniBand pod's attach on the fake node, exclusive mode, each
# rail's VF given its own GUID (so every ADD rebinds and every DEL rebinds
# back): the wall time of the 8 ADDs one after another (as Multus runs
# them) and of the 8 DELs, this tree against the release before #60
# (f068daa: netdev first, device after, no rebind lock), the two builds
# taking turns each cycle. Each build runs against its own fake hardware;
# the fake's driver probe delay (rebindRenames) is off in both, and the
# time the new fake spends playing the kernel with ip(8) and /proc (the
# IPoIB re-creation; it counts it in playedUs) is subtracted, so what is
# compared is railcni's own work: the rebind lock, the device named by PCI
# address, the device moved first and the netdev found again, the move
# home from inside the pod.
#
#   scripts/bench-ib.sh [cycles=15] [old-rev=f068daa]
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "bench-ib.sh: run as root" >&2; exit 1; }
cycles=${1:-15} old_rev=${2:-f068daa}
work=$(mktemp -d /tmp/railcni-bench-ib.XXXXXX)
prefix="bi$$"
old_tree=$work/old
trap 'ip netns del "$prefix-pod" 2>/dev/null; scripts/fake-node.sh down "$prefix" "$work/sys" >/dev/null 2>&1;
  git worktree remove --force "$old_tree" >/dev/null 2>&1; rm -rf "$work"' EXIT
. scripts/lib/two-builds.sh
build_two "$old_rev" "$old_tree"
scripts/fake-node.sh up "$prefix" "$work/sys" 8 1 >"$work/vfs"
ip netns add "$prefix-pod"
vfs='{}'
while read -r rail index pci ifname; do
  dev=$work/sys/devices/pci0000:00/$pci
  echo 32 >"$dev/net/$ifname/type"
  ip -n "$prefix-host" -o link show "$ifname" | cut -d: -f1 >"$dev/net/$ifname/ifindex"
  echo 4092 >"$work/sys/devices/pci0000:00/0000:1$rail:00.0/net/pf$rail/mtu"
  mkdir -p "$dev/infiniband/mlx5_$((rail + 1))"
  vfs=$(python3 -c "import json,sys; v=json.loads(sys.argv[1]); v['pf$rail/0']={'ibGuid':'00:00:00:00:00:00:0a:0$rail'}; print(json.dumps(v))" "$vfs")
  echo "{\"cniVersion\":\"1.1.0\",\"name\":\"ib$rail\",\"type\":\"railcni\",\"deviceID\":\"$pci\",
   \"guid\":\"00:11:22:33:44:55:66:0$rail\",
   \"ipam\":{\"type\":\"railcni-ipam\",\"cidr\":\"172.$((14 + 2 * rail)).0.0/15\",\"nodes\":[\"gpu-0\"]}}" >"$work/conf$rail.json"
done <"$work/vfs"
echo "{\"rdmaMode\": \"exclusive\", \"vfs\": $vfs}" >"$work/hw.json"
ip netns exec "$prefix-host" bash -s "$cycles" "$old" "$new" "$work" "$prefix" <<'INNER'
set -euo pipefail
cycles=$1 old=$2 new=$3 work=$4 prefix=$5
export CNI_CONTAINERID=bench CNI_NETNS=/var/run/netns/$prefix-pod CNI_PATH=/nonexistent
export RAILCNI_SYSFS_ROOT=$work/sys RAILCNI_STATE_DIR=$work/state RAILCNI_NODE_NAME=gpu-0 RAILCNI_NODE_CONFIG=$work/none.json
export RAILCNI_FAKE_HARDWARE=$work/hw.json
ms() { echo $(($(date +%s%N) / 1000)); }
played() { python3 -c "import json,sys; print(json.load(open(sys.argv[1])).get('playedUs', 0))" "$work/hw.json"; }
for ((i = 0; i < cycles; i++)); do
  for k in 0 1; do
    if (((i + k) % 2)); then name=new plugin=$new; else name=old plugin=$old; fi
    p0=$(played) t0=$(ms)
    for rail in 1 2 3 4 5 6 7 8; do
      CNI_IFNAME=net$rail CNI_COMMAND=ADD "$plugin" <"$work/conf$rail.json" >"$work/out" 2>"$work/add.err" || { echo "$name ADD ib$rail:"; cat "$work/out"; exit 1; }
      # The kernel's netdev move, when railcni made one (its closing line).
      sed -n 's/.*took [0-9.]* ms (\([0-9.]*\) ms of it.*/\1/p' "$work/add.err" >>"$work/moves"
    done
    moved=$(awk '{s += $1} END {printf "%d", s * 1000}' "$work/moves"); rm -f "$work/moves"
    t1=$(ms) p1=$(played)
    t1p=$(ms)
    for rail in 8 7 6 5 4 3 2 1; do
      CNI_IFNAME=net$rail CNI_COMMAND=DEL "$plugin" <"$work/conf$rail.json" >"$work/out" 2>/dev/null || { echo "$name DEL ib$rail:"; cat "$work/out"; exit 1; }
    done
    t2=$(ms) p2=$(played)
    # The old build's fake plays nothing and keeps no counter (it drops it).
    if [ "$name" = old ]; then p0=0 p1=0 p2=0; fi
    echo "$(((t1 - t0) - (p1 - p0) - moved)) $(((t2 - t1p) - (p2 - p1))) $((t1 - t0)) $((t2 - t1p))" >>"$work/$name.times"
  done
done
INNER
python3 - "$work" "$cycles" "$old_rev" <<'PY'
import statistics, sys
work, cycles, rev = sys.argv[1:4]
def med(name, col):
    return statistics.median(int(l.split()[col]) / 1000 for l in open(f"{work}/{name}.times"))
print(f"8-rail InfiniBand pod on the fake node, exclusive mode, GUIDs set; p50 of {cycles} interleaved cycles, release builds.")
print("8 ADDs, railcni's own time: the wall time less the kernel's netdev moves (railcni's own, as its log says;")
print("the IPoIB re-creation the new fake plays with ip(8), as its playedUs says):")
print(f"  {rev} (before #60)   {med('old', 0):7.1f} ms")
print(f"  this tree              {med('new', 0):7.1f} ms   ratio {med('new', 0) / med('old', 0):.2f}x")
print("wall time, 8 ADDs and 8 DELs (the fakes' work included; the new fake plays the kernel's IPoIB re-creation with ip(8)):")
print(f"  {rev} (before #60)   {med('old', 2):7.1f} ms  {med('old', 3):7.1f} ms")
print(f"  this tree              {med('new', 2):7.1f} ms  {med('new', 3):7.1f} ms")
PY
