# nics: 2
# NVIDIA's IPv6 host-leaf layout on real igb VFs: a /64 per node per rail,
# the host ::1, the leaf and gateway ::2. An IPv6-only rail: ADD, a jumbo
# don't-fragment ping6 to the gateway, the `from ::1` rule and its table,
# CHECK, DEL. Then a dual-stack rail: an IPv4 /31 and an IPv6 /64.
leaf_up
node_file
vfs_up 1
ip -n leaf addr add fd02:1:100::2/64 dev "$VM_LEAF_PF" nodad
ip -n leaf addr add fd02:2:100::2/64 dev "$VM_LEAF_PF" nodad
pf=${VM_PFS[0]}
pci=$(vf_pci "$pf" 0)
before=$(vf_snapshot "$pf" 0)
ip netns add pod1

v6=$(printf '{"cniVersion":"1.1.0","name":"v6rail1","type":"railcni","deviceID":"%s","mtu":9000,
"ipam":{"type":"railcni-ipam","cidr":"fd02:1:100::/40","perNodePrefix":64,"routes":[{"dst":"fd02::/16"}],"nodes":{"vm-0":0}}}' "$pci")
out=$(cni ADD c1 pod1 net1 "$v6"); rc=$?
same "ipv6 /64: ADD answers 0" 0 "$rc"
same "ipv6 /64: host ::1, gateway ::2" "fd02:1:100::1/64 fd02:1:100::2" "$(jq -r '"\(.ips[0].address) \(.ips[0].gateway)"' <<<"$out" 2>&1)"
check "ipv6 /64: a jumbo DF ping6 to the gateway right after ADD" \
  ip netns exec pod1 ping -6 -c 1 -W 2 -M do -s 8952 -I net1 fd02:1:100::2
rule=$(ip -n pod1 -6 rule show | grep 'from fd02:1:100::1 ')
same "ipv6 /64: the from ::1 rule" 1 "$(grep -c 'lookup' <<<"$rule")"
table=$(awk '{print $NF}' <<<"$rule")
check "ipv6 /64: the rule's table routes the rail via ::2" \
  bash -c "ip -n pod1 -6 route show table $table | grep -q 'fd02::/16 via fd02:1:100::2 dev net1'"
prev=$(jq -c --argjson p "$out" '. + {prevResult: $p}' <<<"$v6")
check "ipv6 /64: CHECK answers 0" cni CHECK c1 pod1 net1 "$prev"
check "ipv6 /64: DEL answers 0" cni DEL c1 pod1 net1 "$v6"
same "ipv6 /64: the VF is as before ADD" "$before" "$(vf_snapshot "$pf" 0)"
same "ipv6 /64: no IPv6 rule is left" "" "$(ip -n pod1 -6 rule show | grep -v -E 'lookup (local|main)')"

dual=$(printf '{"cniVersion":"1.1.0","name":"dual1","type":"railcni","deviceID":"%s","mtu":9000,
"ipam":{"type":"railcni-ipam","cidr":"172.16.0.0/15","routes":[{"dst":"172.16.0.0/12"}],
"ipv6":{"cidr":"fd02:2:100::/40","perNodePrefix":64,"routes":[{"dst":"fd02::/16"}]},
"nodes":{"vm-0":0}}}' "$pci")
out=$(cni ADD d1 pod1 net1 "$dual"); rc=$?
same "dual /31 + /64: ADD answers 0" 0 "$rc"
same "dual /31 + /64: both addresses" "172.16.0.0/31 fd02:2:100::1/64" "$(jq -r '[.ips[].address] | join(" ")' <<<"$out" 2>&1)"
check "dual /31 + /64: a jumbo DF IPv4 ping" jumbo_ping pod1 net1 1
check "dual /31 + /64: a jumbo DF ping6 to ::2" ip netns exec pod1 ping -6 -c 1 -W 2 -M do -s 8952 -I net1 fd02:2:100::2
check "dual /31 + /64: DEL answers 0" cni DEL d1 pod1 net1 "$dual"
same "dual /31 + /64: the VF is as before ADD" "$before" "$(vf_snapshot "$pf" 0)"
vm_finish
