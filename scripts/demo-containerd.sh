#!/usr/bin/env bash
# scripts/demo.sh through containerd's CRI, the way kubelet drives it:
# builds railcni, starts a private containerd (Debian's 1.6; its own
# config, root and sockets under a temp dir) on a fake SR-IOV node, runs a
# pod sandbox on a fake VF, shows `railcnictl status` and `railcnictl inspect`,
# pings the leaf's gateway with 9000-byte don't-fragment packets, stops and
# removes the sandbox, and stops containerd. As root.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "demo-containerd.sh: run as root (network namespaces, containerd)" >&2; exit 1; }
scripts/install-test-deps.sh
# The binaries the CRI tests drive, then the demo test of their own package.
cargo build --locked --quiet -p railcni -p railcni-ipam -p railcnictl --features railcni/fake-hardware
cargo test --locked -p railcni-cri-tests --test cri demo_a_pod_through_containerds_cri -- --include-ignored --nocapture 2>&1 |
  sed -n 's/^demo: //p; /^ /p; /^[A-Z]\{3\} netns=/p; /^PING\|bytes from\|packets transmitted\|^rtt/p; /test result/p'
