# nics: 8
# An 8-rail pod on 8 igb PFs, Multus-style (one call per rail, net1..net8,
# DEL in reverse order): ADD, jumbo don't-fragment pings to the leaf over
# each rail, CHECK with the ADD result, the operator commands (status,
# inspect, probe, gc, metrics' per-rail counters) on real VFs, DEL and a
# second DEL; afterwards every VF is as it was before ADD.
leaf_up
node_file
vfs_up 1
n=${#VM_PFS[@]}
same "8 rail PFs" 8 "$n"
declare -A before result
for ((r = 1; r <= n; r++)); do before[$r]=$(vf_snapshot "${VM_PFS[r - 1]}" 0); done
conf_of() { rail_conf "$1" "$(vf_pci "${VM_PFS[$1 - 1]}" 0)"; }
with_prev() { jq -c --argjson prev "${result[$1]}" '. + {prevResult: $prev}' <<<"$(conf_of "$1")"; }
ip netns add pod1
for ((r = 1; r <= n; r++)); do
  out=$(cni ADD c1 pod1 "net$r" "$(conf_of "$r")"); rc=$?
  result[$r]=$out
  same "rail $r: ADD answers 0" 0 "$rc"
  same "rail $r: the result names net$r with MTU 9000 and the VF's PCI address" \
    "net$r 9000 $(vf_pci "${VM_PFS[r - 1]}" 0)" "$(jq -r '.interfaces[0] | "\(.name) \(.mtu) \(.pciID)"' <<<"$out" 2>&1)"
  same "rail $r: the result's address is the node's /31" "$(rail_addr "$r")/31" "$(jq -r '.ips[0].address' <<<"$out" 2>&1)"
done
for ((r = 1; r <= n; r++)); do
  check "rail $r: a jumbo DF ping reaches the leaf over net$r" jumbo_ping pod1 "net$r" "$r"
  check "rail $r: CHECK with the ADD result answers 0" cni CHECK c1 pod1 "net$r" "$(with_prev "$r")"
done
status=$(railcnictl status --json); rc=$?
same "status: exit 0 on a healthy node" 0 "$rc"
same "status: 8 attachments" 8 "$(jq '[.attachments[]] | length' <<<"$status" 2>&1)"
check "inspect: every rail OK (exit 0)" railcnictl inspect /run/netns/pod1
check "probe: every rail answers (exit 0)" railcnictl probe /run/netns/pod1
gc=$(railcnictl gc --json); rc=$?
same "gc: nothing to detach while the pod lives" "0 0" "$rc $(jq '[.attachments[]?] | length' <<<"$gc" 2>&1)"
metrics=$(railcnictl metrics)
for ((r = 1; r <= n; r++)); do
  check "metrics: rail$r's received bytes from the VF's counters" \
    grep -qE "^railcni_interface_receive_bytes_total\{.*network=\"rail$r\".*\} [1-9]" <<<"$metrics"
done
for ((r = n; r >= 1; r--)); do
  check "rail $r: DEL answers 0" cni DEL c1 pod1 "net$r" "$(conf_of "$r")"
  check "rail $r: a second DEL answers 0" cni DEL c1 pod1 "net$r" "$(conf_of "$r")"
done
for ((r = 1; r <= n; r++)); do
  same "rail $r: the PF's vf 0 line and the VF netdev are as before ADD" "${before[$r]}" "$(vf_snapshot "${VM_PFS[r - 1]}" 0)"
done
same "no rule is left in the pod" "" "$(ip -n pod1 rule show | grep -v -E 'lookup (local|main|default)')"
same "no attachment record is left" "" "$(ls "$RAILCNI_STATE_DIR/attachments" 2>/dev/null)"
vm_finish
