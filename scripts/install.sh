#!/usr/bin/env bash
# Install railcni on a node without Kubernetes (or by hand):
#   scripts/install.sh [--bin-dir /opt/cni/bin] [--ctl-dir /usr/local/bin] [--plan PLAN.yaml --node NAME]
# Builds the static binaries, copies the plugins (railcni, railcni-ipam) into
# the CNI bin dir (atomically, never clobbering a running one) and railcnictl
# into --ctl-dir, and, given a plan and this node's name, writes
# /etc/cni/railcni/node.json from it (and its copy /var/lib/cni/railcni/node.json,
# which a CNI caller without the host's /etc reads: dra-driver-sriov).
# Needs root for the default paths.
set -euo pipefail
cd "$(dirname "$0")/.."
bin_dir=/opt/cni/bin ctl_dir=/usr/local/bin plan="" node="${NODE_NAME:-}" node_file=/etc/cni/railcni/node.json
while (($#)); do
  case "$1" in
    --bin-dir) bin_dir=$2; shift 2 ;;
    --ctl-dir) ctl_dir=$2; shift 2 ;;
    --plan) plan=$2; shift 2 ;;
    --node) node=$2; shift 2 ;;
    --node-file) node_file=$2; shift 2 ;;
    *) echo "install.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
scripts/build-static.sh >/dev/null
built=target/x86_64-unknown-linux-gnu/release
args=(install --from "$built" --bin-dir "$bin_dir" --node-file "$node_file")
if [ -n "$plan" ]; then
  [ -n "$node" ] || { echo "install.sh: --plan needs --node NAME (or NODE_NAME)" >&2; exit 2; }
  plan_dir=$(mktemp -d)
  trap 'rm -rf "$plan_dir"' EXIT
  "$built/railcnictl" plan "$plan" --emit node-file --node "$node" >"$plan_dir/$node.json"
  args+=(--plan-dir "$plan_dir" --node "$node")
fi
env -i PATH="$PATH" "$built/railcnictl" "${args[@]}"
mkdir -p "$ctl_dir"
install -m 0755 "$built/railcnictl" "$ctl_dir/.railcnictl.new" && mv -f "$ctl_dir/.railcnictl.new" "$ctl_dir/railcnictl"
echo "installed $ctl_dir/railcnictl"
