# nics: 2
# A whole-NIC rail on a real igb PF (#61): the node file grants rail 1 its
# PF whole (wholeNic), with no VFs enabled on it. ADD moves the PF itself
# into the pod at MTU 9000 with the rail's /31, and it pings the leaf;
# CHECK holds; DEL brings it back under its name, MTU 1500 and up. The
# other PF, not granted, is refused as a device that is not a VF, and the
# granted PF is refused while it has VFs or the host addresses it.
leaf_up
pf1=${VM_PFS[0]} pf2=${VM_PFS[1]}
pci1=$(basename "$(readlink -f "/sys/class/net/$pf1/device")")
pci2=$(basename "$(readlink -f "/sys/class/net/$pf2/device")")
echo 0 > "/sys/class/net/$pf1/device/sriov_numvfs"
ip link set "$pf1" mtu 1500 up
printf '{"nodeName": "vm-0", "networks": {"rail1": {"prefix": "%s/31", "gateway": "%s", "pf": "%s", "wholeNic": true}, "rail2": {"prefix": "%s/31", "gateway": "%s", "pf": "%s"}}}\n' \
  "$(rail_addr 1)" "$(rail_gw 1)" "$pf1" "$(rail_addr 2)" "$(rail_gw 2)" "$pf2" > "$RAILCNI_NODE_CONFIG"
# Name, MTU and whether it is administratively up.
as_host() { ip -j link show dev "$1" 2>&1 | jq -r '.[0] | "\(.ifname) \(.mtu) \(.flags | index("UP") != null)"' 2>&1; }
before=$(as_host "$pf1")
ip netns add pod1

# Refused, nothing changed.
out=$(cni ADD c2 pod1 net2 "$(rail_conf 2 "$pci2")" 2>&1)
check "a PF not granted is refused as a device that is not a VF" grep -q '"code":102.*not an SR-IOV VF' <<<"$out"
echo 2 > "/sys/class/net/$pf1/device/sriov_numvfs"
sleep 1
out=$(cni ADD c1 pod1 net1 "$(rail_conf 1 "$pci1")" 2>&1)
check "the granted PF with VFs enabled is refused naming sriov_numvfs" grep -q 'sriov_numvfs' <<<"$out"
echo 0 > "/sys/class/net/$pf1/device/sriov_numvfs"
ip link set "$pf1" mtu 1500 up
ip addr add 192.0.2.1/24 dev "$pf1"
out=$(cni ADD c1 pod1 net1 "$(rail_conf 1 "$pci1")" 2>&1)
check "the granted PF the host addresses is refused naming the address" grep -q '192.0.2.1/24' <<<"$out"
ip addr flush dev "$pf1"
same "refused: the PF is on the host as it was" "$before" "$(as_host "$pf1")"

# Granted and fit: the whole PF is the rail.
check "ADD moves the whole PF into the pod" cni ADD c1 pod1 net1 "$(rail_conf 1 "$pci1")"
same "the PF is net1 in the pod at MTU 9000" 9000 "$(ip netns exec pod1 cat /sys/class/net/net1/mtu 2>&1)"
refute "the PF is gone from the host" ip link show "$pf1"
sleep 1
check "a jumbo DF ping through the whole PF reaches the leaf" jumbo_ping pod1 net1 1
same "the record says wholeNic" true "$(jq -r .wholeNic "$RAILCNI_STATE_DIR/attachments/$pci1.json" 2>&1)"
check "status names it a whole PF" grep -q "$pf1 (whole PF)" <<<"$(railcnictl status)"
check "DEL answers 0" cni DEL c1 pod1 net1 "$(rail_conf 1 "$pci1")"
same "the PF is home under its name, MTU 1500 and up" "$before" "$(as_host "$pf1")"
same "no record is left" "" "$(ls "$RAILCNI_STATE_DIR/attachments" 2>/dev/null)"
vm_finish
