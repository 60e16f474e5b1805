#!/usr/bin/env bash
# The fabric planner at cluster scale: 8 rails (one /15 each, a /31 per
# node) and N nodes with explicit indexes. For each N: the time and peak
# memory (GNU time) of every emit, the ConfigMap's size, and the time a
# node takes to compute its own node file from the ConfigMap's plan.json
# (median of 21 runs of `railcnictl plan plan.json --emit node-file`, the
# installer's and agent's computation).
#
#   scripts/bench-plan.sh [N ...]      default: 1000 2048 4000 8000 16384 32768
# Goals (docs/install.md): every emit at 16,384 nodes within 2 s and 100 MB;
# the ConfigMap at most 512 KiB at 16,384; a node's file within 50 ms.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/bin/time ] || scripts/install-test-deps.sh
cargo build --release --locked --quiet -p railcnictl
ctl=$PWD/target/release/railcnictl
work=$(mktemp -d /tmp/railcni-bench-plan.XXXXXX)
trap 'rm -rf "$work"' EXIT
sizes=("$@")
((${#sizes[@]})) || sizes=(1000 2048 4000 8000 16384 32768)

plan() { # <nodes>: the plan, YAML
  echo "rails:"
  for r in 1 2 3 4 5 6 7 8; do
    echo "- {name: rail$r, cidr: 172.$((14 + 2 * r)).0.0/15, routes: [172.16.0.0/12], mtu: 9000, pf: ens${r}f0np0}"
  done
  echo "nodes:"
  awk -v n="$1" 'BEGIN { for (i = 0; i < n; i++) printf "  gpu-%05d: %d\n", i, i }'
}

printf '%-7s %-10s %8s %8s\n' nodes emit seconds peak_MB
for n in "${sizes[@]}"; do
  plan "$n" > "$work/plan-$n.yaml"
  for emit in configmap nads csv json pod dra; do
    /usr/bin/time -f '%e %M' -o "$work/t" "$ctl" plan "$work/plan-$n.yaml" --emit "$emit" > "$work/out-$emit"
    read -r secs kb < "$work/t"
    printf '%-7s %-10s %8s %8.1f\n' "$n" "$emit" "$secs" "$(echo "$kb / 1024" | bc -l)"
  done
  cm=$(stat -c %s "$work/out-configmap")
  # The ConfigMap's plan.json, as a node's volume shows it (a single-quoted YAML scalar).
  sed -n "s/^  plan.json: '\(.*\)'$/\1/p" "$work/out-configmap" | sed "s/''/'/g" > "$work/plan.json"
  node=$(printf 'gpu-%05d' $((n - 1)))
  for _ in $(seq 21); do
    t0=$(date +%s%N)
    "$ctl" plan "$work/plan.json" --emit node-file --node "$node" > /dev/null
    echo $(( ($(date +%s%N) - t0) / 1000 ))
  done | sort -n | sed -n 11p > "$work/median"
  printf '%-7s configmap %d bytes (%d KiB); node file computed in %.1f ms (median of 21)\n' \
    "$n" "$cm" $((cm / 1024)) "$(echo "$(cat "$work/median") / 1000" | bc -l)"
done
