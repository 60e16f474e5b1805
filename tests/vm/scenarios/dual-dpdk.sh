# nics: 2
# iommu: on
# A dual-stack rail (IPv4 /31 and IPv6 /127 on one VF, both usable as soon
# as ADD answers), then DPDK mode: a VF bound to vfio-pci
# (the guest's emulated IOMMU gives it a group) is addressed, not moved, and
# given back on DEL.
leaf_up
node_file
vfs_up 2
pf=${VM_PFS[0]}
pci=$(vf_pci "$pf" 0)
before=$(vf_snapshot "$pf" 0)
ip netns add pod1
dual=$(printf '{"cniVersion":"1.1.0","name":"dual1","type":"railcni","deviceID":"%s","mtu":9000,
"ipam":{"type":"railcni-ipam","cidr":"172.16.0.0/15","routes":[{"dst":"172.16.0.0/12"}],
"ipv6":{"cidr":"fd00:1::/48","perNodePrefix":127,"gatewayIndex":1,"routes":[{"dst":"fd00::/16"}]},
"nodes":{"vm-0":0}}}' "$pci")
out=$(cni ADD d1 pod1 net1 "$dual"); rc=$?
same "dual-stack: ADD answers 0" 0 "$rc"
same "dual-stack: the result holds the /31 and the /127" "172.16.0.0/31 fd00:1::/127" "$(jq -r '[.ips[].address] | join(" ")' <<<"$out" 2>&1)"
# No wait between ADD's answer and the pings: both families work at once.
check "dual-stack: a jumbo DF IPv4 ping right after ADD" jumbo_ping pod1 net1 1
check "dual-stack: a jumbo IPv6 ping right after ADD" ip netns exec pod1 ping -6 -c 1 -W 2 -M do -s 8952 -I net1 fd00:1::1
same "dual-stack: nothing tentative" "" "$(ip -n pod1 -6 addr show dev net1 tentative)"
check "dual-stack: DEL answers 0" cni DEL d1 pod1 net1 "$dual"
same "dual-stack: the VF is as before ADD" "$before" "$(vf_snapshot "$pf" 0)"
same "dual-stack: no IPv6 rule is left" "" "$(ip -n pod1 -6 rule show | grep -v -E 'lookup (local|main)')"

# DPDK: VF 1 bound to vfio-pci.
pci1=$(vf_pci "$pf" 1)
modprobe vfio-pci
echo vfio-pci > "/sys/bus/pci/devices/$pci1/driver_override"
echo "$pci1" > "/sys/bus/pci/devices/$pci1/driver/unbind"
echo "$pci1" > /sys/bus/pci/drivers_probe
same "dpdk: the VF is bound to vfio-pci" vfio-pci "$(basename "$(readlink -f "/sys/bus/pci/devices/$pci1/driver")")"
conf=$(rail_conf 1 "$pci1")
out=$(cni ADD p1 pod1 net1 "$conf"); rc=$?
same "dpdk: ADD answers 0" 0 "$rc"
same "dpdk: the result gives the VF's PCI address and the /31" "$pci1 172.16.0.0/31" "$(jq -r '"\(.interfaces[0].pciID) \(.ips[0].address)"' <<<"$out" 2>&1)"
same "dpdk: nothing was moved into the pod" "lo" "$(ip -n pod1 -br link | awk '{print $1}' | tr '\n' ' ' | xargs)"
check "dpdk: DEL answers 0" cni DEL p1 pod1 net1 "$conf"
same "dpdk: no record is left" "" "$(ls "$RAILCNI_STATE_DIR/attachments" 2>/dev/null)"
same "dpdk: the VF stays bound to vfio-pci" vfio-pci "$(basename "$(readlink -f "/sys/bus/pci/devices/$pci1/driver")")"
vm_finish
