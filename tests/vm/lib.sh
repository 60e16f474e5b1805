# Helpers for scenarios on the emulated SR-IOV node (sourced by guest.sh).
# A scenario prints one line per check ("ok N - what" / "not ok N - what",
# with what was seen), and ends with `vm_finish`: "N passed, N failed".

VM_PASS=0
VM_FAIL=0
VM_N=0
export RAILCNI_STATE_DIR=/run/railcni/state
export RAILCNI_LOG_DIR=/run/railcni/log
export RAILCNI_DEVINFO_DIR=/run/railcni/devinfo
export RAILCNI_NODE_CONFIG=/run/railcni/node.json
export RAILCNI_NODE_NAME=vm-0
export RAILCNI_REBIND_TIMEOUT_MS=10000
export PATH="$RAILCNI_BIN_DIR:$PATH"
mkdir -p /run/railcni/state /run/railcni/log /run/railcni/devinfo

# The igb PFs in PCI order: VM_PFS (netdev names); the first is the leaf's.
vm_discover() {
  VM_PFS=()
  local dev
  for dev in $(ls -d /sys/bus/pci/drivers/igb/0000:* 2>/dev/null | sort); do
    [ -e "$dev/physfn" ] && continue
    VM_PFS+=("$(ls "$dev/net" | head -n 1)")
  done
  VM_LEAF_PF=${VM_PFS[0]:-}
  VM_PFS=("${VM_PFS[@]:1}")
  [ -n "$VM_LEAF_PF" ] && ((${#VM_PFS[@]} > 0)) || { echo "not ok - no igb PFs found"; return 1; }
}

_vm_report() { # <rc> <what> <output>
  VM_N=$((VM_N + 1))
  local t; t=$(cut -d' ' -f1 /proc/uptime)
  if [ "$1" = 0 ]; then
    VM_PASS=$((VM_PASS + 1)); echo "ok $VM_N - $2 # at $t s"
  else
    VM_FAIL=$((VM_FAIL + 1)); echo "not ok $VM_N - $2 # at $t s"
    [ -n "$3" ] && printf '%s\n' "$3" | sed 's/^/#   /'
  fi
  return 0
}

# check WHAT CMD...: CMD succeeds.
check() { local what=$1 out rc; shift; out=$("$@" 2>&1); rc=$?; _vm_report "$rc" "$what" "$out"; }
# refute WHAT CMD...: CMD fails.
refute() { local what=$1 out rc; shift; out=$("$@" 2>&1); rc=$?; _vm_report "$((rc == 0))" "$what" "${out:-(it succeeded)}"; }
# same WHAT EXPECTED ACTUAL
same() {
  if [ "$2" = "$3" ]; then _vm_report 0 "$1" ""; else _vm_report 1 "$1" "expected: $2
     got: $3"; fi
}
vm_finish() {
  echo "emulated-sriov: $VM_PASS passed, $VM_FAIL failed"
  ((VM_FAIL == 0))
}

# The leaf switch: the first PF in namespace "leaf", MTU 9000, holding the
# gateway of every rail's /31 (rail r: 172.(14+2r).0.1/31, fd00:r::1/127).
leaf_up() {
  ip netns add leaf
  ip link set "$VM_LEAF_PF" netns leaf
  ip -n leaf link set lo up
  ip -n leaf link set "$VM_LEAF_PF" mtu 9000 up
  local r
  for ((r = 1; r <= ${#VM_PFS[@]}; r++)); do
    ip -n leaf addr add "$(rail_gw "$r")/31" dev "$VM_LEAF_PF"
    ip -n leaf addr add "fd00:$r::1/127" dev "$VM_LEAF_PF" nodad
  done
}
rail_cidr() { echo "172.$((14 + 2 * $1)).0.0/15"; }
rail_gw() { echo "172.$((14 + 2 * $1)).0.1"; }
rail_addr() { echo "172.$((14 + 2 * $1)).0.0"; }

# The node file: vm-0 holds 172.(14+2r).0.0/31 on rail r (network "rail<r>"),
# and fd00:r::/127 on the dual-stack networks ("dual<r>").
node_file() {
  local r nets=""
  for ((r = 1; r <= ${#VM_PFS[@]}; r++)); do
    nets+="${nets:+,}\"rail$r\": {\"prefix\": \"$(rail_addr "$r")/31\", \"gateway\": \"$(rail_gw "$r")\"}"
  done
  printf '{"nodeName": "vm-0", "networks": {%s}}\n' "$nets" > "$RAILCNI_NODE_CONFIG"
}

# Every PF up at MTU 9000 with N VFs (igb brings VFs up ~1 s after the write).
vfs_up() { # <count>
  local pf
  for pf in "${VM_PFS[@]}"; do
    ip link set "$pf" mtu 9000 up
    echo "$1" > "/sys/class/net/$pf/device/sriov_numvfs"
  done
  for pf in "${VM_PFS[@]}"; do wait_vfs "$pf" "$1"; done
}
wait_vfs() { # <pf> <count>: every VF bound with a netdev
  local i n
  for ((i = 0; i < 100; i++)); do
    n=$(ls -d /sys/class/net/"$1"/device/virtfn*/net/* 2>/dev/null | wc -l)
    ((n >= $2)) && return 0
    sleep 0.1
  done
  echo "wait_vfs: $1 has $n of $2 VF netdevs" >&2
  return 1
}
vf_pci() { basename "$(readlink -f "/sys/class/net/$1/device/virtfn$2")"; }   # <pf> <n>
vf_netdev() { ls "/sys/class/net/$1/device/virtfn$2/net" 2>/dev/null | head -n 1; }
# The PF's `vf N` line as iproute2 prints it (the PF-side settings).
vf_line() { ip link show "$1" | grep -E "^ +vf $2 " | sed 's/^ *//'; }
# The VF netdev on the host: name, MAC, MTU.
vf_host() {
  local n; n=$(vf_netdev "$1" "$2")
  [ -n "$n" ] && echo "$n $(cat "/sys/class/net/$n/address") mtu $(cat "/sys/class/net/$n/mtu")"
}

# A sysfs view for RAILCNI_SYSFS_ROOT in which VF <pci> of PF <pf> has the
# RDMA device <device> (soft-RoCE, which no igb VF has): the PF as it is,
# the VF with its own files plus infiniband/<device>, a link to the real
# device's directory (which may be made later).
rdma_view() { # <dir> <pf> <pci> <device>
  local view=$1 pf=$2 pci=$3 pf_pci
  pf_pci=$(basename "$(readlink -f "/sys/class/net/$pf/device")")
  mkdir -p "$view/bus/pci/devices/$pci/infiniband"
  ln -s "/sys/bus/pci/devices/$pf_pci" "$view/bus/pci/devices/$pf_pci"
  ln -s "/sys/bus/pci/devices/$pf_pci" "$view/bus/pci/devices/$pci/physfn"
  ln -s "$(readlink -f "/sys/bus/pci/devices/$pci/driver")" "$view/bus/pci/devices/$pci/driver"
  ln -s "/sys/bus/pci/devices/$pci/net" "$view/bus/pci/devices/$pci/net"
  ln -s "/sys/class/infiniband/$4" "$view/bus/pci/devices/$pci/infiniband/$4"
}

# cni VERB CONTAINER NETNS IFNAME CONFIG: railcni's stdout; its exit status.
cni() {
  local verb=$1 id=$2 ns=$3 ifname=$4 conf=$5
  CNI_COMMAND=$verb CNI_CONTAINERID=$id CNI_NETNS=${ns:+/run/netns/$ns} CNI_IFNAME=$ifname \
    CNI_PATH=$RAILCNI_BIN_DIR \
    CNI_ARGS="IgnoreUnknown=true;K8S_POD_NAMESPACE=default;K8S_POD_NAME=$id" \
    railcni <<<"$conf" 2>>/run/railcni/cni.err
}
# What railcni logged since the last call of this (its stderr).
cni_log() { cat /run/railcni/cni.err 2>/dev/null; : > /run/railcni/cni.err; }
# The pod's link: name, state, MAC (`ip -br`).
pod_link() { ip -n "$1" -br link show "$2" 2>/dev/null | awk '{print $1, $3}'; }
# Snapshot of VF <n> of PF <pf>: the PF's vf line and the netdev on the host.
vf_snapshot() { echo "$(vf_line "$1" "$2") | $(vf_host "$1" "$2")"; }
# A rail NAD: rail_conf R PCI [EXTRA-JSON-MEMBERS]
rail_conf() {
  printf '{"cniVersion":"1.1.0","name":"rail%s","type":"railcni","deviceID":"%s","mtu":9000,"logLevel":"debug",
"ipam":{"type":"railcni-ipam","cidr":"%s","perNodePrefix":31,"gatewayIndex":1,"routes":[{"dst":"172.16.0.0/12"}]}%s}' \
    "$1" "$2" "$(rail_cidr "$1")" "${3:+,$3}"
}
# A jumbo don't-fragment ping from the pod to rail R's gateway.
jumbo_ping() { ip netns exec "$1" ping -c 1 -W 2 -M do -s 8972 -I "$2" "$(rail_gw "$3")"; }
