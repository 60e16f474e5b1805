# nics: 2
# rdmaQoS's rdma_cm half on the real kernel's configfs, and the ToS byte it
# puts on the wire. An igb VF has no RDMA device of its own and soft-RoCE
# (rxe) cannot change namespace (it is deleted when its netdev leaves), so
# the VF's RDMA device is rxe on the other PF, named to railcni through a
# sysfs view that is the real one plus that device under the VF
# (RAILCNI_SYSFS_ROOT), and its move is the recording stand-in's
# (RAILCNI_FAKE_HARDWARE). What is real: the VF, its move into the pod,
# configfs (mounted by railcni where nothing is), rdma_cm's group made by
# mkdir, the ToS written (from the host: configfs finds the device by name
# in every namespace) read back, removed or
# restored on DEL (value first: removing the group alone leaves the value in
# force); and rping's RoCE v2 packets carrying that ToS, and 0 again after.
vfs_up 2
pf=${VM_PFS[0]} other=${VM_PFS[1]}
vf=$(vf_netdev "$pf" 0) pci=$(vf_pci "$pf" 0)
server_vf=$(vf_netdev "$pf" 1)
modprobe crc32_generic 2>/dev/null
check "rdma_rxe and rdma_cm load" modprobe -a rdma_rxe rdma_cm rdma_ucm
ip addr add 10.9.0.2/24 dev "$other"
ip link set "$other" up
check "rxeq0 on the other PF" rdma link add rxeq0 type rxe netdev "$other"

# The sysfs view: the VF with rxeq0 under it.
view=/run/qos-sys
rdma_view "$view" "$pf" "$pci" rxeq0
echo '{"rdmaMode": "exclusive"}' > /run/qos-hw.json
qos() { RAILCNI_SYSFS_ROOT=$view RAILCNI_FAKE_HARDWARE=/run/qos-hw.json cni "$@"; }
group=/sys/kernel/config/rdma_cm/rxeq0
tos_file=$group/ports/1/default_roce_tos
ip netns add pod1
conf() { # <rdma> <qos>
  printf '{"cniVersion":"1.1.0","name":"rail1","type":"railcni","deviceID":"%s","mtu":9000,"rdma":"%s","rdmaQoS":%s,"checks":{"roceGid":"off"}}' \
    "$pci" "$1" "$2"
}

# 1. rxe has no traffic class file: with rdma required that is refused
#    before anything changes.
out=$(qos ADD c1 pod1 net1 "$(conf required '{"tos": 96, "tc": 96}')"); rc=$?
same "a traffic class rxe cannot take, rdma required: ADD fails with 103" 103 "$(jq -r .code <<<"$out")"
check "the refusal names the missing file" grep -q "no tc/1/traffic_class" <<<"$out"
same "nothing changed: the VF is still on the host" "$vf" "$(vf_netdev "$pf" 0)"
refute "nothing changed: no rdma_cm group was made" test -e "$group"
cni_log >/dev/null

# 2. The ToS alone, no group before: railcni makes it.
out=$(qos ADD c1 pod1 net1 "$(conf required '{"tos": 96}')"); rc=$?
same "ToS 96: ADD answers 0" 0 "$rc"
same "ToS 96: the result says it" 96 "$(jq -r '.interfaces[0].tos' <<<"$out")"
check "configfs is mounted at /sys/kernel/config" mountpoint -q /sys/kernel/config
check "the rdma_cm group of rxeq0 was made" test -d "$group/ports/1"
same "the kernel reads back ToS 96" 96 "$(cat "$tos_file")"
same "the record says there was no group, and ToS 0 in force" '{"value":96,"before":0} true' \
  "$(jq -c '.rdmaQos | "\(.tos | tojson) \(.tosGroupMade)"' -r "$RAILCNI_STATE_DIR/attachments/$pci.json")"

# 3. rping through rdma_cm from rxeq0: its RoCE v2 packets (the connection
#    request) carry ToS 0x60. The server is rxe in a namespace of its own,
#    so the packets cross the wire; this kernel's rxe receives only in the
#    host's namespace, so the connection itself does not complete.
ip netns add qoss
ip link set "$server_vf" netns qoss
ip -n qoss addr add 10.9.0.3/24 dev "$server_vf"
ip -n qoss link set "$server_vf" up
ip -n qoss link set lo up
check "rxes on the server's VF" ip netns exec qoss rdma link add rxes type rxe netdev "$server_vf"
rping_once() { # <capture file>: one rping from rxeq0, its packets captured
  tcpdump -i "$other" -n -v -c 2 'udp dst port 4791' >"$1" 2>/dev/null &
  local dump=$! server
  ip netns exec qoss timeout 6 rping -s -a 10.9.0.3 -C 1 >/dev/null 2>&1 &
  server=$!
  sleep 1
  timeout 4 rping -c -a 10.9.0.3 -I 10.9.0.2 -C 1 >/dev/null 2>&1
  wait "$server"
  kill "$dump" 2>/dev/null; wait "$dump" 2>/dev/null
}
rping_once /tmp/qos.pcap.txt
check "rping's RoCE v2 packets left rxeq0" grep -q "10.9.0.2.* > 10.9.0.3.4791" /tmp/qos.pcap.txt
check "rxeq0's RoCE v2 packets carry ToS 0x60 (DSCP 24)" grep -q "tos 0x60" /tmp/qos.pcap.txt
echo "# tcpdump -v of rxeq0's RoCE v2 packets (first lines):"
head -n 4 /tmp/qos.pcap.txt | sed 's/^/#   /'

# 4. DEL: the group railcni made is gone again.
check "ToS 96: DEL answers 0" qos DEL c1 pod1 net1 "$(conf required '{"tos": 96}')"
refute "after DEL the rdma_cm group is gone, as before ADD" test -e "$group"
same "after DEL the VF is home" "$vf" "$(vf_netdev "$pf" 0)"
rping_once /tmp/qos-after.pcap.txt
# The value lives in rdma_cm's device, not in the group: had railcni only
# removed its group, ToS 96 would still be in force here.
same "after DEL rxeq0's packets carry ToS 0x0 again" "tos 0x0" \
  "$(grep -o 'tos 0x[0-9a-f]*' /tmp/qos-after.pcap.txt | head -n 1)"

# 5. A group the administrator made, ToS 32: set to 106 from the pod's
#    side with rdma auto (the class rxe cannot take is left out, reported),
#    then 32 again after DEL, the group kept.
mkdir "$group" && echo 32 > "$tos_file"
out=$(qos ADD c2 pod1 net1 "$(conf auto '{"tos": 106, "tc": 106}')"); rc=$?
same "rdma auto: ADD answers 0" 0 "$rc"
check "rdma auto: the class rxe cannot take is reported" grep -q "no tc/1/traffic_class" <<<"$(cni_log)"
same "rdma auto: the result has the ToS, no class" "106 null" "$(jq -r '"\(.interfaces[0].tos) \(.interfaces[0].trafficClass)"' <<<"$out")"
same "the kernel reads back ToS 106" 106 "$(cat "$tos_file")"
check "DEL answers 0" qos DEL c2 pod1 net1 "$(conf auto '{"tos": 106, "tc": 106}')"
same "after DEL the administrator's ToS 32 is back" 32 "$(cat "$tos_file")"
check "and the group is kept" test -d "$group"
same "no record is left" "" "$(ls "$RAILCNI_STATE_DIR/attachments" 2>/dev/null)"
rmdir "$group"

# 6. The device goes while the pod holds it (its driver unloaded): rdma_cm
#    answers ENODEV for it, so there is nothing to give back; DEL succeeds,
#    and the group railcni made is gone too.
out=$(qos ADD c3 pod1 net1 "$(conf required '{"tos": 96}')"); rc=$?
same "ToS 96 again: ADD answers 0" 0 "$rc"
check "the group is there" test -d "$group/ports/1"
rdma link delete rxeq0
cni_log >/dev/null
check "the device gone: DEL answers 0" qos DEL c3 pod1 net1 "$(conf required '{"tos": 96}')"
check "DEL says rdma_cm no longer knows the device" grep -q "no longer knows RDMA device rxeq0" <<<"$(cni_log)"
refute "the group railcni made is gone" test -e "$group"
same "no record is left" "" "$(ls "$RAILCNI_STATE_DIR/attachments" 2>/dev/null)"
ip netns exec qoss rdma link delete rxes
vm_finish
