# nics: 1
# A RoCE device's GID table as the real kernel writes it, read by
# `railcnictl gids` (net::gid): soft-RoCE (rxe) on an igb VF, an IPv4 and
# an IPv6 address added; their RoCE v2 entries (the IPv4 one IPv4-mapped)
# found with the VF as their netdev, and gone when the address is.
vfs_up 1
pf=${VM_PFS[0]}
vf=$(vf_netdev "$pf" 0)
modprobe crc32_generic 2>/dev/null
check "rdma_rxe loads" modprobe rdma_rxe
ip link set "$vf" up
ip addr add 172.16.0.0/31 dev "$vf"
ip addr add fd00:1::/127 dev "$vf" nodad
check "rxe0 on the VF" rdma link add rxe0 type rxe netdev "$vf"
entry() { # <address> -> "index type ndev" of its RoCE v2 entry
  railcnictl gids rxe0 --json 2>/dev/null | jq -r --arg a "$1" '.gids[] | select(.address == $a and .type == "RoCE v2") | "\(.index) \(.type) \(.ndev)"'
}
wait_entry() { local i; for ((i = 0; i < 50; i++)); do [ -n "$(entry "$1")" ] && return 0; sleep 0.1; done; return 1; }
check "the IPv4 address's RoCE v2 entry appears" wait_entry 172.16.0.0
check "the IPv6 address's RoCE v2 entry appears" wait_entry fd00:1::
v4=$(entry 172.16.0.0)
same "IPv4: a RoCE v2 entry on the VF" "RoCE v2 $vf" "${v4#* }"
same "IPv4: the kernel's own file holds the IPv4-mapped GID" "0000:0000:0000:0000:0000:ffff:ac10:0000" \
  "$(cat /sys/class/infiniband/rxe0/ports/1/gids/"${v4%% *}")"
v6=$(entry fd00:1::)
same "IPv6: a RoCE v2 entry on the VF" "RoCE v2 $vf" "${v6#* }"
same "every used entry of the kernel's table is listed" \
  "$(cd /sys/class/infiniband/rxe0/ports/1/gids && awk '$0 != "0000:0000:0000:0000:0000:0000:0000:0000" {print FILENAME}' * | sort -n | xargs)" \
  "$(railcnictl gids rxe0 --json | jq -r '[.gids[].index] | map(tostring) | join(" ")')"
echo "# railcnictl gids rxe0:"
railcnictl gids rxe0 | sed 's/^/#   /'
ip addr del 172.16.0.0/31 dev "$vf"
gone() { local i; for ((i = 0; i < 50; i++)); do [ -z "$(entry 172.16.0.0)" ] && return 0; sleep 0.1; done; return 1; }
check "the IPv4 entry goes with its address" gone
refute "an unknown device is bad usage" railcnictl gids nosuchdev
same "its exit code is 2" 2 "$(railcnictl gids nosuchdev >/dev/null 2>&1; echo $?)"
rdma link delete rxe0
vm_finish
