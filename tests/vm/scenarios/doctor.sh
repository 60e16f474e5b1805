# nics: 2
# iommu: on
# railcnictl doctor on real sysfs and real drivers: a healthy node passes
# every link; then each link broken on purpose, one at a time, is named as
# the first broken link with its advice, and mended (where the advice is a
# command, by running it).
vfs_up 2
pf1=${VM_PFS[0]}
export COLUMNS=100   # the human tables as a terminal of 100 columns shows them
pf2=${VM_PFS[1]}
bin=/run/doctor/bin
host=/run/doctor/host
mkdir -p "$bin" "$host/etc/modprobe.d" /run/doctor/net.d
ln -s /proc "$host/proc"
ln -s "$RAILCNI_BIN_DIR/railcni" "$RAILCNI_BIN_DIR/railcni-ipam" "$bin/"
# The node file as `railcnictl plan` writes it: each rail's PF, MTU, rdma.
rails_file() { # <rdma of rail1> [node name]
  printf '{"version":1,"nodeName":"%s","networks":{
"rail1":{"prefix":"%s/31","gateway":"%s","pf":"%s","mtu":9000,"rdma":"%s"},
"rail2":{"prefix":"%s/31","gateway":"%s","pf":"%s","mtu":9000}}}\n' \
    "${2:-vm-0}" "$(rail_addr 1)" "$(rail_gw 1)" "$pf1" "$1" "$(rail_addr 2)" "$(rail_gw 2)" "$pf2" \
    > "$RAILCNI_NODE_CONFIG"
}
rails_file auto
doctor() { railcnictl doctor --cni-bin-dir "$bin" --cni-conf-dir /run/doctor/net.d --host-root "$host" "$@"; }
first() { doctor --json | jq -r '.firstBroken.check // "none"'; }
fix() { doctor --json | jq -r '.firstBroken.fix // ""'; }
result() { doctor --json | jq -r --arg c "$1" '.checks[] | select(.check == $c) | .result'; }
# The first broken link once it is WANT, or after 10 s what it is then: a
# PF's link drops for a moment when igb resets it (VFs or MTU changed).
settle() { local got; for _ in $(seq 40); do got=$(first); [ "$got" = "$1" ] && break; sleep 0.25; done; echo "$got"; }
# broken WHAT CHECK FIX-WORDS: CHECK is the first broken link, its fix says FIX-WORDS.
broken() {
  same "$1: the first broken link is $2" "$2" "$(settle "$2")"
  local advice; advice=$(fix)
  check "$1: the fix says '$3'" grep -qF -- "$3" <<<"$advice"
}
# Carrier comes back a moment after the link is set up.
wait_carrier() { for _ in $(seq 50); do [ "$(cat "/sys/class/net/$1/carrier" 2>/dev/null)" = 1 ] && return; sleep 0.1; done; }

# RDMA's namespace mode shared while a rail requires RDMA. First: the kernel
# changes the mode only while no network namespace but the host's exists.
modprobe ib_core
check "rdma: shared mode set" rdma system set netns shared
rails_file required
broken "rdma shared with rdma: required" rdma/netns-mode "rdma system set netns exclusive"
check "rdma: exclusive mode set" rdma system set netns exclusive
broken "rdma exclusive, not persisted" rdma/netns-mode-persisted "options ib_core netns_mode=0"
echo "options ib_core netns_mode=0" > "$host/etc/modprobe.d/ib_core.conf"
# igb has no RDMA: what stays broken is the rail that requires it.
broken "persisted; igbvf VFs have no RDMA device" rail1/rdma-devices "set the rail's rdma to auto"
rails_file auto
same "rdma auto again: every link holds" none "$(settle none)"

leaf_up
out=$(doctor); rc=$?
same "healthy: doctor exits 0" 0 "$rc"
check "healthy: every link holds" grep -q "every link holds" <<<"$out"
same "healthy: the IOMMU link holds (emulated intel-iommu)" ok "$(result kernel/iommu)"
same "healthy: rail1's VFs are igbvf's" "2 VFs, driver igbvf" "$(doctor --json | jq -r '.checks[] | select(.check == "rail1/vf-drivers") | .found')"
same "healthy: no RDMA in use, so its links do not apply" skipped "$(result rdma/netns-mode)"
# For the README (tests/emulated_sriov.rs compares it): the run as a person sees it.
echo "# readme: healthy"
printf '%s\n' "$out" | sed 's/^/#   /'

# A pod on rail1 holds one VF.
ip netns add pod1
pci=$(vf_pci "$pf1" 0)
conf=$(rail_conf 1 "$pci")
check "an ADD on rail1" cni ADD c1 pod1 net1 "$conf"
same "free VFs count the attachment" "1 of 2 VFs free, 1 attached" "$(doctor --json | jq -r '.checks[] | select(.check == "rail1/free-vfs") | .found')"
check "and DEL gives it back" cni DEL c1 pod1 net1 "$conf"

# 1. The VFs removed.
echo 0 > "/sys/class/net/$pf1/device/sriov_numvfs"
broken "sriov_numvfs 0" rail1/vfs "/sys/class/net/$pf1/device/sriov_numvfs"
echo 2 > "/sys/class/net/$pf1/device/sriov_numvfs"
wait_vfs "$pf1" 2
wait_carrier "$pf1"
same "sriov_numvfs 2 again: every link holds" none "$(settle none)"

# 2. The PF's MTU below the rail's.
ip link set "$pf1" mtu 1500
broken "PF mtu 1500" rail1/pf-mtu "ip link set $pf1 mtu 9000"
out=$(doctor); rc=$?
same "PF mtu 1500: doctor exits 1" 1 "$rc"
echo "# readme: pf-mtu"
printf '%s\n' "$out" | sed 's/^/#   /'
ip link set "$pf1" mtu 9000
wait_carrier "$pf1"
same "PF mtu 9000 again: every link holds" none "$(settle none)"

# 3. The PF down.
ip link set "$pf2" down
broken "PF down" rail2/pf-link "ip link set $pf2 up"
ip link set "$pf2" up
wait_carrier "$pf2"
same "PF up again: every link holds" none "$(settle none)"

# 4. A VF unbound from igbvf: the advice, run as given, binds it again.
vf1=$(vf_pci "$pf1" 1)
echo "$vf1" > /sys/bus/pci/drivers/igbvf/unbind
broken "a VF unbound" rail1/vf-drivers "echo $vf1 > /sys/bus/pci/drivers/igbvf/bind"
check "running the advice works" sh -c "$(fix)"
same "VF bound again: every link holds" none "$(settle none)"

# 5. railcni missing from the CNI bin dir.
rm "$bin/railcni"
broken "railcni missing" cni/railcni "railcnictl install"
ln -s "$RAILCNI_BIN_DIR/railcni" "$bin/"
same "railcni back: every link holds" none "$(settle none)"

# 6. The node file missing, then naming another node.
mv "$RAILCNI_NODE_CONFIG" /run/doctor/node.json.away
broken "no node file" cni/node-file "railcnictl install"
mv /run/doctor/node.json.away "$RAILCNI_NODE_CONFIG"
rails_file auto vm-7
broken "a node file of another node" cni/node-file "railcnictl install"
rails_file auto
same "node file back: every link holds" none "$(settle none)"

# 7. A corrupt lease file: the advice, run as given, repairs it.
check "an ADD leaves a lease" cni ADD c2 pod1 net1 "$conf"
check "and DEL releases it" cni DEL c2 pod1 net1 "$conf"
echo '{"version":1,"checksum":"fnv1a64:0000000000000000","data":{"leases":[]}}' > "$RAILCNI_STATE_DIR/ipam/rail1.leases.json"
broken "a corrupt lease file" cni/state "railcnictl ipam repair rail1"
check "running the advice works" sh -c "$(fix)"
same "repaired: every link holds" none "$(settle none)"
out=$(doctor); rc=$?
same "the last run exits 0" 0 "$rc"
ip netns del pod1
vm_finish
