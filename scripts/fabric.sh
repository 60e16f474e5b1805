#!/usr/bin/env bash
# An emulated rail fabric: two fake GPU nodes (gpu-0, gpu-1) whose VFs all
# plug into one leaf namespace that holds every /31 gateway and routes between
# them, MTU 9000 everywhere.
#
#   fabric.sh up   <prefix> <dir> [rails=2]
#   fabric.sh down <prefix> <dir>
#
# Namespaces: <prefix>-leaf, <prefix>a-host (gpu-0), <prefix>b-host (gpu-1).
# Sysfs trees: <dir>/a-sys, <dir>/b-sys. Rail r uses cidr 172.(14+2r).0.0/15;
# node n (0, 1) gets prefix n of it: the VF takes .2n, the leaf .2n+1.
# Prints one line per VF: "<node> <rail> <pci> <host-ifname> <vf-address> <gateway>".
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cmd=${1:?usage: fabric.sh up|down <prefix> <dir> [rails]}
prefix=${2:?prefix}
dir=${3:?dir}
rails=${4:-2}
leaf="$prefix-leaf"

rail_base() { echo "172.$((14 + 2 * $1))"; } # rail r -> first two octets of its /15

up() {
  mkdir -p "$dir"
  ip netns add "$leaf"
  ip -n "$leaf" link set lo up
  ip netns exec "$leaf" sh -c 'echo 1 > /proc/sys/net/ipv4/ip_forward
    for f in /proc/sys/net/ipv4/conf/*/rp_filter; do echo 0 > "$f"; done'
  local n=0
  for node in a b; do
    FAKE_NODE_FABRIC="$leaf" FAKE_NODE_TAG="$node" \
      "$here/fake-node.sh" up "$prefix$node" "$dir/$node-sys" "$rails" 1 >"$dir/$node.vfs"
    while read -r rail _ pci ifname; do
      local base; base=$(rail_base "$rail")
      ip -n "$leaf" addr add "$base.0.$((2 * n + 1))/31" dev "${node}r${rail}v0"
      echo "gpu-$n $rail $pci $ifname $base.0.$((2 * n)) $base.0.$((2 * n + 1))"
    done <"$dir/$node.vfs"
    n=$((n + 1))
  done
}

down() {
  for node in a b; do
    FAKE_NODE_FABRIC="$leaf" "$here/fake-node.sh" down "$prefix$node" "$dir/$node-sys" || true
  done
  ip netns del "$leaf" 2>/dev/null || true
}

case "$cmd" in
  up) up ;;
  down) down ;;
  *) echo "fabric.sh: unknown command $cmd" >&2; exit 1 ;;
esac
