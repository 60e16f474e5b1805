#!/usr/bin/env bash
# What ADD's rail checks cost on the fake fabric: ADD p50 with checks off
# (the default), the gateway check, the address-conflict probe, and both,
# taking turns, with the leaf side answering for the gateway. The conflict
# probe waits out its whole budget when nobody answers (that is how it
# proves nobody else holds the address), so it costs its timeoutMs.
#
#   scripts/bench-checks.sh [cycles=30]
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "bench-checks.sh: run as root" >&2; exit 1; }
cycles=${1:-30}
cargo build --release --quiet
plugin=$PWD/target/release/railcni
work=$(mktemp -d /tmp/railcni-bench-checks.XXXXXX)
prefix="bc$$"
trap 'ip netns del "$prefix-pod" 2>/dev/null; scripts/fake-node.sh down "$prefix" "$work/sys" >/dev/null 2>&1; rm -rf "$work"' EXIT
scripts/fake-node.sh up "$prefix" "$work/sys" 1 1 >/dev/null
ip -n "$prefix-fabric" addr add 172.16.0.1/31 dev r1v0
ip netns add "$prefix-pod"
conf() { # <checks JSON>
  echo "{\"cniVersion\":\"1.1.0\",\"name\":\"rail1\",\"type\":\"railcni\",\"deviceID\":\"0000:11:00.2\",\"checks\":$1,
   \"ipam\":{\"type\":\"railcni-ipam\",\"cidr\":\"172.16.0.0/15\",\"nodes\":[\"gpu-0\"]}}"
}
conf '{}' >"$work/off.json"
conf '{"gateway":"require"}' >"$work/gateway.json"
conf '{"addressConflict":"require"}' >"$work/conflict.json"
conf '{"gateway":"require","addressConflict":"require"}' >"$work/both.json"
ip netns exec "$prefix-host" bash -s "$cycles" "$plugin" "$work" "$prefix" <<'INNER'
set -euo pipefail
cycles=$1 plugin=$2 work=$3 prefix=$4
export CNI_CONTAINERID=bench CNI_NETNS=/var/run/netns/$prefix-pod CNI_IFNAME=net1 CNI_PATH=/nonexistent
export RAILCNI_SYSFS_ROOT=$work/sys RAILCNI_STATE_DIR=$work/state RAILCNI_NODE_NAME=gpu-0 RAILCNI_NODE_CONFIG=$work/none.json
sets=(off gateway conflict both)
for ((i = 0; i < cycles; i++)); do
  for ((k = 0; k < 4; k++)); do
    s=${sets[$(((i + k) % 4))]}
    t0=$EPOCHREALTIME; CNI_COMMAND=ADD "$plugin" <"$work/$s.json" >"$work/out" 2>/dev/null || { cat "$work/out"; exit 1; }; t1=$EPOCHREALTIME
    CNI_COMMAND=DEL "$plugin" <"$work/$s.json" >/dev/null 2>&1
    echo "$t0 $t1" | awk '{printf "%.3f\n", ($2 - $1) * 1000}' >>"$work/$s.ms"
  done
done
INNER
python3 - "$work" "$cycles" <<'PY'
import statistics, sys
work, cycles = sys.argv[1], sys.argv[2]
p50 = {s: statistics.median(float(x) for x in open(f"{work}/{s}.ms")) for s in ("off", "gateway", "conflict", "both")}
print(f"ADD with rail checks, p50 of {cycles} interleaved cycles on the fake fabric (timeoutMs 300, retries 3):")
for s, label in (("off", "checks off (default)"), ("gateway", "gateway: require"),
                 ("conflict", "addressConflict: require"), ("both", "both")):
    extra = "" if s == "off" else f"   {p50[s] - p50['off']:+8.2f} ms"
    print(f"  {label:<28}{p50[s]:8.2f} ms{extra}")
PY
