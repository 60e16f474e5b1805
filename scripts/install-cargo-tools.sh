#!/usr/bin/env bash
# The cargo subcommands the build and the tests use, from crates.io, at
# the versions the repository was checked with (a minute or two, once):
#   cargo-auditable: release binaries that list the crates inside them
#   cargo-deny: licenses, sources and duplicate majors (deny.toml)
set -euo pipefail
installed=$(cargo install --list)
want() { # <crate> <version>
  if ! grep -qx "$1 v$2:" <<<"$installed"; then
    echo "install-cargo-tools: installing $1 $2 from crates.io" >&2
    cargo install --locked --quiet "$1@$2" >&2
  fi
}
want cargo-auditable 0.7.7
want cargo-deny 0.20.2
