#!/usr/bin/env bash
# Build railcni, install it into a temporary /opt/cni/bin, and attach rail VFs
# to two pods on two emulated GPU nodes whose rails meet in a leaf namespace
# (scripts/fabric.sh). Shows the pods' view, pings across the rails, detaches
# and cleans up. Needs root (network namespaces) and cargo.
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$(id -u)" = 0 ] || { echo "demo.sh: run as root (network namespaces)" >&2; exit 1; }
# Every tool the demo uses, installed from Debian's packages when missing.
need=()
command -v ip >/dev/null || need+=(iproute2)
command -v ping >/dev/null || need+=(iputils-ping)
command -v cargo >/dev/null || { echo "demo.sh: needs a Rust toolchain (cargo)" >&2; exit 1; }
if ((${#need[@]})); then
  echo "==> installing ${need[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# The dev profile: a demo shows behaviour, not speed, and the release
# profile's whole-program optimisation (one codegen unit, LTO: what the
# shipped static binaries get, scripts/build-static.sh) takes minutes more
# on a small machine.
echo "==> building railcni"
cargo build --locked --quiet --bin railcni --bin railcni-ipam --bin railcnictl

work=$(mktemp -d /tmp/railcni-demo.XXXXXX)
prefix="demo$$"
cleanup() {
  ip netns del "$prefix-pa" 2>/dev/null || true
  ip netns del "$prefix-pb" 2>/dev/null || true
  scripts/fabric.sh down "$prefix" "$work" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

bin="$work/opt/cni/bin"
install -d "$bin"
install -m 0755 target/debug/railcni target/debug/railcni-ipam "$bin/"
install -m 0755 target/debug/railcnictl "$work/railcnictl"
echo "==> installed railcni and railcni-ipam into $bin"

echo "==> fabric: nodes gpu-0 and gpu-1, 2 rails each, one leaf holding the /31 gateways"
scripts/fabric.sh up "$prefix" "$work" 2 | while read -r node rail pci ifname addr gw; do
  echo "    $node rail $rail: VF $pci ($ifname) -> $addr/31, leaf port $gw"
done

cni() { # <command> <node> <pod> <rail>
  local side=a; [ "$2" = gpu-1 ] && side=b
  local cidr="172.$((14 + 2 * $4)).0.0/15"
  ip netns exec "$prefix$side-host" env \
    CNI_COMMAND="$1" CNI_CONTAINERID="$3" CNI_NETNS="/var/run/netns/$3" \
    CNI_IFNAME="net$4" CNI_PATH="$bin" \
    CNI_ARGS="IgnoreUnknown=true;K8S_POD_NAMESPACE=default;K8S_POD_NAME=$3" \
    RAILCNI_SYSFS_ROOT="$work/$side-sys" RAILCNI_STATE_DIR="$work/$side-state" RAILCNI_NODE_NAME="$2" \
    RAILCNI_NODE_CONFIG="$work/no-node-file.json" RAILCNI_LOG_DIR="$work" \
    "$bin/railcni" 2>/dev/null <<JSON
{
  "cniVersion": "1.1.0", "name": "rail$4", "type": "railcni",
  "deviceID": "0000:1$4:00.2", "mtu": 9000,
  "logLevel": "info", "logFile": "$work/railcni.log",
  "ipam": {
    "type": "railcni-ipam", "cidr": "$cidr", "nodes": ["gpu-0", "gpu-1"],
    "routes": [{"dst": "$cidr"}, {"dst": "172.16.0.0/12"}]
  }
}
JSON
}

pa="$prefix-pa" pb="$prefix-pb"
for pod in "$pa" "$pb"; do ip netns add "$pod"; ip -n "$pod" link set lo up; done
for rail in 1 2; do
  echo "==> ADD rail$rail: pod A on gpu-0 as net$rail"
  cni ADD gpu-0 "$pa" "$rail"
  echo "==> ADD rail$rail: pod B on gpu-1 as net$rail"
  cni ADD gpu-1 "$pb" "$rail" >/dev/null
done

echo "==> inside pod A"
ip -n "$pa" -br addr
echo "--- rules"; ip -n "$pa" rule
echo "--- main table"; ip -n "$pa" route
echo "--- rail 1 table (1001)"; ip -n "$pa" route show table 1001

# The operator's view of gpu-0 (same state dir and sysfs the plugin uses).
railcni_on_a() {
  ip netns exec "${prefix}a-host" env RAILCNI_SYSFS_ROOT="$work/a-sys" RAILCNI_STATE_DIR="$work/a-state" \
    RAILCNI_NODE_NAME=gpu-0 RAILCNI_NODE_CONFIG="$work/no-node-file.json" COLUMNS=120 "$work/railcnictl" "$@"
}
echo "==> railcnictl status (on gpu-0)"
railcni_on_a status | sed 's/^/    /'
echo "==> railcnictl inspect $pa (on gpu-0)"
railcni_on_a inspect "/var/run/netns/$pa" | sed 's/^/    /'

echo "==> pod A -> pod B, 9000-byte frames, don't fragment"
for rail in 1 2; do
  ip netns exec "$pa" ping -q -c 2 -i 0.2 -M do -s 8972 -I "172.$((14 + 2 * rail)).0.0" "172.$((14 + 2 * rail)).0.2" | sed -n 's/^/    /; /packets/p'
done
echo "==> cross-rail: pod A net1 -> pod B net2 (via rail 1's supernet route)"
ip netns exec "$pa" ping -q -c 2 -i 0.2 -I 172.16.0.0 172.18.0.2 | sed -n 's/^/    /; /packets/p'
ip -n "$pa" route get 172.18.0.2 from 172.16.0.0 | sed 's/^/    /'

for rail in 2 1; do
  cni DEL gpu-0 "$pa" "$rail"
  cni DEL gpu-1 "$pb" "$rail"
done
echo "==> after DEL: pod A has no rail rules or routes left"
ip -n "$pa" rule | sed 's/^/    /'
echo "==> the VFs are back on gpu-0, renamed and restored"
ip -n "${prefix}a-host" -br link | sed 's/^/    /'
echo "==> railcni's log"
sed 's/^/    /' "$work/railcni.log"
