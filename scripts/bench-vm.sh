#!/usr/bin/env bash
# ADD and DEL of railcni on a real SR-IOV driver (igbvf, in the emulated
# SR-IOV node) above the bare `ip link set … netns … name` move of the same
# VF, interleaved in the guest. Release binaries.
#   scripts/bench-vm.sh [cycles=30]
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "bench-vm.sh: run as root" >&2; exit 1; }
cargo build --release --locked --quiet -p railcni -p railcni-ipam
export RAILCNI_BIN_DIR=$PWD/target/release RAILCNI_BENCH_CYCLES=${1:-30}
scripts/vm.sh run benches/vm/move.sh | grep -v '^#'
