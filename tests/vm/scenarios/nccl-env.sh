# nics: 1
# `railcnictl nccl-env` against the real kernel's GID table: soft-RoCE (rxe)
# serves an igb VF railcni attached, from the host (the RDMA subsystem's
# shared netns mode, the kernel's default). rxe cannot change namespace (it
# is deleted when its netdev leaves), so it is made on the VF once the VF
# is in the pod as net1, and named to railcni's ADD through a sysfs view
# that is the real one plus that device under the VF (RAILCNI_SYSFS_ROOT);
# the netns mode is the recording stand-in's (RAILCNI_FAKE_HARDWARE). What
# is real: the VF, its move and address, the rxe device, its port and GID
# table. nccl-env must name the device with the port whose GIDs are net1's,
# and the GID NCCL's rules select with what it prints (RoCE v2, the family,
# the range when printed: NVIDIA/nccl 5067397c src/transport/net_ib/
# connect.cc 101-157, 268-330) must be exactly the RoCE v2 GID of net1's
# address.
vfs_up 1
leaf_up
node_file
pf=${VM_PFS[0]}
pci=$(vf_pci "$pf" 0)
modprobe crc32_generic 2>/dev/null
check "rdma_rxe loads" modprobe rdma_rxe

view=/run/nccl-sys
rdma_view "$view" "$pf" "$pci" rxen0
echo '{"rdmaMode": "shared"}' > /run/nccl-hw.json
ip netns add pod1
out=$(RAILCNI_SYSFS_ROOT=$view RAILCNI_FAKE_HARDWARE=/run/nccl-hw.json \
  cni ADD c1 pod1 net1 "$(rail_conf 1 "$pci" '"rdma":"auto","checks":{"roceGid":"off"}')"); rc=$?
same "ADD answers 0" 0 "$rc"
same "the record names rxen0 as serving the pod from the host" "rxen0" \
  "$(jq -r .rdmaShared "$RAILCNI_STATE_DIR/attachments/$pci.json")"
check "rxen0 on the VF, now net1 in the pod" ip netns exec pod1 rdma link add rxen0 type rxe netdev net1
gids=/sys/class/infiniband/rxen0/ports
mapped=0000:0000:0000:0000:0000:ffff:ac10:0000 # 172.16.0.0, IPv4-mapped
table() { # <port>: "index gid type" of each used entry (rxe has 1024)
  local d=$gids/$1
  (cd "$d/gids" && grep -v -x 0000:0000:0000:0000:0000:0000:0000:0000 /dev/null * | tr : ' ' | awk '{printf "%s %s:%s:%s:%s:%s:%s:%s:%s\n", $1, $2, $3, $4, $5, $6, $7, $8, $9}') |
    while read -r i gid; do echo "$i $gid $(cat "$d/gid_attrs/types/$i" 2>/dev/null | tr ' ' _)"; done
}
v2_entry() { # the index of net1's address's RoCE v2 entry on port 1
  table 1 | awk -v g="$mapped" '$2 == g && $3 == "RoCE_v2" {print $1}'
}
wait_v2() { local i; for ((i = 0; i < 50; i++)); do [ -n "$(v2_entry)" ] && return 0; sleep 0.1; done; return 1; }
check "the kernel adds the RoCE v2 GID of 172.16.0.0 on port 1" wait_v2

env_json=$(railcnictl nccl-env c1 --json 2>&1)
var() { jq -r --arg k "$1" '.env[] | select(.[0] == $k) | .[1]' <<<"$env_json"; }
# The port whose GIDs name net1, from the kernel's own table.
port=""
for p in "$gids"/*; do
  grep -qx net1 "$p"/gid_attrs/ndevs/* 2>/dev/null && port=${p##*/} && break
done
same "NCCL_IB_HCA names rxen0 exactly, with the port net1 is on" "=rxen0:$port" "$(var NCCL_IB_HCA)"
same "NCCL_SOCKET_IFNAME names net1 exactly" "=net1" "$(var NCCL_SOCKET_IFNAME)"
same "the family is IPv4" AF_INET "$(var NCCL_IB_ADDR_FAMILY)"
same "RoCE v2" 2 "$(var NCCL_IB_ROCE_VERSION_NUM)"
same "the row says shared, port and rail" "true $port 0" \
  "$(jq -r '.rails[0] | "\(.rdmaShared) \(.port) \(.rail)"' <<<"$env_json")"

# NCCL's selection over the kernel's table with what nccl-env printed: a
# valid GID of the RoCE version, of the family (IPv4-mapped for AF_INET),
# inside the range when one is printed. It must be one entry: net1's.
range=$(var NCCL_IB_ADDR_RANGE) family=$(var NCCL_IB_ADDR_FAMILY) version=RoCE_v$(var NCCL_IB_ROCE_VERSION_NUM)
selected=()
while read -r i gid type; do
  [ "$type" = "$version" ] || continue
  case $gid in 0000:0000:0000:0000:0000:ffff:*) fam=AF_INET ;; fe80:*) continue ;; *) fam=AF_INET6 ;; esac
  [ "$fam" = "$family" ] || continue
  if [ -n "$range" ]; then
    addr=$(printf '%d.%d.%d.%d' "0x${gid:30:2}" "0x${gid:32:2}" "0x${gid:35:2}" "0x${gid:37:2}")
    python3 -c "import ipaddress,sys; sys.exit(ipaddress.ip_address('$addr') not in ipaddress.ip_network('$range'))" || continue
  fi
  selected+=("$i")
done < <(table "$port")
same "NCCL's rules select exactly net1's RoCE v2 GID" "$(v2_entry)" "${selected[*]}"
echo "# railcnictl nccl-env c1:"
railcnictl nccl-env c1 2>&1 | sed 's/^/#   /'

ip netns exec pod1 rdma link delete rxen0
out=$(RAILCNI_SYSFS_ROOT=$view RAILCNI_FAKE_HARDWARE=/run/nccl-hw.json \
  cni DEL c1 pod1 net1 "$(rail_conf 1 "$pci" '"rdma":"auto"')"); rc=$?
same "DEL answers 0" 0 "$rc"
same "the VF is home" "$(ls "/sys/bus/pci/devices/$pci/net")" "$(vf_netdev "$pf" 0)"
ip netns del pod1
vm_finish
