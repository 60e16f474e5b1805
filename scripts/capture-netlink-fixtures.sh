#!/usr/bin/env bash
# Regenerate tests/fixtures/netlink/*.hex: the exact netlink messages iproute2
# sends for each VF setting, RDMA operation and DCB query railcni implements, captured
# with strace. railcni's encoders are tested byte for byte against them.
#
# VF commands run against a veth named pf0 (the kernel refuses them, but the
# message is sent and recorded). RDMA commands run with a preload shim that
# stands in for the absent NETLINK_RDMA peer (scripts/fixtures/rdma-peer-shim.c).
# Each fixture keeps the command that produced it and the ifindex / netns fd
# it used. Needs root, iproute2, strace, gcc.
set -euo pipefail
cd "$(dirname "$0")/.."
out=tests/fixtures/netlink
mkdir -p "$out"
ns="railcni-capture"
work=$(mktemp -d)
trap 'ip netns del "$ns" 2>/dev/null || true; rm -rf "$work"' EXIT
ip netns add "$ns"
ip -n "$ns" link add pf0 type veth peer name pf0peer
ifindex=$(ip -n "$ns" -j link show pf0 | sed -n 's/.*"ifindex":\([0-9]*\).*/\1/p')
gcc -shared -fPIC -O1 -o "$work/shim.so" scripts/fixtures/rdma-peer-shim.c -ldl

# The hex of the last traced send whose netlink type is <type> (decimal).
last_message() { # <strace-log> <type>
  python3 - "$1" "$2" <<'PY'
import re, sys
log, want = open(sys.argv[1]).read(), int(sys.argv[2])
msgs, cur = [], None
for line in log.splitlines():
    if re.match(r'^\s*\* \d+ bytes in buffer', line) or re.match(r'^(\d+ +)?send(to|msg)\(', line):
        cur = []; msgs.append(cur)
    elif cur is not None and (m := re.match(r'^\s*\| [0-9a-f]{5}  ((?:[0-9a-f]{2}[ ]{1,2}){1,16})', line)):
        cur.extend(m.group(1).split())
    else:
        cur = None
hits = [m for m in msgs if len(m) >= 16 and int(m[5] + m[4], 16) == want]
if not hits:
    sys.exit(f"no message of type {want} in {sys.argv[1]}")
print(' '.join(hits[-1]))
PY
}

capture() { # <name> <netlink-type> <extra header line> <command...>
  local name=$1 type=$2 extra=$3; shift 3
  strace -f -e trace=sendmsg,sendto -e write=all -xx -o "$work/$name.log" "$@" >/dev/null 2>&1 || true
  local shown="${*}"
  shown=${shown//LD_PRELOAD=$work\/shim.so/LD_PRELOAD=rdma-peer-shim.so}
  { echo "# command: $shown"; echo "# $extra"; last_message "$work/$name.log" "$type" | fold -w 48; } >"$out/$name.hex"
  echo "captured $out/$name.hex"
}

RTM_NEWLINK=16
in_ns="ip netns exec $ns"
capture vf-mac $RTM_NEWLINK "ifindex $ifindex" $in_ns ip link set dev pf0 vf 3 mac 02:00:00:00:00:01
capture vf-vlan $RTM_NEWLINK "ifindex $ifindex" $in_ns ip link set dev pf0 vf 3 vlan 100
capture vf-vlan-qos $RTM_NEWLINK "ifindex $ifindex" $in_ns ip link set dev pf0 vf 3 vlan 100 qos 5
capture vf-vlan-qos-8021ad $RTM_NEWLINK "ifindex $ifindex" $in_ns ip link set dev pf0 vf 3 vlan 100 qos 5 proto 802.1ad
capture vf-spoofchk-on $RTM_NEWLINK "ifindex $ifindex" $in_ns ip link set dev pf0 vf 3 spoofchk on
capture vf-spoofchk-off $RTM_NEWLINK "ifindex $ifindex" $in_ns ip link set dev pf0 vf 3 spoofchk off
capture vf-trust-on $RTM_NEWLINK "ifindex $ifindex" $in_ns ip link set dev pf0 vf 3 trust on
capture vf-ib-guid $RTM_NEWLINK "ifindex $ifindex" $in_ns ip link set dev pf0 vf 3 node_guid 00:11:22:33:44:55:66:77 port_guid 00:11:22:33:44:55:66:77
capture vf-state-enable $RTM_NEWLINK "ifindex $ifindex" $in_ns ip link set dev pf0 vf 3 state enable
capture vf-state-disable $RTM_NEWLINK "ifindex $ifindex" $in_ns ip link set dev pf0 vf 3 state disable
capture vf-state-auto $RTM_NEWLINK "ifindex $ifindex" $in_ns ip link set dev pf0 vf 3 state auto
capture vf-rate $RTM_NEWLINK "ifindex $ifindex" $in_ns ip link set dev pf0 vf 3 min_tx_rate 100 max_tx_rate 1000
RTM_GETDCB=78
capture dcb-ieee-get $RTM_GETDCB "ifname pf0" $in_ns dcb app show dev pf0
capture rdma-system 5126 "sys get" env LD_PRELOAD="$work/shim.so" rdma system
# rdma opens the netns by name; the fd it gets is recorded in the message.
capture rdma-dev-set-netns 5122 "device index 7" env LD_PRELOAD="$work/shim.so" rdma dev set mlx5_0 netns "$ns"
