#!/usr/bin/env bash
# railcni-ipam throughput and lease-file size.
#
#   scripts/bench-ipam.sh [pairs=2000]
#
# allocate+release pairs per second: in-process (the library, as railcni's ADD
# uses it) from 1 and from 32 concurrent processes, and through the
# railcni-ipam binary (one process per CNI call, as a runtime runs it) from 1
# and 32 concurrent callers; then the lease file size with 256 leases; then
# the per-call cost of loading and validating a pool of 4,096 and 16,384
# static allocations (median of 31 calls; target: <= 5 ms at 16,384); then
# allocate+release on a /31, an IPv6 /127, /120 and /64 side by side
# (interleaved, medians; target: the /64 within 1.5x of the /31).
set -euo pipefail
cd "$(dirname "$0")/.."
pairs=${1:-2000}
cargo build --release --quiet -p railcni-ipam --example ipam-bench
bench=target/release/examples/ipam-bench
bin=$PWD/target/release/railcni-ipam
work=$(mktemp -d /tmp/railcni-ipam-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

rate() { awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN {printf "%.0f", n / ((b - a))}'; }

echo "in-process, 1 process:      $($bench pairs "$work/a" "$pairs" 0)"
t0=$EPOCHREALTIME
for w in $(seq 1 32); do $bench pairs "$work/b" $((pairs / 32)) "$w" >/dev/null & done
wait
t1=$EPOCHREALTIME
echo "in-process, 32 processes:   $((pairs / 32 * 32)) pairs: $(rate $((pairs / 32 * 32)) "$t0" "$t1") pairs/s"

conf='{"cniVersion":"1.1.0","name":"rail1","ipam":{"type":"railcni-ipam","cidr":"10.0.0.0/8","perNodePrefix":24,"nodes":["gpu-0"]}}'
export RAILCNI_NODE_NAME=gpu-0 RAILCNI_NODE_CONFIG=$work/none.json CNI_IFNAME=net1 CNI_NETNS=/var/run/netns/bench
binary_pairs() { # <state> <count> <worker>
  for ((i = 0; i < $2; i++)); do
    CNI_COMMAND=ADD CNI_CONTAINERID="w$3-$i" RAILCNI_STATE_DIR=$1 "$bin" <<<"$conf" >/dev/null
    CNI_COMMAND=DEL CNI_CONTAINERID="w$3-$i" RAILCNI_STATE_DIR=$1 "$bin" <<<"$conf" >/dev/null
  done
}
n=$((pairs / 4))
t0=$EPOCHREALTIME; binary_pairs "$work/c" "$n" 0; t1=$EPOCHREALTIME
echo "binary, 1 caller:           $n pairs: $(rate "$n" "$t0" "$t1") pairs/s"
t0=$EPOCHREALTIME
for w in $(seq 1 32); do binary_pairs "$work/d" $((n / 32)) "$w" & done
wait
t1=$EPOCHREALTIME
echo "binary, 32 callers:         $((n / 32 * 32)) pairs: $(rate $((n / 32 * 32)) "$t0" "$t1") pairs/s"
echo "lease file:                 $($bench fill "$work/e" 256)"
for n in 4096 16384; do
  echo "pool of $n static allocations: $($bench load "$work/f" "$n")"
done
echo "allocate+release by per-node prefix (2,000 interleaved rounds):"
$bench prefixes "$work/g" 2000
