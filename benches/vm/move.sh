# nics: 1
# Run in the emulated SR-IOV node by scripts/bench-vm.sh: railcni's ADD and
# DEL of one igbvf VF beside the bare `ip link set … netns … name` move of
# the same VF (and its move home), interleaved, CYCLES times. Under TCG only
# the differences mean anything.
cycles=${RAILCNI_BENCH_CYCLES:-30}
leaf_up
node_file
vfs_up 1
pf=${VM_PFS[0]}
pci=$(vf_pci "$pf" 0)
host_name=$(vf_netdev "$pf" 0)
ip netns add pod1
conf=$(rail_conf 1 "$pci")
now() { date +%s%N; }
: > /run/bench.txt
for ((i = 0; i < cycles; i++)); do
  t0=$(now); ip link set "$host_name" netns pod1 name net1 mtu 9000; t1=$(now)
  ip -n pod1 link set net1 netns 1 name "$host_name" mtu 1500; t2=$(now)
  cni ADD b1 pod1 net1 "$conf" >/dev/null || echo "ADD failed" >&2; t3=$(now)
  cni DEL b1 pod1 net1 "$conf" || echo "DEL failed" >&2; t4=$(now)
  echo "$(((t1 - t0) / 1000)) $(((t2 - t1) / 1000)) $(((t3 - t2) / 1000)) $(((t4 - t3) / 1000))" >> /run/bench.txt
done
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
col() { awk -v c="$1" '{print $c}' /run/bench.txt | median; }
diffs() { awk -v a="$1" -v b="$2" '{print $a - $b}' /run/bench.txt | median; }
ms() { awk -v us="$1" 'BEGIN {printf "%.1f ms", us / 1000}'; }
echo "igbvf VF, $cycles interleaved cycles (p50):"
echo "  bare move in (ip link set netns name mtu)   $(ms "$(col 1)")"
echo "  bare move home                             $(ms "$(col 2)")"
echo "  railcni ADD                                $(ms "$(col 3)")"
echo "  railcni DEL                                $(ms "$(col 4)")"
echo "  ADD above the bare move (p50 of per-cycle differences)  $(ms "$(diffs 3 1)")"
echo "  DEL above the bare move home                            $(ms "$(diffs 4 2)")"
