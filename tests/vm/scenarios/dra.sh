# nics: 2
# railcni as dra-driver-sriov's standalone mode runs it, on real igb VFs:
# from a "driver container", a mount namespace that has of the host only
# /opt/cni/bin, /var/lib/cni and /var/run/netns (plus /sys and /proc), its
# own tmpfs /etc, /run and /var/log, and no RAILCNI_* variable, only
# NODE_NAME; the NAD's config plus a top-level deviceID; CNI_IFNAME vfnet0,
# vfnet1 (then a claim's ifName). The node file is the installer's copy in
# /var/lib/cni/railcni/, computed from the plan ConfigMap. DEL runs from a
# fresh "container": everything
# comes back. Then the same doctor run on this node without an IOMMU:
# netdev rails attach without one, so it is advice, not a broken link.
leaf_up
vfs_up 1
host=/run/dra-host
mkdir -p "$host/var-lib-cni/railcni" "$host/opt-cni-bin" "$host/plan" /tmp/dra-keep
# The installer as the DaemonSet runs it: the binaries into the host's
# /opt/cni/bin, and this node's node file computed from the plan
# ConfigMap (mounted as a directory, one file per key), also kept in
# /var/lib/cni/railcni/ for the driver's container.
{
  echo "rails:"
  for ((r = 1; r <= ${#VM_PFS[@]}; r++)); do
    echo "- {name: rail$r, cidr: $(rail_cidr "$r"), routes: [172.16.0.0/12], mtu: 9000, pf: ${VM_PFS[r - 1]}}"
  done
  echo "nodes: {vm-0: 0, vm-1: 1, vm-2: 2}"
} > "$host/plan.yaml"
# Its one key, as the volume shows it (a single-quoted YAML scalar).
railcnictl plan "$host/plan.yaml" --emit configmap | sed -n "s/^  plan.json: '\(.*\)'\$/\1/p" | sed "s/''/'/g" \
  > "$host/plan/plan.json"
check "the installer computes the node file from the plan ConfigMap" \
  env NODE_NAME=vm-0 RAILCNI_STATE_DIR="$host/var-lib-cni/railcni" railcnictl install --from "$RAILCNI_BIN_DIR" \
  --bin-dir "$host/opt-cni-bin" --plan-dir "$host/plan" --node-file "$host/etc-node.json" \
  --node-file-copy "$host/var-lib-cni/railcni/node.json"
# The installer stamps it with this machine's id (where the guest has one).
same "the computed node file is --emit node-file's, stamped for this machine" \
  "$(railcnictl plan "$host/plan.yaml" --emit node-file --node vm-0 |
    jq -S --arg m "$(cat /etc/machine-id 2>/dev/null)" 'if $m != "" then . + {machineId: $m} else . end')" \
  "$(jq -S . "$host/var-lib-cni/railcni/node.json" 2>&1)"
state=$host/var-lib-cni/railcni

# dra_cni VERB IFNAME CONFIG: railcni run by the driver's libcni in a fresh container.
dra_cni() {
  unshare -m --propagation private bash -c '
    set -e
    mount --rbind /run/netns /tmp/dra-keep
    mount -t tmpfs dra-opt /opt && mkdir -p /opt/cni/bin && mount --bind '"$host"'/opt-cni-bin /opt/cni/bin
    mount -t tmpfs dra-lib /var/lib && mkdir /var/lib/cni && mount --bind '"$host"'/var-lib-cni /var/lib/cni
    mount -t tmpfs dra-run /run && mkdir /run/netns && mount --move /tmp/dra-keep /run/netns
    mount -t tmpfs dra-etc /etc
    mount -t tmpfs dra-log /var/log
    exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin NODE_NAME=vm-0 \
      CNI_COMMAND="$0" CNI_CONTAINERID=sandbox-0123 CNI_NETNS=/var/run/netns/pod1 CNI_IFNAME="$1" \
      CNI_PATH=/opt/cni/bin \
      CNI_ARGS="IgnoreUnknown=true;K8S_POD_NAMESPACE=training;K8S_POD_NAME=trainer-0;K8S_POD_INFRA_CONTAINER_ID=sandbox-0123;K8S_POD_UID=8d1c5e2a" \
      /opt/cni/bin/railcni' "$1" "$2" <<<"$3"
}
# The objects `plan --emit dra` writes for this fabric: the driver sends the
# NAD's spec.config with a top-level deviceID added, and a claim's VfConfig
# names the interface.
railcnictl plan "$host/plan.yaml" --emit dra > "$host/dra.yaml"
check "--emit dra writes a SriovResourcePolicy selecting rail 1's PF" \
  test "$(yq -r 'select(.kind == "SriovResourcePolicy") | .spec.configs[0].resourceFilters[0].pfNames[0]' "$host/dra.yaml")" = "${VM_PFS[0]}"
dra_conf() { # <rail> <pci>
  yq -r --arg n "rail$1" 'select(.kind == "NetworkAttachmentDefinition" and .metadata.name == $n) | .spec.config' "$host/dra.yaml" |
    jq -c --arg pci "$2" '. + {deviceID: $pci}'
}
claim_ifname() { # <rail>
  yq -r --arg n "rail$1" 'select(.kind == "ResourceClaimTemplate" and .metadata.name == $n) | .spec.spec.devices.config[0].opaque.parameters.ifName' "$host/dra.yaml"
}

for names in "vfnet0 vfnet1" "$(claim_ifname 1) $(claim_ifname 2)"; do
  read -r -a ifn <<<"$names"
  ip netns add pod1
  befores=()
  for ((r = 1; r <= 2; r++)); do
    pf=${VM_PFS[r - 1]}; pci=$(vf_pci "$pf" 0); ifname=${ifn[r - 1]}
    befores+=("$(vf_snapshot "$pf" 0)")
    mac=$(cat "/sys/class/net/$(vf_netdev "$pf" 0)/address")
    out=$(dra_cni ADD "$ifname" "$(dra_conf "$r" "$pci")" 2>>/run/railcni/cni.err); rc=$?
    same "$names: ADD of rail$r as $ifname from the driver's container answers 0" 0 "$rc"
    same "$names: the result's sandbox interface: name, MAC, netns" "$ifname $mac /var/run/netns/pod1" \
      "$(jq -r '.interfaces[] | select(.sandbox) | "\(.name) \(.mac) \(.sandbox)"' <<<"$out" 2>&1)"
    same "$names: rail$r's /31 from the node file in /var/lib/cni" "$(rail_addr "$r")/31" "$(jq -r '.ips[0].address' <<<"$out" 2>&1)"
    check "$names: a jumbo DF ping on $ifname through rail$r" jumbo_ping pod1 "$ifname" "$r"
    prev=$(jq -c --argjson p "$out" '. + {prevResult: $p}' <<<"$(dra_conf "$r" "$pci")")
    check "$names: CHECK of rail$r from another container answers 0" dra_cni CHECK "$ifname" "$prev"
  done
  same "$names: the records are on the host's /var/lib/cni" 2 "$(ls "$state/attachments" | wc -l)"
  check "$names: the log is on the host's /var/lib/cni" grep -q trainer-0 "$state/log/rail1.log"
  for ((r = 2; r >= 1; r--)); do
    pf=${VM_PFS[r - 1]}; pci=$(vf_pci "$pf" 0)
    check "$names: DEL of rail$r from a fresh container answers 0" dra_cni DEL "${ifn[r - 1]}" "$(dra_conf "$r" "$pci")"
    same "$names: rail$r's VF is as before ADD" "${befores[r - 1]}" "$(vf_snapshot "$pf" 0)"
  done
  same "$names: no record is left" "" "$(ls "$state/attachments" 2>/dev/null)"
  same "$names: no lease is left" "0" "$(jq '.leases | length' "$state/ipam/rail1.leases.json" 2>&1)"
  ip netns del pod1
done

# No IOMMU here (no `# iommu: on`), and every rail is a netdev rail.
ip link set "${VM_PFS[0]}" up
doctor=$(env RAILCNI_NODE_CONFIG="$state/node.json" railcnictl doctor --json 2>&1)
same "doctor: no IOMMU on a node without DPDK rails is advice" skipped \
  "$(jq -r '.checks[] | select(.check == "kernel/iommu") | .result' <<<"$doctor" 2>&1)"
refute "doctor: kernel/iommu is not the first broken link" \
  test "$(jq -r '.firstBroken.check // ""' <<<"$doctor")" = kernel/iommu
vm_finish
