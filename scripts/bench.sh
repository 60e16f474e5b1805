#!/usr/bin/env bash
# railcni beside the reference chain and the kernel's own cost, in one run on
# the same fake VFs (veth stand-ins), static release build, ending in one
# table of every goal, each a difference to a floor measured in the same run,
# interleaved, so a noisy machine moves both sides.
#
#   scripts/bench.sh [--quick]      (--quick: a few cycles, to prove it runs; CI)
#
# Every exec is made by a Go harness (benches/libcni-bench) the way libcni
# and Multus make them, the floors included ("ip -batch" exec'd in the host
# or the pod netns: no "ip netns exec" in the way).
# 1. single rail through libcni: railcni + embedded IPAM vs the reference
#    chain host-device + static + tuning(mtu 9000) + sbr; ADD and DEL p50/p95,
#    beside the bare move (one "ip link set … netns … name" each way) and
#    the same kernel work in ip (one process a side);
# 2. an 8-rail pod, Multus-style (8 serial ADDs on 8 VFs over 2 PFs, then 8
#    DELs in reverse): railcni, the reference chain, the kernel-work floor
#    (ip -batch doing the same kernel work, one process a side), the same
#    ip work split per rail, libcni running a no-op plugin and a plugin
#    that only moves 8 times each (that plugin also spinning 1.5 ms, and
#    doing railcni's kernel work per rail), then (from ftrace, in cycles of
#    their own, untimed) what the kernel's namespace move itself took;
# 3. a NAD with 16,384 inline static allocations vs one: ADD+DEL of
#    railcni-ipam and of railcni (embedded IPAM), stdin through a pipe;
# 4. railcni-ipam allocate+release ops/s, in-process and through the binary;
# 5. VERSION exec time (railcni vs host-device, and the exec floor: a static
#    no-op and /bin/true), stripped size, peak RSS of an ADD;
# 6. per ADD and per DEL: namespace moves, netlink sends, fsyncs, syscalls.
# Writes the tables to stdout and JSON to target/bench/bench.json.
# Do not run it beside a build or a test suite: it measures time.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "bench.sh: run as root (network namespaces)" >&2; exit 1; }
quick=0; [ "${1:-}" = "--quick" ] && quick=1
if ((quick)); then cycles=3 warm=1 pod_cycles=2 traced_cycles=1 version_runs=10 ipam_pairs=100 big_pairs=3; else
  cycles=60 warm=5 pod_cycles=40 traced_cycles=6 version_runs=300 ipam_pairs=2000 big_pairs=30; fi
command -v strace >/dev/null && command -v go >/dev/null && [ -x /usr/lib/cni/sbr ] && [ -x /usr/bin/time ] ||
  { echo "bench.sh: needs strace, go, the reference plugins and GNU time (scripts/install-test-deps.sh)" >&2; exit 1; }

# The shipped artifact: static, LTO, stripped.
scripts/build-static.sh >/dev/null
static=target/x86_64-unknown-linux-gnu/release
cargo build --release --locked --quiet -p railcni-ipam --example ipam-bench
cargo build --release --locked --quiet -p railcni-base --example stats-bench
work=$(mktemp -d /tmp/railcni-bench.XXXXXX)
prefix="bn$$"
out_dir=target/bench
mkdir -p "$out_dir"
: >"$out_dir/plugins.log"
cleanup() {
  trace_moves off || true
  ip netns del "$prefix-pod" 2>/dev/null || true
  scripts/fake-node.sh down "$prefix" "$work/sys" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# The Go client, built offline against Debian's libcni.
gopath=$work/gopath
mkdir -p "$gopath/src/libcni-bench"
cp benches/libcni-bench/main.go "$gopath/src/libcni-bench/"
(cd "$gopath/src/libcni-bench" && GO111MODULE=off GOPATH="$gopath:/usr/share/gocode" GOCACHE="$work/gocache" \
  go build -o "$work/libcni-bench" .)

# 8 VFs over 2 PFs; the pod; a plugin dir with railcni and the reference chain.
scripts/fake-node.sh up "$prefix" "$work/sys" 2 4 >"$work/vfs"
ip netns add "$prefix-pod"
ip -n "$prefix-pod" link set lo up
host="$prefix-host" pod="/var/run/netns/$prefix-pod"
bin=$work/bin
mkdir -p "$bin"
install -m 0755 "$static/railcni" "$static/railcni-ipam" "$bin/"
for p in host-device static tuning sbr; do ln -s "/usr/lib/cni/$p" "$bin/$p"; done
cc -O2 -static -o "$bin/noop" benches/noop-plugin/noop.c
cc -O2 -static -o "$bin/moveonly" benches/move-plugin/moveonly.c
export RAILCNI_SYSFS_ROOT=$work/sys RAILCNI_STATE_DIR=$work/state RAILCNI_NODE_NAME=gpu-0 \
  RAILCNI_NODE_CONFIG=$work/none.json RAILCNI_LOG_DIR=$work/log

# Conflists: network n (1..8) on the n-th VF, /31 from rail n's /15.
mapfile -t vfs < <(awk '{print $3" "$4}' "$work/vfs")
mkdir -p "$work/railcni" "$work/reference" "$work/noop" "$work/moveonly" "$work/moveonly-busy" "$work/moveonly-rail"
for n in $(seq 1 8); do
  read -r pci name <<<"${vfs[$((n - 1))]}"
  cidr="172.$((14 + 2 * n)).0.0/15" addr="172.$((14 + 2 * n)).0.0" gw="172.$((14 + 2 * n)).0.1"
  cat >"$work/railcni/$(printf %02d "$n").conflist" <<JSON
{"cniVersion":"1.0.0","name":"rail$n","plugins":[{"type":"railcni","deviceID":"$pci","mtu":9000,
 "ipam":{"type":"railcni-ipam","cidr":"$cidr","nodes":["gpu-0"],"routes":[{"dst":"172.16.0.0/12"}]}}]}
JSON
  echo "{\"cniVersion\":\"1.0.0\",\"name\":\"noop$n\",\"plugins\":[{\"type\":\"noop\"}]}" \
    >"$work/noop/$(printf %02d "$n").conflist"
  echo "{\"cniVersion\":\"1.0.0\",\"name\":\"move$n\",\"plugins\":[{\"type\":\"moveonly\",\"device\":\"$name\"}]}" \
    >"$work/moveonly/$(printf %02d "$n").conflist"
  # The same plugin taking 1.5 ms of CPU after each move (about railcni's own
  # work per ADD): does the pod pay for a plugin's time or for ticks?
  echo "{\"cniVersion\":\"1.0.0\",\"name\":\"busy$n\",\"plugins\":[{\"type\":\"moveonly\",\"device\":\"$name\",\"cpuUs\":1500}]}" \
    >"$work/moveonly-busy/$(printf %02d "$n").conflist"
  # The same plugin doing the rail's kernel work too, as railcni asks it
  # (link up, address, routes, rule): the floor under any plugin that does
  # one rail's whole job per exec, with no state, IPAM or checks.
  echo "{\"cniVersion\":\"1.0.0\",\"name\":\"mrail$n\",\"plugins\":[{\"type\":\"moveonly\",\"device\":\"$name\",
 \"address\":\"$addr\",\"gateway\":\"$gw\",\"table\":$((1000 + n)),\"railCidr\":\"$cidr\",\"route\":\"172.16.0.0/12\"}]}" \
    >"$work/moveonly-rail/$(printf %02d "$n").conflist"
  cat >"$work/reference/$(printf %02d "$n").conflist" <<JSON
{"cniVersion":"1.0.0","name":"ref$n","plugins":[
 {"type":"host-device","device":"$name","ipam":{"type":"static",
   "addresses":[{"address":"$addr/31","gateway":"$gw"}],"routes":[{"dst":"172.16.0.0/12","gw":"$gw"}]}},
 {"type":"tuning","mtu":9000},{"type":"sbr"}]}
JSON
done

# The kernel work of a pod, one ip process per side, as railcni does it:
# batches <suffix> <rails…> writes host-in, pod-in, pod-out, host-out.
batches() {
  local suffix=$1 n name b; shift
  : >"$work/host-in$suffix.batch"; : >"$work/pod-in$suffix.batch"
  : >"$work/pod-out$suffix.batch"; : >"$work/host-out$suffix.batch"
  for n in "$@"; do
    read -r _ name <<<"${vfs[$((n - 1))]}"
    b="172.$((14 + 2 * n))"
    echo "link set dev $name netns $prefix-pod name net$n" >>"$work/host-in$suffix.batch"
    {
      echo "link set dev net$n mtu 9000 up"
      echo "addr add $b.0.0/31 dev net$n"
      echo "route add $b.0.0/31 dev net$n table $((1000 + n)) scope link src $b.0.0"
      echo "route add 172.16.0.0/12 via $b.0.1 dev net$n table $((1000 + n))"
      echo "route add $b.0.0/15 via $b.0.1 dev net$n"
      echo "rule add from $b.0.0/32 lookup $((1000 + n)) priority $((1000 + n))"
    } >>"$work/pod-in$suffix.batch"
  done
  for ((k = $#; k >= 1; k--)); do
    n=${!k}
    read -r _ name <<<"${vfs[$((n - 1))]}"
    b="172.$((14 + 2 * n))"
    {
      echo "rule del from $b.0.0/32 lookup $((1000 + n)) priority $((1000 + n))"
      echo "link set dev net$n down"
      echo "link set dev net$n netns $prefix-host name $name"
    } >>"$work/pod-out$suffix.batch"
    echo "link set dev $name mtu 1500" >>"$work/host-out$suffix.batch"
  done
}
batches "" 1 2 3 4 5 6 7 8
batches 1 1
for n in $(seq 1 8); do batches "r$n" "$n"; done

# The kernel's own time for each namespace move (ftrace; n/a without it).
. scripts/trace-moves.sh

in_host() { ip netns exec "$host" "$@"; }

echo "==> 1: single rail through libcni ($cycles cycles + $warm warm-up), interleaved with the bare move and the kernel work" >&2
read -r pci0 name0 <<<"${vfs[0]}"
read -r pci1 name1 <<<"${vfs[1]}"
single_a=$work/railcni/01.conflist
# The reference chain gets its own VF (the second of PF1), same kind of veth.
sed "s/\"device\":\"$name0\"/\"device\":\"$name1\"/" "$work/reference/01.conflist" >"$work/ref-single.conflist"
echo "link set dev $name0 netns $prefix-pod name net1" >"$work/move-in.batch"
echo "link set dev net1 netns $host name $name0" >"$work/move-out.batch"
harness() { in_host "$work/libcni-bench" "$@" 2>>"$out_dir/plugins.log"; }
# railcni exec'd directly too (as the bare move's ip is), one network config.
python3 -c 'import json,sys; l=json.load(open(sys.argv[1])); c=l["plugins"][0]; c["cniVersion"]=l["cniVersion"]; c["name"]=l["name"]; print(json.dumps(c))' \
  "$single_a" >"$work/single.json"
: >"$work/single.jsonl"; : >"$work/direct.jsonl"; : >"$work/move.jsonl"; : >"$work/kernel1.jsonl"
for c in $(seq 1 $((cycles + warm))); do
  keep=/dev/null; ((c > warm)) && keep=
  BENCH_FIRST=$c harness single "$bin" "$pod" 1 0 "$single_a" "$work/ref-single.conflist" >>"${keep:-$work/single.jsonl}"
  harness pairs 1 "$bin/railcni" "$pod" "$work/single.json" >>"${keep:-$work/direct.jsonl}"
  harness floor "$pod" "$work/move-in.batch" - "$work/move-out.batch" - >>"${keep:-$work/move.jsonl}"
  harness floor "$pod" "$work/host-in1.batch" "$work/pod-in1.batch" "$work/pod-out1.batch" "$work/host-out1.batch" \
    >>"${keep:-$work/kernel1.jsonl}"
done

echo "==> 2: 8-rail pod ($pod_cycles cycles), interleaved with the ip -batch floors" >&2
: >"$work/pod.jsonl"; : >"$work/podfloor.jsonl"; : >"$work/perrail.jsonl"
for c in $(seq 0 "$pod_cycles"); do
  keep=/dev/null; ((c > 0)) && keep=
  # One cycle a process, so each set goes first in turn (BENCH_FIRST).
  BENCH_FIRST=$c harness pod "$bin" "$pod" 1 0 "$work/railcni" "$work/reference" "$work/noop" "$work/moveonly" \
    "$work/moveonly-busy" "$work/moveonly-rail" >>"${keep:-$work/pod.jsonl}"
  harness floor "$pod" "$work/host-in.batch" "$work/pod-in.batch" "$work/pod-out.batch" "$work/host-out.batch" \
    >>"${keep:-$work/podfloor.jsonl}"
  for n in $(seq 1 8); do harness floor "$pod" "$work/host-inr$n.batch" "$work/pod-inr$n.batch" - -; done >"$work/perrail-in"
  for n in $(seq 8 -1 1); do harness floor "$pod" - - "$work/pod-outr$n.batch" "$work/host-outr$n.batch"; done >"$work/perrail-out"
  cat "$work/perrail-in" "$work/perrail-out" | python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin]
print(json.dumps({"add": [sum(r["add"][0] for r in rows)], "del": [sum(r["del"][0] for r in rows)]}))' \
    >>"${keep:-$work/perrail.jsonl}"
done
# The kernel's move times come from cycles of their own: tracing every
# syscall's entry and exit (even filtered) slows each of railcni's ~180
# syscalls, and would move the figures above (ip -batch makes few).
trace_moves on || echo "bench.sh: no usable tracefs; the kernel's move times will be n/a" >&2
for c in $(seq 1 "$traced_cycles"); do
  harness pod "$bin" "$pod" 1 0 "$work/railcni" >/dev/null
  harness floor "$pod" "$work/host-in.batch" "$work/pod-in.batch" "$work/pod-out.batch" "$work/host-out.batch" >/dev/null
  for n in $(seq 1 8); do harness floor "$pod" "$work/host-inr$n.batch" "$work/pod-inr$n.batch" - -; done >/dev/null
  for n in $(seq 8 -1 1); do harness floor "$pod" - - "$work/pod-outr$n.batch" "$work/host-outr$n.batch"; done >/dev/null
done
trace_moves off "$work/moves.trace"

echo "==> 3: a NAD with 16,384 inline static allocations vs one ($big_pairs interleaved pairs each)" >&2
python3 - "$work" "$pci0" <<'PY'
import ipaddress, json, sys
work, pci = sys.argv[1], sys.argv[2]
net = ipaddress.ip_network("172.30.0.0/15")
def conf(n, kind):
    allocs = [{"nodeName": f"gpu-{i}", "prefix": f"{net.network_address + 2 * i}/31",
               "gateway": str(net.network_address + 2 * i + 1)} for i in range(n)]
    c = {"cniVersion": "1.1.0", "name": f"bignad-{kind}", "type": kind,
         "ipam": {"type": "railcni-ipam", "cidr": str(net), "staticAllocations": allocs}}
    if kind == "railcni":
        c["deviceID"] = pci
    return c
for kind in ("railcni", "railcni-ipam"):
    for n, label in ((1, "one"), (16384, "big")):
        json.dump(conf(n, kind), open(f"{work}/{kind}-{label}.json", "w"))
PY
# The floor: serde_json's typed parse of the same bytes, allocations
# included, measured before and after each kind's pairs.
typed() { target/release/examples/ipam-bench typed "$work/railcni-big.json" 31 >>"$work/typed-ns"; }
for kind in railcni-ipam railcni; do
  # The first call with a config validates it whole, once per node: not timed.
  harness pairs 1 "$bin/$kind" "$pod" "$work/$kind-one.json" "$work/$kind-big.json" >/dev/null
  typed
  harness pairs "$big_pairs" "$bin/$kind" "$pod" "$work/$kind-one.json" "$work/$kind-big.json" >"$work/bignad-$kind.json"
  typed
done
big_bytes=$(stat -c %s "$work/railcni-big.json")

echo "==> 4: railcni-ipam allocate+release" >&2
bench=target/release/examples/ipam-bench
ipam_inproc=$($bench pairs "$work/ipam-a" "$ipam_pairs" 0 | awk '{print $5}')
t0=$EPOCHREALTIME
for w in $(seq 1 32); do $bench pairs "$work/ipam-b" $((ipam_pairs / 32 + 1)) "$w" >/dev/null & done
wait
t1=$EPOCHREALTIME
ipam_inproc32=$(echo "$t0 $t1 $(((ipam_pairs / 32 + 1) * 32))" | awk '{printf "%.0f", $3 / ($2 - $1)}')
iconf='{"cniVersion":"1.1.0","name":"rail1","ipam":{"type":"railcni-ipam","cidr":"10.0.0.0/8","perNodePrefix":24,"nodes":["gpu-0"]}}'
binary_pairs() { # <state> <count> <worker>
  for ((i = 0; i < $2; i++)); do
    CNI_COMMAND=ADD CNI_CONTAINERID="w$3-$i" CNI_IFNAME=net1 CNI_NETNS=/x RAILCNI_STATE_DIR=$1 "$bin/railcni-ipam" <<<"$iconf" >/dev/null
    CNI_COMMAND=DEL CNI_CONTAINERID="w$3-$i" CNI_IFNAME=net1 CNI_NETNS=/x RAILCNI_STATE_DIR=$1 "$bin/railcni-ipam" <<<"$iconf" >/dev/null
  done
}
n=$((ipam_pairs / 8))
t0=$EPOCHREALTIME; binary_pairs "$work/ipam-c" "$n" 0; t1=$EPOCHREALTIME
ipam_bin=$(echo "$t0 $t1 $n" | awk '{printf "%.0f", $3 / ($2 - $1)}')
t0=$EPOCHREALTIME
for w in $(seq 1 32); do binary_pairs "$work/ipam-d" $((n / 32 + 1)) "$w" & done
wait
t1=$EPOCHREALTIME
ipam_bin32=$(echo "$t0 $t1 $(((n / 32 + 1) * 32))" | awk '{printf "%.0f", $3 / ($2 - $1)}')

echo "==> 5: VERSION exec, size, RSS" >&2
# Exec'd from the Go harness the way libcni runs a plugin (no shell's fork in
# the way), interleaved with host-device, a static no-op and /bin/true.
"$work/libcni-bench" version "$version_runs" "$bin/railcni" "$bin/host-device" "$bin/noop" /bin/true >"$work/version.json"
size=$(stat -c %s "$bin/railcni")
cni_env=(CNI_CONTAINERID=probe CNI_NETNS="$pod" CNI_IFNAME=net1 CNI_PATH="$bin")
probe_conf=$(cat "$work/single.json")
rss=$(in_host env "${cni_env[@]}" CNI_COMMAND=ADD /usr/bin/time -f %M "$bin/railcni" <<<"$probe_conf" 2>&1 >/dev/null | tail -1)
in_host env "${cni_env[@]}" CNI_COMMAND=DEL "$bin/railcni" <<<"$probe_conf" >/dev/null 2>&1

echo "==> 5b: what counting calls for railcnictl metrics adds to one" >&2
"$work/libcni-bench" counting "$version_runs" "$bin/railcni" "$work/counting" >"$work/counting.json"
stats_ns=$(target/release/examples/stats-bench "$work/stats-bench" $((version_runs * 5)))

echo "==> 6: what one ADD and one DEL cost in calls" >&2
strace_c() { in_host env "${cni_env[@]}" CNI_COMMAND="$1" strace -f -qq -c -o "$2" "$bin/railcni" <<<"$probe_conf" >/dev/null 2>&1; }
strace_s() { in_host env "${cni_env[@]}" CNI_COMMAND="$1" strace -f -qq -e trace=sendto -s 4096 -o "$2" "$bin/railcni" <<<"$probe_conf" >/dev/null 2>&1; }
plain() { in_host env "${cni_env[@]}" CNI_COMMAND="$1" "$bin/railcni" <<<"$probe_conf" >/dev/null 2>&1; }
tally() { # <strace -c file> <sendto trace> -> "syscalls sendto fsync moves"
  local total sendto fsync moves
  total=$(awk '$NF == "total" {print $4}' "$1")
  sendto=$(awk '$NF == "sendto" {print $4}' "$1")
  fsync=$(awk '$NF == "fsync" || $NF == "fdatasync" {s += $4} END {print s + 0}' "$1")
  # A move is a SETLINK (0x13) carrying IFLA_NET_NS_FD (attribute 28); strace
  # decodes it by name or, on a socket made in another netns, shows raw bytes.
  moves=$(grep -E 'RTM_SETLINK|nlmsg_type=0x13' "$2" | grep -cE 'IFLA_NET_NS_FD|\\x08\\x00\\x1c\\x00' || true)
  echo "${total:-0} ${sendto:-0} $fsync $moves"
}
# One ADD and one DEL each, counted (strace -c) and their messages traced,
# with the opposite verb run plainly between so none of them is a replay.
strace_c ADD "$work/ADD.c"; plain DEL; strace_s ADD "$work/ADD.s"
strace_c DEL "$work/DEL.c"; plain ADD; strace_s DEL "$work/DEL.s"
read -r add_sys add_send add_fsync add_moves < <(tally "$work/ADD.c" "$work/ADD.s")
read -r del_sys del_send del_fsync del_moves < <(tally "$work/DEL.c" "$work/DEL.s")

python3 - "$work" "$out_dir/bench.json" "$out_dir/plugins.log" <<PY
import json, random, re, statistics, sys
work, out = sys.argv[1], sys.argv[2]
p50 = statistics.median
def q(xs, p):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(round(p * (len(xs) - 1))))]
ms = lambda ns: [x / 1e6 for x in ns]
def spread(plus, minus=()):
    """A goal's p50 difference, sum(p50(plus)) - sum(p50(minus)), over cycles
    drawn again with replacement (each cycle keeps its interleaved samples
    together): its 95% range, 2,000 draws. The kernel's moves end on ticks,
    so each timing is a mix of a few modes and its p50 can jump between them;
    the range says how far the verdict would move in another run."""
    lists = list(plus) + list(minus)
    n = min(len(xs) for xs in lists)
    if n < 3:
        return None
    draw, stats = random.Random(22), []
    for _ in range(2000):
        picks = [draw.randrange(n) for _ in range(n)]
        at = lambda xs: p50([xs[i] for i in picks])
        stats.append(sum(at(xs) for xs in plus) - sum(at(xs) for xs in minus))
    return [q(stats, .025), q(stats, .975)]
def sets(path):
    """Each set's ADD (attach) and DEL (detach) times in ms, over the lines of a harness file."""
    got = {}
    for line in open(path):
        d = json.loads(line)
        for k, v in ({"F": d} if "add" in d else d).items():
            got.setdefault(k, {"add": [], "del": []})
            got[k]["add"] += ms(v["add"]); got[k]["del"] += ms(v["del"])
    return got
single, move, kernel1 = sets(f"{work}/single.jsonl"), sets(f"{work}/move.jsonl")["F"], sets(f"{work}/kernel1.jsonl")["F"]
direct = {"add": [], "del": []}
for line in open(f"{work}/direct.jsonl"):
    d = next(iter(json.loads(line).values()))
    direct["add"] += ms(d["add"]); direct["del"] += ms(d["del"])
pod, podfloor, perrail = sets(f"{work}/pod.jsonl"), sets(f"{work}/podfloor.jsonl")["F"], sets(f"{work}/perrail.jsonl")["F"]
version = {k.rsplit("/", 1)[-1]: p50(ms(v)) for k, v in json.load(open(f"{work}/version.json")).items()}
counting = json.load(open(f"{work}/counting.json"))

def moves(path):
    """The kernel's time per namespace move (sends over 1 ms, see trace_moves),
    as railcni, as the one-process floor (8 a process) and the per-rail floor
    (1 a process); None without a trace."""
    try:
        lines = open(path)
    except OSError:
        return None
    event = re.compile(r"^\s*(.+)-(\d+)\s+\[\d+\].*?\s([\d.]+): (sys_enter|sys_exit):")
    started, per_process = {}, {}
    for line in lines:
        m = event.match(line)
        if not m: continue
        comm, pid, ts, kind = m.group(1), m.group(2), float(m.group(3)), m.group(4)
        if kind == "sys_enter":
            started[pid] = ts
        elif pid in started:
            began = started.pop(pid)
            if (ts - began) * 1000 > 1.0:
                per_process.setdefault((comm, pid), []).append((began, ts))
    sets = {"railcni": [], "oneProcess": [], "perRail": []}
    for (comm, _), spans in per_process.items():
        key = "railcni" if comm == "railcni" else ("oneProcess" if len(spans) == 8 else "perRail")
        sets[key] += spans
    took = {k: [(end - began) * 1000 for began, end in v] for k, v in sets.items()}
    # From one move's end to the next one's start within a pod (railcni: the
    # next rail's exec; ip -batch: none). Moves end on kernel ticks, so a
    # gap past the next tick costs the next move a whole tick.
    def gaps(spans):
        spans = sorted(spans)
        return [(b[0] - a[1]) * 1000 for a, b in zip(spans, spans[1:]) if 0 <= b[0] - a[1] < 0.015]
    return {k: (p50(v) if v else None) for k, v in took.items()} | {
        "mean": {k: (statistics.fmean(v) if v else None) for k, v in took.items()},
        "gapBetweenMoves": {k: (p50(gaps(sets[k])) if gaps(sets[k]) else None) for k in ("railcni", "oneProcess")},
        "count": {k: len(v) for k, v in took.items()}}

def own_log(path):
    """railcni's closing log lines: what each ADD and DEL took, and how much
    of it was outside the kernel's move (p50 of each, ms)."""
    took = {"attached": [], "detached": []}
    for line in open(path, errors="replace"):
        m = re.search(r"\] (attached|detached) .*; took ([\d.]+) ms \(([\d.]+) ms of it", line)
        if m:
            took[m.group(1)].append((float(m.group(2)), float(m.group(3))))
    return {verb: {"took": p50([t for t, _ in v]), "outsideMove": p50([t - m for t, m in v]), "count": len(v)} if v else None
            for verb, v in (("add", took["attached"]), ("del", took["detached"]))}

def bignad(kind):
    d = json.load(open(f"{work}/bignad-{kind}.json"))
    one, big = (next(v for k, v in d.items() if k.endswith(f"-{n}.json")) for n in ("one", "big"))
    # Without the kernel's namespace moves (railcni's own log says what they
    # took): they are the same for both configs and far noisier than the cost.
    outside = lambda d: p50([(p - m) / 1e6 for p, m in zip(d["pair"], d["moves"])])
    return {"one": p50(ms(one["pair"])), "big": p50(ms(big["pair"])),
            "wallDifference": p50(ms(big["pair"])) - p50(ms(one["pair"])),
            "difference": outside(big) - outside(one), "pairs": len(big["pair"])}

stat = lambda xs: {"p50": q(xs, .5), "p95": q(xs, .95)}
r = {
  "singleRail": {
    "railcni": {v: stat(single["A"][v]) for v in ("add", "del")},
    "railcniExecd": {v: stat(direct[v]) for v in ("add", "del")},
    "reference": {v: stat(single["B"][v]) for v in ("add", "del")},
    "bareMove": {v: stat(move[v]) for v in ("add", "del")},
    "kernelFloor": {v: stat(kernel1[v]) for v in ("add", "del")},
    "cycles": len(move["add"]),
  },
  "eightRailPod": {
    "railcni": {"attach": p50(pod["A"]["add"]), "detach": p50(pod["A"]["del"])},
    "reference": {"attach": p50(pod["B"]["add"]), "detach": p50(pod["B"]["del"])},
    "kernelFloor": {"attach": p50(podfloor["add"]), "detach": p50(podfloor["del"])},
    "kernelFloorPerRail": {"attach": p50(perrail["add"]), "detach": p50(perrail["del"])},
    "noopPlugin": {"attach": p50(pod["C"]["add"]), "detach": p50(pod["C"]["del"])},
    "moveOnlyPlugin": {"attach": p50(pod["D"]["add"]), "detach": p50(pod["D"]["del"])},
    "moveOnlyPluginBusy": {"attach": p50(pod["E"]["add"]), "detach": p50(pod["E"]["del"])},
    "moveAndKernelWorkPlugin": {"attach": p50(pod["F"]["add"]), "detach": p50(pod["F"]["del"])},
    "moveMs": moves(f"{work}/moves.trace"),
    "cycles": len(podfloor["add"]),
  },
  "bigNad": {"bytes": $big_bytes, "railcniIpam": bignad("railcni-ipam"), "railcni": bignad("railcni"),
             "typedParse": p50([int(l) / 1e6 for l in open(f"{work}/typed-ns")])},
  "ipam": {"inProcess1": int("$ipam_inproc"), "inProcess32": int("$ipam_inproc32"),
           "binary1": int("$ipam_bin"), "binary32": int("$ipam_bin32"), "unit": "allocate+release pairs/s"},
  "version": {"railcni": version["railcni"], "hostDevice": version["host-device"],
              "binTrue": version["true"], "staticNoop": version["noop"]},
  "counting": {"callOff": p50(ms(counting["off"])), "callOn": p50(ms(counting["on"])),
               "inProcessUs": float("$stats_ns") / 1000},
  "strippedBytes": $size, "addPeakRssKiB": int("$rss"),
  "railcniLog": own_log(sys.argv[3]),
  "perAdd": {"syscalls": $add_sys, "netlinkSends": $add_send, "fsyncs": $add_fsync, "netnsMoves": $add_moves},
  "perDel": {"syscalls": $del_sys, "netlinkSends": $del_send, "fsyncs": $del_fsync, "netnsMoves": $del_moves},
}
s, p, b, v = r["singleRail"], r["eightRailPod"], r["bigNad"], r["version"]
goals = [
  ("big NAD, railcni-ipam ADD+DEL above a typed parse", b["railcniIpam"]["difference"] - b["typedParse"], None, 2.0, "ms"),
  ("big NAD, railcni ADD+DEL above a typed parse", b["railcni"]["difference"] - b["typedParse"], None, 2.0, "ms"),
  ("8-rail attach above ip -batch + 8 no-op execs", p["railcni"]["attach"] - p["kernelFloor"]["attach"] - p["noopPlugin"]["attach"],
   spread([pod["A"]["add"]], [podfloor["add"], pod["C"]["add"]]), 8.0, "ms"),
  ("8-rail detach above ip -batch + 8 no-op execs", p["railcni"]["detach"] - p["kernelFloor"]["detach"] - p["noopPlugin"]["detach"],
   spread([pod["A"]["del"]], [podfloor["del"], pod["C"]["del"]]), 8.0, "ms"),
  # The per-rail floor: the same kernel work split as a plugin per rail must do it (an exec a side each rail).
  ("8-rail attach above the per-rail floor", p["railcni"]["attach"] - p["kernelFloorPerRail"]["attach"],
   spread([pod["A"]["add"]], [perrail["add"]]), 8.0, "ms"),
  ("big NAD, railcni-ipam ADD+DEL above one allocation", b["railcniIpam"]["difference"], None, 4.5, "ms"),
  ("single-rail ADD above the bare move (both exec'd alike)", s["railcniExecd"]["add"]["p50"] - s["bareMove"]["add"]["p50"],
   spread([direct["add"]], [move["add"]]), 1.5, "ms"),
  ("single-rail DEL above the bare move (both exec'd alike)", s["railcniExecd"]["del"]["p50"] - s["bareMove"]["del"]["p50"],
   spread([direct["del"]], [move["del"]]), 1.5, "ms"),
  ("VERSION above the no-op's exec", v["railcni"] - v["staticNoop"], None, 0.25, "ms"),
  ("fsyncs per ADD", r["perAdd"]["fsyncs"], None, 1, ""),
  ("fsyncs per DEL", r["perDel"]["fsyncs"], None, 1, ""),
]
r["goals"] = [{"goal": g, "measured": m, "range95": c, "atMost": t, "met": m <= t} for g, m, c, t, _ in goals]
# railcni against the plugin doing only its kernel work, cycle by cycle.
p["railcniAboveKernelWorkRange95"] = {v: spread([pod["A"][v]], [pod["F"][v]]) for v in ("add", "del")}
span = lambda c: f"{c[0]:+.1f}..{c[1]:+.1f}" if c else ""
json.dump(r, open(out, "w"), indent=2)

print(f"single rail via libcni ({s['cycles']} cycles, interleaved)   p50 ms   p95 ms   vs reference")
for verb in ("add", "del"):
    a, ref = s["railcni"][verb], s["reference"][verb]
    print(f"  railcni   {verb.upper()}                                 {a['p50']:7.2f}  {a['p95']:7.2f}   {a['p50'] / ref['p50']:.2f}x")
    print(f"  reference {verb.upper()} (host-device+static+tuning+sbr){ref['p50']:8.2f}  {ref['p95']:7.2f}")
print(f"  railcni exec'd directly (no libcni): ADD {s['railcniExecd']['add']['p50']:.2f}, DEL {s['railcniExecd']['del']['p50']:.2f}")
print(f"  bare move (one ip exec a way): in {s['bareMove']['add']['p50']:.2f}, out {s['bareMove']['del']['p50']:.2f}; "
      f"the same kernel work in ip (one process a side): ADD {s['kernelFloor']['add']['p50']:.2f}, DEL {s['kernelFloor']['del']['p50']:.2f}")
print(f"8-rail pod, Multus-style ({p['cycles']} cycles, medians)      attach ms   detach ms")
for key, label in (("railcni", "railcni"), ("reference", "reference chain (24 execs)"),
                   ("kernelFloor", "kernel-work floor: ip, 1 process a side"),
                   ("kernelFloorPerRail", "same ip work, 2 processes a rail"),
                   ("noopPlugin", "libcni + a no-op plugin, 8 execs"),
                   ("moveOnlyPlugin", "libcni + a plugin that only moves, 8 execs"),
                   ("moveOnlyPluginBusy", "  the same, 1.5 ms of CPU after each move"),
                   ("moveAndKernelWorkPlugin", "  the same, doing railcni's kernel work")):
    print(f"  {label:<44}{p[key]['attach']:8.1f}   {p[key]['detach']:8.1f}")
mo, busy = p["moveOnlyPlugin"], p["moveOnlyPluginBusy"]
print(f"  railcni above the plugin that only moves: attach {p['railcni']['attach'] - mo['attach']:+.1f} ms, "
      f"detach {p['railcni']['detach'] - mo['detach']:+.1f} ms; 8 x 1.5 ms of a plugin's CPU cost the pod "
      f"{busy['attach'] - mo['attach']:+.1f} ms (attach)")
mk, kf, noop = p["moveAndKernelWorkPlugin"], p["kernelFloor"], p["noopPlugin"]
above = {v: f" ({span(c)})" if c else "" for v, c in p["railcniAboveKernelWorkRange95"].items()}
print(f"  railcni above the plugin doing its kernel work: attach {p['railcni']['attach'] - mk['attach']:+.1f} ms"
      f"{above['add']}, detach {p['railcni']['detach'] - mk['detach']:+.1f} ms{above['del']}; that plugin "
      f"above ip -batch + 8 no-op execs: attach {mk['attach'] - kf['attach'] - noop['attach']:+.1f} ms, "
      f"detach {mk['detach'] - kf['detach'] - noop['detach']:+.1f} ms")
mv = p["moveMs"]
if mv and all(mv[k] for k in ("railcni", "oneProcess", "perRail")):
    mean = mv["mean"]
    print(f"  the kernel's namespace move (ftrace, p50 / mean ms): {mv['oneProcess']:.2f} / {mean['oneProcess']:.2f} in the "
          f"one-process floor, {mv['perRail']:.2f} / {mean['perRail']:.2f} in the per-rail floor, "
          f"{mv['railcni']:.2f} / {mean['railcni']:.2f} in railcni")
    gap = mv["gapBetweenMoves"]
    if gap["railcni"] is not None and gap["oneProcess"] is not None:
        print(f"  from one rail's move to the next (p50 ms): {gap['oneProcess']:.2f} in ip -batch, {gap['railcni']:.2f} "
              f"in railcni (an exec, libcni and railcni's own work; moves end on kernel ticks)")
else:
    print("  the kernel's namespace move: n/a (no writable tracefs)")
own = r["railcniLog"]
if own["add"] and own["del"]:
    print(f"  railcni's own log, p50 over every ADD / DEL of this run: took {own['add']['took']:.2f} / {own['del']['took']:.2f} ms, "
          f"outside the kernel's move {own['add']['outsideMove']:.2f} / {own['del']['outsideMove']:.2f} ms")
print(f"a NAD with 16,384 inline allocations ({b['bytes']} bytes) vs one, ADD+DEL p50 of {b['railcni']['pairs']} pairs, stdin a pipe;")
print(f"  serde_json's typed parse of the same bytes (the floor): {b['typedParse']:.2f} ms")
for key, label in (("railcniIpam", "railcni-ipam"), ("railcni", "railcni (embedded IPAM, a VF moved)")):
    x = b[key]
    extra = "" if key == "railcniIpam" else f"; outside the kernel's moves {x['difference']:+.2f} ms"
    print(f"  {label:<38} {x['one']:7.2f} vs {x['big']:7.2f} ms: {x['wallDifference']:+.2f} ms{extra}")
i = r["ipam"]
print(f"railcni-ipam allocate+release pairs/s: in-process {i['inProcess1']} (32 procs {i['inProcess32']}), "
      f"binary {i['binary1']} (32 callers {i['binary32']})")
print(f"VERSION exec p50: railcni {v['railcni']:.2f} ms, host-device {v['hostDevice']:.2f} ms; "
      f"exec floor: static no-op {v['staticNoop']:.2f} ms, /bin/true {v['binTrue']:.2f} ms")
k = r["counting"]
print(f"counting a call for railcnictl metrics: {k['inProcessUs']:.0f} us in-process; a DEL exec {k['callOff']:.3f} ms off, "
      f"{k['callOn']:.3f} ms on ({(k['callOn'] - k['callOff']) * 1000:+.0f} us; goal <= +100 us)")
print(f"stripped size {r['strippedBytes']} bytes; peak RSS of an ADD {r['addPeakRssKiB']} KiB")
for verb in ("perAdd", "perDel"):
    c = r[verb]
    print(f"{verb[3:]:>3}: {c['syscalls']} syscalls, {c['netlinkSends']} netlink sends, {c['fsyncs']} fsyncs, {c['netnsMoves']} namespace moves")
print()
print(f"{'goal (every figure against a floor of the same run)':<58}{'measured':>10}{'95% range':>14}{'at most':>9}  verdict")
for g, m, c, t, unit in goals:
    shown = f"{m:+.2f} {unit}" if unit else f"{m}"
    limit = f"{t:.2f}" if unit else f"{t}"
    print(f"  {g:<56}{shown:>10}{span(c):>14}{limit:>9}  {'met' if m <= t else 'NOT MET'}")
print("(95% range: the p50 difference over the run's cycles drawn again with replacement)")
print(f"(JSON: {out})")
PY
