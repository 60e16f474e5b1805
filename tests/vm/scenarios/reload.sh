# nics: 2
# A pod's rails survive a PF driver reload: with railcnictl agent running,
# `sriov_numvfs` to 0 and back and `rmmod igbvf; modprobe igbvf` tear the VFs
# out of the live pod; the agent puts them back (name, MTU, MAC, PF-side
# settings, address, routes, rule) and the rails ping again. Without the
# agent, status reports it and `gc --apply` puts it back; DEL converges
# either way, and the node ends clean.
leaf_up
node_file
vfs_up 2
ip netns add pod1
pf1=${VM_PFS[0]} pf2=${VM_PFS[1]}
conf1=$(rail_conf 1 "$(vf_pci "$pf1" 0)" '"mac": "02:00:00:00:0a:01", "trust": "on", "spoofchk": "off"')
conf2=$(rail_conf 2 "$(vf_pci "$pf2" 0)")
check "ADD rail 1 (mac, trust on, spoofchk off)" cni ADD c1 pod1 net1 "$conf1"
check "ADD rail 2" cni ADD c1 pod1 net2 "$conf2"
railcnictl agent --listen 127.0.0.1:9476 2>/run/railcni/agent.log &
agent=$!
sleep 1
pings() { jumbo_ping pod1 net1 1 >/dev/null 2>&1 && jumbo_ping pod1 net2 2 >/dev/null 2>&1; }
check "both rails ping before the reload" pings
# Wait up to 30 s for both rails to ping again; print how long it took
# from the VFs' return.
wait_back() { # <what>
  local start; start=$(date +%s%N)
  for ((i = 0; i < 300; i++)); do
    if [ -n "$(pod_link pod1 net1)" ] && [ -n "$(pod_link pod1 net2)" ]; then
      echo "# $1: both VFs back in the pod $((($(date +%s%N) - start) / 1000000)) ms after they returned" >> /run/reload-times
      break
    fi
    sleep 0.05
  done
  for ((i = 0; i < 300; i++)); do
    if pings; then
      echo "# $1: both rails ping again $((($(date +%s%N) - start) / 1000000)) ms after the VFs returned" >> /run/reload-times
      return 0
    fi
    sleep 0.1
  done
  return 1
}

# 1. sriov_numvfs to 0 and back on rail 1's PF.
echo 0 > "/sys/class/net/$pf1/device/sriov_numvfs"
refute "numvfs 0: rail 1 no longer pings" jumbo_ping pod1 net1 1
status=$(railcnictl status --json)
same "numvfs 0: status reports the VF gone" "vf-gone" "$(jq -r '[.problems[].kind] | map(select(startswith("vf-"))) | join(",")' <<<"$status")"
echo 2 > "/sys/class/net/$pf1/device/sriov_numvfs"
check "numvfs back: the agent puts the VF back and both rails ping" wait_back "sriov_numvfs 0 and back"
same "numvfs back: net1 has its MAC again" "net1 02:00:00:00:0a:01" "$(pod_link pod1 net1)"
line=$(vf_line "$pf1" 0)
check "numvfs back: the PF holds the admin MAC, trust on, spoofchk off again" \
  grep -q "link/ether 02:00:00:00:0a:01.*spoof checking off.*trust on" <<<"$line"
same "numvfs back: net1's MTU is 9000" 9000 "$(cat /sys/class/net/lo/mtu >/dev/null; ip netns exec pod1 cat /sys/class/net/net1/mtu)"
check "numvfs back: the rule and the rail table are back" ip -n pod1 route get 172.16.0.1 from 172.16.0.0
same "numvfs back: status shows no problem" "" "$(railcnictl status --json | jq -r '.problems[].kind')"
same "numvfs back: the attachment was put back once" 1 "$(railcnictl status --json | jq '[.attachments[] | select(.ifname == "net1")][0].reattached')"
check "numvfs back: metrics count it" grep -q 'railcni_reattach_total{network="rail1",result="reattached"} 1' <<<"$(railcnictl metrics)"

# 2. rmmod igbvf; modprobe igbvf: every VF netdev goes, on both rails.
rmmod igbvf
refute "rmmod igbvf: rail 2 no longer pings" jumbo_ping pod1 net2 2
modprobe igbvf
check "modprobe igbvf: the agent puts both VFs back and both rails ping" wait_back "rmmod igbvf; modprobe igbvf"

# 3. Without the agent: status reports it, gc --apply puts it back.
kill "$agent"; wait "$agent" 2>/dev/null
echo 0 > "/sys/class/net/$pf2/device/sriov_numvfs"; echo 2 > "/sys/class/net/$pf2/device/sriov_numvfs"
wait_vfs "$pf2" 2
sleep 0.5
refute "no agent: rail 2 does not ping" jumbo_ping pod1 net2 2
same "no agent: status reports the VF out of its pod" "vf-out-of-pod" "$(railcnictl status --json | jq -r '[.problems[].kind] | join(",")')"
check "no agent: gc --apply puts it back" railcnictl gc --apply
check "no agent: both rails ping after gc" pings

# 4. DEL converges after a reload, without anyone putting the VF back.
echo 0 > "/sys/class/net/$pf1/device/sriov_numvfs"; echo 2 > "/sys/class/net/$pf1/device/sriov_numvfs"
wait_vfs "$pf1" 2
check "DEL of a VF a reload took out answers 0" cni DEL c1 pod1 net1 "$conf1"
check "DEL of rail 2 answers 0" cni DEL c1 pod1 net2 "$conf2"
same "the node is clean: no record" "" "$(ls "$RAILCNI_STATE_DIR/attachments" 2>/dev/null)"
same "the node is clean: no rule in the pod" "" "$(ip -n pod1 rule show | grep -v -E 'lookup (local|main|default)')"
same "the node is clean: no lease" "0" "$(cat "$RAILCNI_STATE_DIR"/ipam/*.leases.json 2>/dev/null | jq -s '[.[].data.leases[]?] | length')"
same "the node is clean: both VFs on the host, no admin MAC left" "" "$(vf_line "$pf1" 0 | grep -o '02:00:00:00:0a:01')"
cat /run/reload-times
vm_finish
