#!/usr/bin/env bash
# Build railcni, install it into a temporary /opt/cni/bin, and attach two fake
# rail VFs to a pod as net1/net2 on an emulated SR-IOV node; show the pod's
# view, detach, and clean up. Needs root (network namespaces) and cargo.
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$(id -u)" = 0 ] || { echo "demo.sh: run as root (sudo scripts/demo.sh)" >&2; exit 1; }
command -v ip >/dev/null || { echo "demo.sh: needs iproute2 (apt-get install iproute2)" >&2; exit 1; }

echo "==> building railcni (release)"
cargo build --release --quiet

work=$(mktemp -d /tmp/railcni-demo.XXXXXX)
prefix="demo$$"
pod="$prefix-pod"
cleanup() {
  scripts/fake-node.sh down "$prefix" "$work/sys" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

bin="$work/opt/cni/bin"
install -d "$bin"
install -m 0755 target/release/railcni target/release/railcni-ipam "$bin/"
echo "==> installed railcni and railcni-ipam into $bin"

echo "==> fake SR-IOV node: 2 rails, 1 VF each (veth stand-ins + sysfs tree at $work/sys)"
scripts/fake-node.sh up "$prefix" "$work/sys" 2 1 | while read -r rail idx pci ifname; do
  echo "    rail $rail: VF $pci ($ifname)"
done
ip netns add "$pod"
ip -n "$pod" link set lo up

cni() { # <command> <rail>
  local rail=$2
  ip netns exec "$prefix-host" env \
    CNI_COMMAND="$1" CNI_CONTAINERID=demo-pod CNI_NETNS="/var/run/netns/$pod" \
    CNI_IFNAME="net$rail" CNI_PATH="$bin" \
    CNI_ARGS="IgnoreUnknown=true;K8S_POD_NAMESPACE=default;K8S_POD_NAME=trainer-0" \
    RAILCNI_SYSFS_ROOT="$work/sys" RAILCNI_STATE_DIR="$work/state" RAILCNI_NODE_NAME=gpu-0 \
    "$bin/railcni" 2>/dev/null <<JSON
{
  "cniVersion": "1.1.0", "name": "rail$rail", "type": "railcni",
  "deviceID": "0000:1$rail:00.2", "mtu": 9000,
  "logLevel": "info", "logFile": "$work/railcni.log",
  "ipam": {
    "type": "railcni-ipam", "cidr": "172.1$((rail * 2 + 4)).0.0/15",
    "nodes": ["gpu-0", "gpu-1"], "routes": [{"dst": "172.1$((rail * 2 + 4)).0.0/15"}]
  }
}
JSON
}

for rail in 1 2; do
  echo "==> ADD rail$rail as net$rail"
  cni ADD "$rail"
  echo
done

echo "==> inside the pod"
ip -n "$pod" -br link
ip -n "$pod" -br addr
ip -n "$pod" route
ip -n "$pod" rule
ip -n "$pod" route show table 1001

for rail in 2 1; do
  echo "==> DEL rail$rail"
  cni DEL "$rail"
done

echo "==> the VFs are back on the host, renamed and restored"
ip -n "$prefix-host" -br link
echo "==> log: $work/railcni.log (removed with the demo)"
sed 's/^/    /' "$work/railcni.log"
