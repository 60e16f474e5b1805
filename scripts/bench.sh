#!/usr/bin/env bash
# railcni beside the reference chain and the kernel's own cost, in one run on
# the same fake VFs (veth stand-ins), release build. Every figure is also a
# ratio to a floor or reference measured in the same run, interleaved.
#
#   scripts/bench.sh [--quick]      (--quick: a few cycles, to prove it runs; CI)
#
# 1. single rail through libcni: railcni + embedded IPAM vs the reference
#    chain host-device + static + tuning(mtu 9000) + sbr; ADD and DEL p50/p95;
# 2. an 8-rail pod, Multus-style (8 serial ADDs on 8 VFs over 2 PFs, then 8
#    DELs in reverse): railcni, the reference chain, and the kernel-work
#    floor (ip -batch doing the same kernel operations, one process a side),
#    beside what explains the gap: the same ip work split per rail (two ip
#    processes a rail, as any plugin run once per network must), libcni
#    running a no-op plugin 8 times, and (from ftrace) what the kernel's
#    namespace move itself took in each;
# 3. the bare move floor (ip link set … netns … name, both ways), interleaved;
# 4. railcni-ipam allocate+release ops/s, in-process and through the binary;
# 5. VERSION exec time (railcni vs host-device, and the exec floor: a static
#    no-op and /bin/true), stripped size, peak RSS of an ADD;
# 6. per ADD and per DEL: namespace moves, netlink sends, fsyncs, syscalls.
# Writes the table to stdout and JSON to target/bench/bench.json.
# Do not run it beside a build or a test suite: it measures time.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "bench.sh: run as root (network namespaces)" >&2; exit 1; }
quick=0; [ "${1:-}" = "--quick" ] && quick=1
if ((quick)); then cycles=3 warm=1 pod_cycles=2 version_runs=10 ipam_pairs=100; else
  cycles=60 warm=5 pod_cycles=25 version_runs=300 ipam_pairs=2000; fi
command -v strace >/dev/null && command -v go >/dev/null && [ -x /usr/lib/cni/sbr ] && [ -x /usr/bin/time ] ||
  { echo "bench.sh: needs strace, go, the reference plugins and GNU time (scripts/install-test-deps.sh)" >&2; exit 1; }

# The shipped artifact: static, LTO, stripped.
scripts/build-static.sh >/dev/null
static=target/x86_64-unknown-linux-gnu/release
cargo build --release --locked --quiet -p railcni-ipam --example ipam-bench
cargo build --release --locked --quiet -p railcni-cni --example stats-bench
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
export RAILCNI_SYSFS_ROOT=$work/sys RAILCNI_STATE_DIR=$work/state RAILCNI_NODE_NAME=gpu-0 \
  RAILCNI_NODE_CONFIG=$work/none.json RAILCNI_LOG_DIR=$work/log

# Conflists: network n (1..8) on the n-th VF, /31 from rail n's /15.
mapfile -t vfs < <(awk '{print $3" "$4}' "$work/vfs")
mkdir -p "$work/railcni" "$work/reference" "$work/noop"
for n in $(seq 1 8); do
  read -r pci name <<<"${vfs[$((n - 1))]}"
  cidr="172.$((14 + 2 * n)).0.0/15" addr="172.$((14 + 2 * n)).0.0" gw="172.$((14 + 2 * n)).0.1"
  cat >"$work/railcni/$(printf %02d "$n").conflist" <<JSON
{"cniVersion":"1.0.0","name":"rail$n","plugins":[{"type":"railcni","deviceID":"$pci","mtu":9000,
 "ipam":{"type":"railcni-ipam","cidr":"$cidr","nodes":["gpu-0"],"routes":[{"dst":"172.16.0.0/12"}]}}]}
JSON
  echo "{\"cniVersion\":\"1.0.0\",\"name\":\"noop$n\",\"plugins\":[{\"type\":\"noop\"}]}" \
    >"$work/noop/$(printf %02d "$n").conflist"
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

ms() { echo "$1 $2" | awk '{printf "%.3f", ($2 - $1) * 1000}'; }
in_host() { ip netns exec "$host" "$@"; }

echo "==> 1, 3: single rail through libcni ($cycles cycles + $warm warm-up), interleaved with the bare move" >&2
read -r pci0 name0 <<<"${vfs[0]}"
read -r pci1 name1 <<<"${vfs[1]}"
single_a=$work/railcni/01.conflist
# The reference chain gets its own VF (the second of PF1), same kind of veth.
sed "s/\"device\":\"$name0\"/\"device\":\"$name1\"/" "$work/reference/01.conflist" >"$work/ref-single.conflist"
: >"$work/single.jsonl"; : >"$work/floor.txt"
for c in $(seq 1 $((cycles + warm))); do
  in_host "$work/libcni-bench" single "$bin" "$pod" 1 0 "$single_a" "$work/ref-single.conflist" \
    >>"$work/single.jsonl" 2>>"$out_dir/plugins.log"
  t0=$EPOCHREALTIME; in_host ip link set dev "$name0" netns "$prefix-pod" name net1; t1=$EPOCHREALTIME
  ip -n "$prefix-pod" link set dev net1 netns "$host" name "$name0"; t2=$EPOCHREALTIME
  in_host ip -batch "$work/host-in1.batch"; ip -n "$prefix-pod" -batch "$work/pod-in1.batch"; t3=$EPOCHREALTIME
  ip -n "$prefix-pod" -batch "$work/pod-out1.batch"; in_host ip -batch "$work/host-out1.batch"; t4=$EPOCHREALTIME
  ((c > warm)) && echo "$(ms "$t0" "$t1") $(ms "$t1" "$t2") $(ms "$t2" "$t3") $(ms "$t3" "$t4")" >>"$work/floor.txt"
done

echo "==> 2: 8-rail pod ($pod_cycles cycles), interleaved with the ip -batch floors" >&2
: >"$work/pod.jsonl"; : >"$work/podfloor.txt"
trace_moves on || echo "bench.sh: no usable tracefs; the kernel's move times will be n/a" >&2
for c in $(seq 0 "$pod_cycles"); do
  in_host "$work/libcni-bench" pod "$bin" "$pod" 1 0 "$work/railcni" "$work/reference" "$work/noop" \
    >>"$work/pod.jsonl" 2>>"$out_dir/plugins.log"
  t0=$EPOCHREALTIME
  in_host ip -batch "$work/host-in.batch"; ip -n "$prefix-pod" -batch "$work/pod-in.batch"
  t1=$EPOCHREALTIME
  ip -n "$prefix-pod" -batch "$work/pod-out.batch"; in_host ip -batch "$work/host-out.batch"
  t2=$EPOCHREALTIME
  for n in $(seq 1 8); do in_host ip -batch "$work/host-inr$n.batch"; ip -n "$prefix-pod" -batch "$work/pod-inr$n.batch"; done
  t3=$EPOCHREALTIME
  for n in $(seq 8 -1 1); do ip -n "$prefix-pod" -batch "$work/pod-outr$n.batch"; in_host ip -batch "$work/host-outr$n.batch"; done
  t4=$EPOCHREALTIME
  ((c > 0)) && echo "$(ms "$t0" "$t1") $(ms "$t1" "$t2") $(ms "$t2" "$t3") $(ms "$t3" "$t4")" >>"$work/podfloor.txt"
done
trace_moves off "$work/moves.trace"

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
probe_conf=$(python3 -c 'import json,sys; l=json.load(open(sys.argv[1])); c=l["plugins"][0]; c["cniVersion"]=l["cniVersion"]; c["name"]=l["name"]; print(json.dumps(c))' "$single_a")
rss=$(in_host env "${cni_env[@]}" CNI_COMMAND=ADD /usr/bin/time -f %M "$bin/railcni" <<<"$probe_conf" 2>&1 >/dev/null | tail -1)
in_host env "${cni_env[@]}" CNI_COMMAND=DEL "$bin/railcni" <<<"$probe_conf" >/dev/null 2>&1

echo "==> 5b: what counting calls for railcni metrics adds to one" >&2
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
import json, re, statistics, sys
work, out = sys.argv[1], sys.argv[2]
def q(xs, p):
    xs = sorted(xs); return xs[min(len(xs) - 1, int(round(p * (len(xs) - 1))))]
ms = lambda ns: [x / 1e6 for x in ns]
single = {"A": {"add": [], "del": []}, "B": {"add": [], "del": []}}
for line in open(f"{work}/single.jsonl"):
    d = json.loads(line)
    for k in "AB":
        single[k]["add"] += ms(d[k]["add"]); single[k]["del"] += ms(d[k]["del"])
for k in "AB":
    single[k]["add"] = single[k]["add"][$warm:]; single[k]["del"] = single[k]["del"][$warm:]
floor = [tuple(map(float, l.split())) for l in open(f"{work}/floor.txt")]
pod = {k: {"add": [], "del": []} for k in "ABC"}
for i, line in enumerate(open(f"{work}/pod.jsonl")):
    if i == 0: continue
    d = json.loads(line)
    for k in "ABC":
        pod[k]["add"] += ms(d[k]["add"]); pod[k]["del"] += ms(d[k]["del"])
podfloor = [tuple(map(float, l.split())) for l in open(f"{work}/podfloor.txt")]
version = {k: ms(v) for k, v in json.load(open(f"{work}/version.json")).items()}
counting = json.load(open(f"{work}/counting.json"))
vp50 = lambda name: statistics.median(next(v for k, v in version.items() if k.endswith("/" + name)))

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
            took = (ts - started.pop(pid)) * 1000
            if took > 1.0:
                per_process.setdefault((comm, pid), []).append(took)
    sets = {"railcni": [], "oneProcess": [], "perRail": []}
    for (comm, _), took in per_process.items():
        key = "railcni" if comm == "railcni" else ("oneProcess" if len(took) == 8 else "perRail")
        sets[key] += took
    return {k: (statistics.median(v) if v else None) for k, v in sets.items()} | {
        "mean": {k: (statistics.fmean(v) if v else None) for k, v in sets.items()},
        "count": {k: len(v) for k, v in sets.items()}}
move_ms = moves(f"{work}/moves.trace")

def own_log(path):
    """railcni's closing log lines: what each ADD and DEL took, and how much
    of it was the kernel's move (p50 of each, ms)."""
    took = {"attached": [], "detached": []}
    for line in open(path, errors="replace"):
        m = re.search(r"\] (attached|detached) .*; took ([\d.]+) ms \(([\d.]+) ms of it", line)
        if m:
            took[m.group(1)].append((float(m.group(2)), float(m.group(3))))
    return {verb: {"took": statistics.median([t for t, _ in v]), "outsideMove": statistics.median([t - m for t, m in v]),
                   "count": len(v)} if v else None
            for verb, v in (("add", took["attached"]), ("del", took["detached"]))}
own = own_log(sys.argv[3])
r = {
  "singleRail": {
    "railcni": {"add": {"p50": q(single["A"]["add"], .5), "p95": q(single["A"]["add"], .95)},
                "del": {"p50": q(single["A"]["del"], .5), "p95": q(single["A"]["del"], .95)}},
    "reference": {"add": {"p50": q(single["B"]["add"], .5), "p95": q(single["B"]["add"], .95)},
                  "del": {"p50": q(single["B"]["del"], .5), "p95": q(single["B"]["del"], .95)}},
    "moveFloor": {"in": {"p50": q([f[0] for f in floor], .5), "p95": q([f[0] for f in floor], .95)},
                  "out": {"p50": q([f[1] for f in floor], .5), "p95": q([f[1] for f in floor], .95)}},
    "kernelFloor": {"add": {"p50": q([f[2] for f in floor], .5), "p95": q([f[2] for f in floor], .95)},
                    "del": {"p50": q([f[3] for f in floor], .5), "p95": q([f[3] for f in floor], .95)}},
    "cycles": len(floor),
  },
  "eightRailPod": {
    "railcni": {"attach": statistics.median(pod["A"]["add"]), "detach": statistics.median(pod["A"]["del"])},
    "reference": {"attach": statistics.median(pod["B"]["add"]), "detach": statistics.median(pod["B"]["del"])},
    "kernelFloor": {"attach": statistics.median([f[0] for f in podfloor]), "detach": statistics.median([f[1] for f in podfloor])},
    "kernelFloorPerRail": {"attach": statistics.median([f[2] for f in podfloor]), "detach": statistics.median([f[3] for f in podfloor])},
    "noopPlugin": {"attach": statistics.median(pod["C"]["add"]), "detach": statistics.median(pod["C"]["del"])},
    "moveMs": move_ms,
    "cycles": len(podfloor),
  },
  "ipam": {"inProcess1": int("$ipam_inproc"), "inProcess32": int("$ipam_inproc32"),
           "binary1": int("$ipam_bin"), "binary32": int("$ipam_bin32"), "unit": "allocate+release pairs/s"},
  "version": {"railcni": vp50("railcni"), "hostDevice": vp50("host-device"),
              "binTrue": vp50("true"), "staticNoop": vp50("noop")},
  "counting": {"callOff": statistics.median(ms(counting["off"])), "callOn": statistics.median(ms(counting["on"])),
               "inProcessUs": float("$stats_ns") / 1000},
  "strippedBytes": $size, "addPeakRssKiB": int("$rss"),
  "railcniLog": own,
  "perAdd": {"syscalls": $add_sys, "netlinkSends": $add_send, "fsyncs": $add_fsync, "netnsMoves": $add_moves},
  "perDel": {"syscalls": $del_sys, "netlinkSends": $del_send, "fsyncs": $del_fsync, "netnsMoves": $del_moves},
}
json.dump(r, open(out, "w"), indent=2)
s, p = r["singleRail"], r["eightRailPod"]
fin, fout = s["moveFloor"]["in"]["p50"], s["moveFloor"]["out"]["p50"]
kadd, kdel = s["kernelFloor"]["add"]["p50"], s["kernelFloor"]["del"]["p50"]
print(f"single rail via libcni ({s['cycles']} cycles, interleaved)      p50 ms   p95 ms   p50 above kernel floor   vs reference")
for verb, fl in (("add", kadd), ("del", kdel)):
    a, b = s["railcni"][verb], s["reference"][verb]
    print(f"  railcni   {verb.upper()}                                       {a['p50']:7.2f}  {a['p95']:7.2f}   {a['p50'] - fl:+7.2f}          {a['p50'] / b['p50']:.2f}x")
    print(f"  reference {verb.upper()} (host-device+static+tuning+sbr)     {b['p50']:7.2f}  {b['p95']:7.2f}   {b['p50'] - fl:+7.2f}")
print(f"  kernel-work floor (ip -batch, 2 execs): ADD {kadd:.2f} ms, DEL {kdel:.2f} ms (p50)")
print(f"  bare move floor (one ip exec): in {fin:.2f} ms, out {fout:.2f} ms (p50; p95 {s['moveFloor']['in']['p95']:.2f} / {s['moveFloor']['out']['p95']:.2f})")
print(f"8-rail pod, Multus-style ({p['cycles']} cycles, medians)       attach ms   detach ms   above the floor (ratio)")
fa, fd = p["kernelFloor"]["attach"], p["kernelFloor"]["detach"]
rows = (("railcni", "railcni"), ("reference", "reference chain (24 execs)"),
        ("kernelFloor", "kernel-work floor: ip, 1 process a side"),
        ("kernelFloorPerRail", "same ip work, 2 processes a rail"),
        ("noopPlugin", "libcni + a no-op plugin, 8 execs"))
for key, label in rows:
    a, d = p[key]["attach"], p[key]["detach"]
    extra = "" if key in ("kernelFloor", "noopPlugin") else \
        f"   {a - fa:+6.1f} ({a / fa:.2f}x) / {d - fd:+6.1f} ({d / fd:.2f}x)"
    print(f"  {label:<44}{a:8.1f}   {d:8.1f}{extra}")
mv = p["moveMs"]
if mv and all(mv[k] for k in ("railcni", "oneProcess", "perRail")):
    mean = mv["mean"]
    print(f"  the kernel's namespace move (ftrace, p50 / mean ms): {mv['oneProcess']:.2f} / {mean['oneProcess']:.2f} in the "
          f"one-process floor, {mv['perRail']:.2f} / {mean['perRail']:.2f} in the per-rail floor, "
          f"{mv['railcni']:.2f} / {mean['railcni']:.2f} in railcni")
else:
    print("  the kernel's namespace move: n/a (no writable tracefs)")
if own["add"] and own["del"]:
    print(f"  railcni's own log, p50 over every ADD / DEL of this run: took {own['add']['took']:.2f} / {own['del']['took']:.2f} ms, "
          f"outside the kernel's move {own['add']['outsideMove']:.2f} / {own['del']['outsideMove']:.2f} ms")
i = r["ipam"]
print(f"railcni-ipam allocate+release pairs/s, every change durable: in-process {i['inProcess1']} "
      f"(= {2 * i['inProcess1']} ops/s; 32 procs {i['inProcess32']}), binary {i['binary1']} (32 callers {i['binary32']})")
v = r["version"]
print(f"VERSION exec p50: railcni {v['railcni']:.2f} ms, host-device {v['hostDevice']:.2f} ms ({v['railcni'] / v['hostDevice']:.2f}x); "
      f"exec floor: static no-op {v['staticNoop']:.2f} ms ({v['railcni'] / v['staticNoop']:.2f}x), /bin/true {v['binTrue']:.2f} ms")
k = r["counting"]
print(f"counting a call for railcni metrics: {k['inProcessUs']:.0f} us p50 in-process; a DEL exec p50 {k['callOff']:.3f} ms off, "
      f"{k['callOn']:.3f} ms on ({(k['callOn'] - k['callOff']) * 1000:+.0f} us; goal <= +100 us)")
print(f"stripped size {r['strippedBytes']} bytes; peak RSS of an ADD {r['addPeakRssKiB']} KiB")
for verb in ("perAdd", "perDel"):
    c = r[verb]
    print(f"{verb[3:]:>3}: {c['syscalls']} syscalls, {c['netlinkSends']} netlink sends, {c['fsyncs']} fsyncs, {c['netnsMoves']} namespace moves")
print(f"(JSON: {out})")
PY
