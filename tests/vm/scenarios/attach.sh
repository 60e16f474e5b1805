# ADD, CHECK, DEL and a second DEL of one VF per rail PF into one pod, with
# jumbo don't-fragment pings to the leaf over each rail; afterwards every
# VF is as it was before ADD, on the PF and as a netdev.
leaf_up
node_file
vfs_up 2
n=${#VM_PFS[@]}
declare -A before_pf before_host
for ((r = 1; r <= n; r++)); do
  pf=${VM_PFS[r - 1]}
  before_pf[$r]=$(vf_line "$pf" 0)
  before_host[$r]=$(vf_host "$pf" 0)
done
ip netns add pod1
for ((r = 1; r <= n; r++)); do
  pf=${VM_PFS[r - 1]}
  conf=$(rail_conf "$r" "$(vf_pci "$pf" 0)")
  out=$(cni ADD c1 pod1 "net$r" "$conf"); rc=$?
  same "rail $r: ADD answers 0" 0 "$rc"
  same "rail $r: the result names net$r with MTU 9000" "net$r 9000" "$(jq -r '.interfaces[0] | "\(.name) \(.mtu)"' <<<"$out" 2>&1)"
  same "rail $r: the result's address is the node's /31" "$(rail_addr "$r")/31" "$(jq -r '.ips[0].address' <<<"$out" 2>&1)"
done
for ((r = 1; r <= n; r++)); do
  check "rail $r: a jumbo DF ping reaches the leaf over net$r" jumbo_ping pod1 "net$r" "$r"
  pf=${VM_PFS[r - 1]}
  check "rail $r: CHECK answers 0" cni CHECK c1 pod1 "net$r" "$(rail_conf "$r" "$(vf_pci "$pf" 0)")"
done
check "status on real VFs" railcni status
check "inspect on real VFs" railcni inspect
for ((r = 1; r <= n; r++)); do
  pf=${VM_PFS[r - 1]}
  conf=$(rail_conf "$r" "$(vf_pci "$pf" 0)")
  check "rail $r: DEL answers 0" cni DEL c1 pod1 "net$r" "$conf"
  check "rail $r: a second DEL answers 0" cni DEL c1 pod1 "net$r" "$conf"
  same "rail $r: the PF's vf 0 line is as before ADD" "${before_pf[$r]}" "$(vf_line "$pf" 0)"
  same "rail $r: the VF netdev is home as before ADD" "${before_host[$r]}" "$(vf_host "$pf" 0)"
done
same "no rule is left in the pod" "" "$(ip -n pod1 rule show | grep -v -E 'lookup (local|main|default)')"
same "no attachment record is left" "" "$(ls $RAILCNI_STATE_DIR/attachments 2>/dev/null)"
vm_finish
