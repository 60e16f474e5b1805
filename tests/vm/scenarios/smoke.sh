# Boot check: the PFs, their VFs and the leaf answer.
leaf_up
vfs_up 2
same "VFs of the first rail PF are bound to igbvf" igbvf "$(basename "$(readlink -f /sys/class/net/${VM_PFS[0]}/device/virtfn0/driver)")"
ip netns add p
vf=$(vf_netdev "${VM_PFS[0]}" 0)
ip link set "$vf" netns p
ip -n p link set "$vf" mtu 9000 up
ip -n p addr add 172.16.0.0/31 dev "$vf"
sleep 1
check "a jumbo DF ping from a VF in a netns reaches the leaf" ip netns exec p ping -c 1 -W 3 -M do -s 8972 172.16.0.1
vm_finish
