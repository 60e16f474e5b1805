#!/usr/bin/env bash
# Build (or tear down) a fake SR-IOV GPU node for tests and the demo.
#
#   fake-node.sh up   <prefix> <sysfs-root> [rails=2] [vfs-per-rail=2]
#   fake-node.sh down <prefix> <sysfs-root>
#
# up creates:
#   netns <prefix>-host     the node: railcni runs here; each VF is one end of a veth
#                           named pf<r>v<i> (MTU 1500 like a fresh VF)
#   netns <prefix>-fabric   the leaf switch: the veth peers, named r<r>v<i>, MTU 9000
#   <sysfs-root>            the kernel's sysfs layout for those VFs: rail r has PF
#                           0000:1<r>:00.0 (netdev pf<r>, mtu 9000, up with carrier) and VF i at
#                           0000:1<r>:00.<i+2>, driver mlx5_core, net/pf<r>v<i>
# and prints one line per VF: "<rail> <vf-index> <pci> <host-ifname>".
# With vfs-per-rail 0 each rail's PF is a whole NIC instead (sriov_numvfs 0):
# pf<r> is then itself one end of a veth, up in <prefix>-host at MTU 1500
# with its peer r<r> in the fabric, and its line is "<rail> 0 <pf-pci> pf<r>".
#
# FAKE_NODE_FABRIC=<netns> joins an existing leaf namespace instead of creating
# <prefix>-fabric, and FAKE_NODE_TAG=<t> prefixes the peer names (t r<r>v<i>) so
# several nodes can share one leaf (see fabric.sh).
set -euo pipefail

cmd=${1:?usage: fake-node.sh up|down <prefix> <sysfs-root> [rails] [vfs]}
prefix=${2:?prefix}
root=${3:?sysfs root}
rails=${4:-2}
vfs=${5:-2}
host="$prefix-host"
fabric="${FAKE_NODE_FABRIC:-$prefix-fabric}"
tag="${FAKE_NODE_TAG:-}"

[ "$(id -u)" = 0 ] || { echo "fake-node.sh: needs root (network namespaces)" >&2; exit 1; }
(( rails >= 1 && rails <= 8 )) || { echo "fake-node.sh: rails must be 1..8" >&2; exit 1; }
(( vfs >= 0 && vfs <= 6 )) || { echo "fake-node.sh: vfs must be 0..6" >&2; exit 1; }

# Write one PCI device the way the kernel lays it out.
pci_dev() { # <bdf>
  mkdir -p "$root/devices/pci0000:00/$1" "$root/bus/pci/devices"
  ln -sfn "../../../devices/pci0000:00/$1" "$root/bus/pci/devices/$1"
}

net_dev() { # <bdf> <ifname>
  mkdir -p "$root/devices/pci0000:00/$1/net/$2" "$root/class/net"
  ln -sfn "../../devices/pci0000:00/$1/net/$2" "$root/class/net/$2"
  ln -sfn "../../../$1" "$root/devices/pci0000:00/$1/net/$2/device"
}

up() {
  ip netns add "$host"
  ip -n "$host" link set lo up
  if [ -z "${FAKE_NODE_FABRIC:-}" ]; then
    ip netns add "$fabric"
    ip -n "$fabric" link set lo up
  fi
  mkdir -p "$root/bus/pci/drivers/mlx5_core"
  for ((r = 1; r <= rails; r++)); do
    local pf="0000:1$r:00.0"
    pci_dev "$pf"
    net_dev "$pf" "pf$r"
    ln -sfn "../../../bus/pci/drivers/mlx5_core" "$root/devices/pci0000:00/$pf/driver"
    echo 9000 > "$root/devices/pci0000:00/$pf/net/pf$r/mtu"
    # Up with carrier, as the kernel reports a cabled PF (IFF_UP|IFF_BROADCAST|IFF_MULTICAST).
    echo 0x1003 > "$root/devices/pci0000:00/$pf/net/pf$r/flags"
    echo 1 > "$root/devices/pci0000:00/$pf/net/pf$r/carrier"
    echo up > "$root/devices/pci0000:00/$pf/net/pf$r/operstate"
    echo 1 > "$root/devices/pci0000:00/$pf/net/pf$r/type"
    echo "$vfs" > "$root/devices/pci0000:00/$pf/sriov_numvfs"
    echo 8 > "$root/devices/pci0000:00/$pf/sriov_totalvfs"
    # VF i is function i+2 of the PF's device: First VF Offset 2, VF Stride 1.
    echo 2 > "$root/devices/pci0000:00/$pf/sriov_offset"
    echo 1 > "$root/devices/pci0000:00/$pf/sriov_stride"
    if ((vfs == 0)); then
      ip -n "$host" link add "pf$r" type veth peer name "${tag}r${r}" netns "$fabric"
      ip -n "$fabric" link set "${tag}r${r}" mtu 9000 up
      ip -n "$host" link set "pf$r" up
      echo "$r 0 $pf pf$r"
    fi
    for ((i = 0; i < vfs; i++)); do
      local vf="0000:1$r:00.$((i + 2))" ifname="pf${r}v$i"
      pci_dev "$vf"
      ln -sfn "../$pf" "$root/devices/pci0000:00/$vf/physfn"
      ln -sfn "../$vf" "$root/devices/pci0000:00/$pf/virtfn$i"
      ln -sfn "../../../bus/pci/drivers/mlx5_core" "$root/devices/pci0000:00/$vf/driver"
      net_dev "$vf" "$ifname"
      ip -n "$host" link add "$ifname" type veth peer name "${tag}r${r}v$i" netns "$fabric"
      ip -n "$fabric" link set "${tag}r${r}v$i" mtu 9000 up
      echo "$r $i $vf $ifname"
    done
  done
}

down() {
  ip netns del "$host" 2>/dev/null || true
  [ -n "${FAKE_NODE_FABRIC:-}" ] || ip netns del "$fabric" 2>/dev/null || true
  for ns in $(ip netns list | awk '{print $1}' | grep "^$prefix-" || true); do
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf "$root"
}

case "$cmd" in
  up) up ;;
  down) down ;;
  *) echo "fake-node.sh: unknown command $cmd" >&2; exit 1 ;;
esac
