# nics: 1
# A pod whose namespace outlives its path, on real igb VFs (#52): a process
# still in it, then only an open descriptor on it. DEL always answers; the
# rail's only address on the node goes only when the VF is really home,
# so no two pods ever hold it; gc finishes what DEL had to leave held.
leaf_up
node_file
vfs_up 2
pf=${VM_PFS[0]}
leases=$RAILCNI_STATE_DIR/ipam/rail1.leases.json
conf0=$(rail_conf 1 "$(vf_pci "$pf" 0)")
conf1=$(rail_conf 1 "$(vf_pci "$pf" 1)")
vf_home() { test -n "$(vf_netdev "$pf" 0)"; }

# 1. The path is removed while a process is still in the namespace.
ip netns add a
out=$(cni ADD ca a net1 "$conf0")
same "ADD answers the rail's /31" "172.16.0.0/31" "$(jq -r '.ips[0].address' <<<"$out" 2>&1)"
ip netns exec a sleep 300 &
holder=$!
sleep 0.5
ip netns del a
refute "the VF stays in the namespace its process holds" vf_home
cni DEL ca a net1 "$conf0" >/dev/null
same "DEL through a path that is gone answers 0" 0 "$?"
check "DEL found the namespace through the process in it" grep -q "process $holder is in it" <<<"$(cni_log)"
check "the VF is home" vf_home
refute "the lease is released" grep -q '"ca"' "$leases"
kill "$holder"; wait "$holder" 2>/dev/null

# 2. Only an open descriptor holds the namespace: nothing railcni can reach.
ip netns add b
cni ADD cb b net1 "$conf0" >/dev/null
same "ADD answers 0" 0 "$?"
sleep 300 </run/netns/b &
holder=$!
ip netns del b
cni DEL cb b net1 "$conf0" >/dev/null
same "DEL answers 0 (the runtime must not hang)" 0 "$?"
check "DEL says the VF is out of reach" grep -q "neither home nor in a namespace railcni can reach" <<<"$(cni_log)"
refute "the VF is still in the held namespace" vf_home
check "its address stays leased" grep -q '"cb"' "$leases"
ip netns add c
out=$(cni ADD cc c net1 "$conf1")
same "a second pod's ADD on the rail is refused: no address is handed out twice" 110 "$(jq -r '.code' <<<"$out" 2>&1)"
status=$(railcnictl status --json)
same "status names the attachment as held out of reach" true \
  "$(jq '[.problems[].kind] | index("netns-unreachable") != null' <<<"$status" 2>&1)"
kill "$holder"; wait "$holder" 2>/dev/null
for ((i = 0; i < 100; i++)); do vf_home && break; sleep 0.1; done
check "the kernel hands the VF back once the namespace dies" vf_home
check "gc --apply finishes the attachment" railcnictl gc --apply
refute "the lease is released" grep -q '"cb"' "$leases"
out=$(cni ADD cc c net1 "$conf1")
same "now the second pod gets the address" "172.16.0.0/31" "$(jq -r '.ips[0].address' <<<"$out" 2>&1)"
cni DEL cc c net1 "$conf1" >/dev/null
same "its DEL answers 0" 0 "$?"
vm_finish
