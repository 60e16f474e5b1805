# nics: 2
# The DaemonSet's containers in the box deploy/daemonset.yaml gives them, on
# real igb VFs (tests/vm/box.py reads the box from the manifest,
# tests/vm/box-enter.sh builds it): the installer with no capability at
# all; the agent with the manifest's list, its host paths only (read-only
# where the manifest says), /sys and /proc/sys read-only, no_new_privs.
# In that box: a scrape with every pod's interfaces, a dead pod's VF
# detached by gc, a VF a driver reload took re-attached, doctor and probe.
# Then each capability of the list taken away in turn: what fails, and
# that it says so with its errno in the log and a metric.
leaf_up
vfs_up 2
pf1=${VM_PFS[0]} pf2=${VM_PFS[1]}
repo=$RAILCNI_REPO
NODE_NAME=vm-0
H=/run/confined-host
for c in install agent; do
  spec=$(python3 "$repo/tests/vm/box.py" "$repo/deploy/daemonset.yaml" "$c" 2>&1)
  check "box.py reads the $c container's box from the manifest" test -n "$spec" -a "${spec#box.py}" = "$spec"
  eval "${spec//BOX_/${c^^}_}"
done
echo "# the agent's capabilities: $AGENT_CAPS; the installer's: ${INSTALL_CAPS:-none}"
# The image's entry point runs a container that names no command.
read -r -a entry <<<"$(sed -n 's/^ENTRYPOINT \[\(.*\)\]/\1/p' "$repo/deploy/Containerfile" | tr -d '",')"

# A manifest host path on this guest: /run's are the guest's own (the pods'
# namespaces), the rest under $H; the plan ConfigMap a directory of its keys.
host_path() {
  case "$1" in
    configmap:*) echo "$H/configmap/${1#configmap:}" ;;
    /var/run/*) echo "/run/${1#/var/run/}" ;;
    /run/* | /proc/*) echo "$1" ;;
    *) echo "$H$1" ;;
  esac
}
# box CONTAINER CAPS CMD...: CMD in CONTAINER's box with bounding set CAPS
# (a subshell that becomes unshare: killing it ends the box).
box() (
  local c=${1^^} caps=$2 m e root
  shift 2
  local -n mounts=${c}_MOUNTS env=${c}_ENV
  local spec=() envs=()
  for m in "${mounts[@]}"; do
    read -r src dst mode <<<"$m"
    spec+=("$(host_path "$src") $dst $mode")
  done
  for e in "${env[@]}"; do envs+=("${e//\$NODE_NAME/$NODE_NAME}"); done
  root=$(mktemp -d /run/box.XXXXXX)
  RAILCNI_BIN_DIR=$RAILCNI_BIN_DIR exec unshare -m -p -f --kill-child --propagation slave \
    bash "$repo/tests/vm/box-enter.sh" "$root" "$caps" "${#spec[@]}" "${spec[@]}" "${#envs[@]}" "${envs[@]}" "$@"
)
# The manifest's agent command with gc every 2 s instead of 5 min.
agent_argv=() prev=
for a in "${AGENT_ARGS[@]}"; do
  [ "$prev" = --gc-interval ] && a=2s
  agent_argv+=("$a") prev=$a
done
agent_log=$H/var/lib/cni/railcni/log/railcnictl.log
AGENT=
# Start the agent in its box with bounding set CAPS (not in a `check`: its
# command substitution would wait for the agent's output), then wait for it.
agent_start() { # CAPS
  : > /run/agent.err
  box agent "$1" "${agent_argv[@]}" >/dev/null 2>>/run/agent.err &
  AGENT=$!
}
agent_up() {
  local i
  for ((i = 0; i < 100; i++)); do
    curl -sf http://127.0.0.1:9477/healthz >/dev/null && return 0
    sleep 0.1
  done
  echo "the agent did not answer /healthz"; cat /run/agent.err; return 1
}
# Stop it; keep its log in the job's output directory (scripts/vm.sh OUT).
agent_stop() {
  AGENT_RUNS=$((${AGENT_RUNS:-0} + 1))
  scrape > "/run/out/agent-$AGENT_RUNS.metrics" 2>/dev/null
  # The agent is its PID namespace's init, under a subshell and unshare.
  pkill -TERM -f '^/railcnictl agent' 2>/dev/null
  wait "$AGENT" 2>/dev/null; AGENT=
  cp /run/agent.err "/run/out/agent-$AGENT_RUNS.log" 2>/dev/null
}
scrape() { curl -sf http://127.0.0.1:9477/metrics; }
scraped() { scrape | grep -q "$1"; }   # a new scrape each time it is asked
# Wait up to 10 s (WAIT) for CMD to succeed.
eventually() { local i; for ((i = 0; i < ${WAIT:-10} * 10; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done; "$@"; }

# The plugin as Multus runs it on this node: the state and node file in the
# host directories the manifest mounts.
export RAILCNI_STATE_DIR=$H/var/lib/cni/railcni RAILCNI_NODE_CONFIG=$H/etc/cni/railcni/node.json
# The host's machine id (a File hostPath): the installer stamps the node
# file with it, and the plugin compares it.
mkdir -p "$H/etc" && echo 7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c > "$H/etc/machine-id"
export RAILCNI_MACHINE_ID_FILE=$H/etc/machine-id
state=$RAILCNI_STATE_DIR
mkdir -p "$H/configmap/railcni-plan"
{
  echo "rails:"
  for ((r = 1; r <= ${#VM_PFS[@]}; r++)); do
    six=
    ((r == 1)) && six=", cidr6: 'fd00:1::/64'"   # dual stack: its re-attach writes IPv6 sysctls
    echo "- {name: rail$r, cidr: $(rail_cidr "$r"), routes: [172.16.0.0/12], resourceName: example.com/rail$r, mtu: 9000, pf: ${VM_PFS[r - 1]}$six}"
  done
  echo "nodes: {vm-0: 0, vm-1: 1}"
} > /run/plan.yaml
railcnictl plan /run/plan.yaml --emit configmap | sed -n "s/^  plan.json: '\(.*\)'\$/\1/p" | sed "s/''/'/g" \
  > "$H/configmap/railcni-plan/plan.json"

# 1. The installer: no capability.
check "the installer installs with no capability (${INSTALL_CAPS:-none})" box install "$INSTALL_CAPS" "${entry[@]}" "${INSTALL_ARGS[@]}"
check "the installer wrote the binaries into the host's /opt/cni/bin" test -x "$H/opt/cni/bin/railcni" -a -x "$H/opt/cni/bin/railcni-ipam"
same "the installer wrote this node's node file, stamped for this machine" \
  "$(railcnictl plan /run/plan.yaml --emit node-file --node vm-0 | jq -S '. + {machineId: "7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c7c"}')" \
  "$(jq -S . "$RAILCNI_NODE_CONFIG" 2>&1)"

# 2. Pods (a /31 per node per rail: one pod per rail): pod1 on rail 1,
# pod2 on rail 2 (it dies).
ip netns add pod1
ip netns add pod2
# A rail's NAD as `plan --emit nads` writes it, with the deviceID Multus adds.
conf() { # <rail> <pci>
  railcnictl plan /run/plan.yaml --emit nads | yq -r --arg n "rail$1" 'select(.metadata.name == $n) | .spec.config' |
    jq -c --arg pci "$2" '. + {deviceID: $pci}'
}
rail2_before=$(vf_snapshot "$pf2" 0)
check "ADD pod1 rail 1" cni ADD c1 pod1 net1 "$(conf 1 "$(vf_pci "$pf1" 0)")"
check "ADD pod2 rail 2" cni ADD c2 pod2 net1 "$(conf 2 "$(vf_pci "$pf2" 0)")"

# 3. The agent with the manifest's capabilities.
agent_start "$AGENT_CAPS"
check "the agent starts in its box ($AGENT_CAPS)" agent_up
metrics=$(scrape)
check "a scrape reads the pods' interfaces (it entered their namespaces)" \
  grep -q 'railcni_interface_up{network="rail2",ifname="net1",pod="default/c2"' <<<"$metrics"
WAIT=60 check "a scrape has the doctor's checks (it read the host's files)" eventually scraped '^railcni_node_check{check="rail1/pf",result="ok"}'
refute "no pod namespace was unreadable" grep -q '^railcni_pod_namespaces_unreadable{' <<<"$metrics"
refute "the agent kept the node file from the plan ConfigMap without a complaint" grep -q "keeping the node file" /run/agent.err
ip netns del pod2
check "a dead pod: its VF is detached (no record left)" eventually test ! -e "$state/attachments/$(vf_pci "$pf2" 0).json"
same "a dead pod: its VF is home as it was" "$rail2_before" "$(vf_snapshot "$pf2" 0)"
# The link watch sees the VF come home and detaches it, unless gc (every
# 2 s) gets there first: a race on a loaded machine, and either counts it.
counted_detach() {
  scraped 'railcni_reattach_total{network="rail2",result="released"} 1' ||
    scraped 'railcni_gc_actions_total{network="rail2",action="detach",result="done"} 1'
}
check "a dead pod: its detach is counted (released by the link watch, or done by gc)" eventually counted_detach
reload() { echo 0 > "/sys/class/net/$pf1/device/sriov_numvfs"; echo 1 > "/sys/class/net/$pf1/device/sriov_numvfs"; }
reload
check "a driver reload: the agent re-attaches rail 1's VF and it pings" eventually jumbo_ping pod1 net1 1
check "a driver reload: counted reattached" eventually scraped 'railcni_reattach_total{network="rail1",result="reattached"} 1'
same "a driver reload: the dual-stack rail's IPv6 sysctls are set again in the pod (through /host/proc/sys/net)" "0 0 0" \
  "$(ip netns exec pod1 sh -c 'cat /proc/sys/net/ipv6/conf/net1/accept_dad /proc/sys/net/ipv6/conf/net1/accept_ra /proc/sys/net/ipv6/conf/net1/autoconf' | xargs)"
check "a driver reload: the dual-stack rail has its IPv6 address again" eventually ip netns exec pod1 ping -6 -c 1 -W 2 -I net1 fd00:1::1
doctor=$(box agent "$AGENT_CAPS" /railcnictl doctor --json 2>&1)
same "doctor in the box: no check broken" "" "$(jq -r '.checks[] | select(.result == "broken") | "\(.check): \(.found)"' <<<"$doctor" 2>&1)"
refute "doctor in the box: no check was refused a read" grep -qi 'permission denied\|EACCES\|EPERM' <<<"$doctor"
check "probe in the box: pod1's rail answers" box agent "$AGENT_CAPS" /railcnictl probe /run/netns/pod1
agent_stop
same "the agent in its box logged no refusal" "" "$(grep -i 'EPERM\|EACCES\|EROFS' /run/agent.err)"

sorted() { tr ',' '\n' | sort | paste -sd, -; }
same "the box's effective capabilities are the manifest's list" "$(sorted <<<"$AGENT_CAPS")" \
  "$(box agent "$AGENT_CAPS" /usr/bin/grep CapEff /proc/self/status | { read -r _ m; capsh --decode="$m" | sed 's/.*=//; s/cap_//g' | sorted; })"
# 4. Each capability taken away: which action fails, and how it is told.
without() { local c=",$AGENT_CAPS,"; c=${c/,$1,/,}; c=${c#,}; echo "${c%,}"; }
for cap in ${AGENT_CAPS//,/ }; do
  caps=$(without "$cap")
  case $cap in
    net_admin)
      ip netns add pod3
      check "without net_admin: ADD pod3 on rail 2 (outside the box)" cni ADD c3 pod3 net1 "$(conf 2 "$(vf_pci "$pf2" 0)")"
      agent_start "$caps"
      check "without net_admin: the agent starts" agent_up
      ip netns del pod3
      check "without net_admin: the dead pod's VF cannot be given back: the watch counts an error" \
        eventually scraped 'railcni_reattach_total{network="rail2",result="error"}'
      check "without net_admin: and so does gc" \
        eventually scraped 'railcni_gc_actions_total{network="rail2",action="detach",result="error"}'
      check "without net_admin: the log names the errno" eventually grep -q 'rail2.*(EPERM)' /run/agent.err
      agent_stop
      check "without net_admin: gc --apply with it finishes the job" railcnictl gc --apply
      same "without net_admin: then the VF is home as it was" "$rail2_before" "$(vf_snapshot "$pf2" 0)"
      ;;
    sys_admin)
      agent_start "$caps"
      check "without sys_admin: the agent starts" agent_up
      check "without sys_admin: a scrape counts pod1's namespace unreadable (EPERM)" \
        eventually scraped 'railcni_pod_namespaces_unreadable{errno="EPERM"} 1'
      reload
      check "without sys_admin: the re-attach fails: counted as an error" \
        eventually scraped 'railcni_reattach_total{network="rail1",result="error"}'
      check "without sys_admin: the log names the errno" grep -q 'cannot re-attach it.*(EPERM)' /run/agent.err
      agent_stop
      check "without sys_admin: gc --apply with it re-attaches" railcnictl gc --apply
      check "without sys_admin: then rail 1 pings" eventually jumbo_ping pod1 net1 1
      ;;
    net_raw)
      out=$(box agent "$caps" /railcnictl probe /run/netns/pod1 2>&1); rc=$?
      same "without net_raw: probe fails (exit 1)" 1 "$rc"
      check "without net_raw: probe names the errno" grep -q 'EPERM' <<<"$out"
      ;;
    *)
      _vm_report 1 "the manifest adds $cap, which this scenario does not know how to take away" ""
      ;;
  esac
done

check "DEL pod1 rail 1" cni DEL c1 pod1 net1 "$(conf 1 "$(vf_pci "$pf1" 0)")"
same "the node is clean: no record" "" "$(ls "$state/attachments" 2>/dev/null)"
vm_finish
