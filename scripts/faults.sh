#!/usr/bin/env bash
# Syscall fault injection over ADD and DEL (tests/faults.rs), at every
# position: `scripts/faults.sh --full`. Without --full it samples positions,
# as CI does. Prints positions tried, failures seen, converged, leaked.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "faults.sh: run as root (network namespaces)" >&2; exit 1; }
command -v strace >/dev/null || scripts/install-test-deps.sh
if [ "${1:-}" = "--full" ]; then export RAILCNI_FAULTS=full; fi
cargo build --locked --quiet -p railcnictl
cargo test --locked --features fake-hardware --test faults -- --include-ignored --nocapture 2>&1 | grep -E '^faults:|test result|panicked|leaked|answer' 
