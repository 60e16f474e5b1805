#!/usr/bin/env bash
# Run every test: unit tests, and the integration tests that build fake SR-IOV
# nodes in network namespaces (so: as root). Missing test tools are installed
# from Debian's packages first.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "test.sh: run as root; the integration tests use network namespaces" >&2; exit 1; }
scripts/install-test-deps.sh
# Dependencies checked like code: licenses, crates.io only, duplicate majors.
cargo deny --workspace --locked check licenses bans sources
# The benchmark in its short mode: it must run (its figures mean nothing here).
scripts/bench.sh --quick
# Every tier: the root-only ones are #[ignore = "root: …"] so that a plain
# `cargo test` as an ordinary user reports them ignored, not passed.
cargo test --workspace --locked --no-fail-fast --features railcni/fake-hardware -- --include-ignored
