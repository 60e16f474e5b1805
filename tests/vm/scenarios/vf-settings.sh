# Every VF setting railcni offers, on igb's real PF driver: applied, read
# back on the PF, effective where the wire shows it, refused ones named with
# nothing changed, and after DEL the VF exactly as before ADD (the PF's vf
# line, the netdev's name, MAC and MTU) and able to change its own MAC.
# Each section has a fresh VF of its own, so each stands alone.
leaf_up
node_file
vfs_up 4
pf=${VM_PFS[0]}
ip netns add pod1

use_vf() { # <n>: the section's VF, and its state before ADD
  vf=$1
  pci=$(vf_pci "$pf" "$vf")
  before=$(vf_snapshot "$pf" "$vf")
  orig_mac=$(cat "/sys/class/net/$(vf_netdev "$pf" "$vf")/address")
}
# The VF changes its own MAC (and back): no admin MAC pins it.
own_mac_change() {
  local n; n=$(vf_netdev "$pf" "$vf")
  ip link set "$n" address 02:00:00:00:0f:0f && ip link set "$n" address "$orig_mac"
}
after_del() { # <what>
  same "$1: after DEL the PF's vf line and the VF netdev are as before ADD" "$before" "$(vf_snapshot "$pf" "$vf")"
  check "$1: after DEL the VF can change its own MAC" own_mac_change
  same "$1: after DEL no record is left" "" "$(ls "$RAILCNI_STATE_DIR/attachments" 2>/dev/null)"
}

# 1. mac without trust: the VF is not stranded; ADD works, DEL restores.
use_vf 0
conf=$(rail_conf 1 "$pci" '"mac": "02:00:00:00:01:01"')
out=$(cni ADD c1 pod1 net1 "$conf"); rc=$?
same "mac, trust off: ADD answers 0" 0 "$rc"
same "mac, trust off: net1 in the pod has the MAC" "net1 02:00:00:00:01:01" "$(pod_link pod1 net1)"
check "mac, trust off: the PF holds it as the VF's admin MAC" grep -q "link/ether 02:00:00:00:01:01" <<<"$(vf_line "$pf" "$vf")"
check "mac, trust off: a jumbo DF ping reaches the leaf" jumbo_ping pod1 net1 1
refute "mac, trust off: the untrusted VF cannot change the admin-set MAC" ip -n pod1 link set net1 address 02:00:00:00:01:77
check "mac, trust off: DEL answers 0" cni DEL c1 pod1 net1 "$conf"
after_del "mac, trust off"

# 2. mac with trust on: DEL succeeds and restores everything.
use_vf 1
conf=$(rail_conf 1 "$pci" '"mac": "02:00:00:00:02:02", "trust": "on"')
out=$(cni ADD c2 pod1 net1 "$conf"); rc=$?
same "mac, trust on: ADD answers 0" 0 "$rc"
same "mac, trust on: net1 has the MAC" "net1 02:00:00:00:02:02" "$(pod_link pod1 net1)"
check "mac, trust on: the PF reads back trust on" grep -q "trust on" <<<"$(vf_line "$pf" "$vf")"
check "mac, trust on: a jumbo DF ping reaches the leaf" jumbo_ping pod1 net1 1
check "mac, trust on: the trusted VF may change its MAC" ip -n pod1 link set net1 address 02:00:00:00:02:77
ip -n pod1 link set net1 address 02:00:00:00:02:02
check "mac, trust on: DEL answers 0" cni DEL c2 pod1 net1 "$conf"
check "mac, trust on: a second DEL answers 0" cni DEL c2 pod1 net1 "$conf"
after_del "mac, trust on"

# 3. VLAN 100 with QoS, spoof check off, max_tx_rate: read back on the PF;
#    an untagged leaf gets no answer, a leaf port on VLAN 100 does.
use_vf 2
conf=$(rail_conf 1 "$pci" '"vlan": 100, "vlanQoS": 3, "spoofchk": "off", "max_tx_rate": 100')
out=$(cni ADD c3 pod1 net1 "$conf"); rc=$?
same "vlan/spoofchk/rate: ADD answers 0" 0 "$rc"
line=$(vf_line "$pf" "$vf")
check "vlan/spoofchk/rate: the PF reads back vlan 100, qos 3" grep -q "vlan 100, qos 3" <<<"$line"
check "vlan/spoofchk/rate: the PF reads back spoof checking off" grep -q "spoof checking off" <<<"$line"
check "vlan/spoofchk/rate: the PF reads back max_tx_rate 100Mbps" grep -q "max_tx_rate 100Mbps" <<<"$line"
refute "vlan: an untagged leaf gets no answer" ip netns exec pod1 ping -c 1 -W 1 -I net1 "$(rail_gw 1)"
ip -n leaf addr del "$(rail_gw 1)/31" dev "$VM_LEAF_PF"
ip -n leaf link add link "$VM_LEAF_PF" name v100 type vlan id 100
ip -n leaf link set v100 mtu 9000 up
ip -n leaf addr add "$(rail_gw 1)/31" dev v100
check "vlan: a leaf port on VLAN 100 answers a jumbo DF ping" jumbo_ping pod1 net1 1
ip -n leaf link del v100
ip -n leaf addr add "$(rail_gw 1)/31" dev "$VM_LEAF_PF"
check "vlan/spoofchk/rate: DEL answers 0" cni DEL c3 pod1 net1 "$conf"
after_del "vlan/spoofchk/rate"

# 4. What igb's driver refuses: named with the setting and the driver,
#    nothing changed, nothing logged as a failed undo.
use_vf 3
refused() { # <what> <json members> <setting words>
  cni_log >/dev/null
  local c; c=$(rail_conf 1 "$pci" "\"trust\": \"on\", $2")
  local out; out=$(cni ADD c4 pod1 net1 "$c")
  refute "$1: ADD fails" test -z "$(jq -r '.code // empty' <<<"$out")"
  check "$1: the error names the setting and the driver" grep -q "$3.*igb\|igb.*$3" <<<"$out"
  same "$1: the VF is home, as before ADD" "$before" "$(vf_snapshot "$pf" "$vf")"
  same "$1: no net1 in the pod" "" "$(pod_link pod1 net1)"
  refute "$1: no undo is logged as failed" grep -q "undo step failed" <<<"$(cni_log)"
  check "$1: DEL after the refused ADD answers 0" cni DEL c4 pod1 net1 "$c"
}
refused "link_state" '"link_state": "enable"' "link_state enable"
refused "vlanProto 802.1ad" '"vlan": 100, "vlanProto": "802.1ad"' "proto 802.1ad"
refused "min_tx_rate" '"min_tx_rate": 100, "max_tx_rate": 1000' "min_tx_rate 100"
vm_finish
